--[[
Run slurm/job_submit.lua inside plain Lua 5.1 (the interpreter slurmctld embeds) with a stand-in `slurm`
table holding only what the hook uses (SUCCESS, log_info). For tests and benchmarks, never for a cluster.

  lua5.1 run_job_submit.lua HOOK SCRIPT OUT   rewrite SCRIPT as slurmctld would; write the result to OUT,
                                              the hook's log lines to stderr
  lua5.1 run_job_submit.lua HOOK --bench N    time the hook on hostile scripts; print "case median_ms max_ms"
--]]

slurm = { SUCCESS = 0, ERROR = -1 }
function slurm.log_info(fmt, ...) io.stderr:write(string.format(fmt, ...), "\n") end

local hook, arg2, arg3 = arg[1], arg[2], arg[3]
dofile(hook)

local function run(script)
  local job = { script = script }
  assert(slurm_job_submit(job, {}, 1000) == slurm.SUCCESS)
  return job.script
end

if arg2 ~= "--bench" then
  local f = assert(io.open(arg2, "rb")); local script = f:read("*a"); f:close()
  local out = run(script)
  f = assert(io.open(arg3, "wb")); f:write(out); f:close()
  return
end

-- hostile scripts: 4 MiB each, one line of 1 MiB, shaped to defeat a backtracking trim or key=value scan
local MB, N = 1048576, tonumber(arg3) or 15
local head = "#!/bin/bash\n#SBATCH -N 1\n#IOADVISE api=MPIIO layout=shared hint=cb_buffer_size:8388608\n"
local function pad(s) return s .. string.rep("echo filler line\n", math.floor((4 * MB - #s) / 17)) end
local cases = {
  { "comment_line_of_spaces", pad(head .. "#" .. string.rep(" ", MB) .. "x\n") },
  { "blank_line_of_spaces_and_tabs", pad(head .. string.rep(" \t", MB / 2) .. "\n") },
  { "ioadvise_line_without_equals", pad(head .. "#IOADVISE " .. string.rep("a", MB) .. "\n") },
  { "ioadvise_line_of_tokens", pad(head .. "#IOADVISE " .. string.rep("api=", MB / 4) .. "\n") },
  { "body_line_of_spaces", pad(head .. "srun true\n" .. string.rep(" ", MB) .. "x\n") },
  { "short_comment_lines", pad(head .. string.rep("#\n", MB / 2)) },
  { "no_newline_at_all", "#!/bin/bash #IOADVISE api=MPIIO " .. string.rep(" ", 4 * MB) },
}
for _, c in ipairs(cases) do
  local name, script = c[1], c[2]
  local times = {}
  for i = 1, N do
    local t0 = os.clock()
    run(script)
    times[i] = (os.clock() - t0) * 1000
  end
  table.sort(times)
  print(string.format("%s %d %.3f %.3f", name, #script, times[math.floor((N + 1) / 2)], times[N]))
end
