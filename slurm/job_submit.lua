--[[
ioadvise job_submit/lua hook (copy next to slurm.conf, set JobSubmitPlugins=lua).

For batch jobs whose script carries "#IOADVISE key=value" lines, insert a short block after the #SBATCH
block that exports MPI-IO hints (ROMIO hints file + ROMIO_HINTS, MPICH_MPIIO_HINTS, IOADVISE_HINTS).

Safety rules this file keeps:
  * it never runs a program (no os.execute, io.popen) and never evaluates script text;
  * it reads at most MAX_SCAN bytes and MAX_LINES lines of the script, ignores lines longer than MAX_LINE;
  * keys and values must match a strict character set; anything else is ignored;
  * any error lets the job through unchanged (pcall around everything).
--]]

local MAX_SCAN = 65536
local MAX_LINES = 400
local MAX_LINE = 1024
local MARK_BEGIN = "# >>> ioadvise job_submit"
local MARK_END = "# <<< ioadvise job_submit"
local WRAP_MARK = "# >>> ioadvise wrap"

-- workload keys users may state, and how each value must look
local KEYS = {
  outdir = "^[%w%._%-/]+$", bytes_per_rank = "^[%w%.]+$", api = "^%a+$", layout = "^%a+$",
  pattern = "^%a+$", files = "^%d+$", lifetime = "^[%a%-]+$", hint = "^[%w_]+:[%w%._%-]+$",
}

-- center policy: hints for MPI-IO jobs, by layout (shared file vs file per process)
local POLICY = {
  shared = { romio_cb_write = "enable", romio_ds_write = "disable" },
  fpp = { romio_cb_write = "disable" },
}

local function parse(script)
  local found, n = {}, 0
  local text = string.sub(script, 1, MAX_SCAN)
  for line in string.gmatch(text, "([^\n]*)\n?") do
    n = n + 1
    if n > MAX_LINES then break end
    if #line <= MAX_LINE and string.sub(line, 1, 9) == "#IOADVISE" then
      for key, value in string.gmatch(string.sub(line, 10), "([%w_]+)=(%S+)") do
        local pat = KEYS[key]
        if pat and #value <= 128 and string.match(value, pat) then
          if key == "hint" then
            found.hints = found.hints or {}
            local k, v = string.match(value, "^([%w_]+):(.+)$")
            table.insert(found.hints, { k, v })
          else
            found[key] = value
          end
        end
      end
    end
  end
  return found
end

local function hints_for(w)
  local list, seen = {}, {}
  for _, kv in ipairs(w.hints or {}) do
    if not seen[kv[1]] then table.insert(list, kv); seen[kv[1]] = true end
  end
  local api = string.upper(w.api or "")
  if api == "MPIIO" or api == "HDF5" then
    local pol = POLICY[string.lower(w.layout or "")] or {}
    local keys = {}
    for k in pairs(pol) do table.insert(keys, k) end
    table.sort(keys)
    for _, k in ipairs(keys) do
      if not seen[k] then table.insert(list, { k, pol[k] }); seen[k] = true end
    end
  end
  return list
end

local function block(list)
  local romio, mpich, plain = {}, {}, {}
  for _, kv in ipairs(list) do
    table.insert(romio, kv[1] .. " " .. kv[2])
    table.insert(mpich, kv[1] .. "=" .. kv[2])
    table.insert(plain, kv[1] .. "=" .. kv[2])
  end
  -- every key and value matched [%w._-]+ above, so single quotes are safe around them
  return table.concat({
    MARK_BEGIN,
    "_ioadv_h=\"${TMPDIR:-/tmp}/ioadvise-romio-hints.${SLURM_JOB_ID:-$$}\"",
    "printf '%s\\n' '" .. table.concat(romio, "' '") .. "' > \"$_ioadv_h\" && export ROMIO_HINTS=\"$_ioadv_h\"",
    "export MPICH_MPIIO_HINTS='*:" .. table.concat(mpich, ":") .. "'",
    "export IOADVISE_HINTS='" .. table.concat(plain, ",") .. "'",
    MARK_END,
  }, "\n") .. "\n"
end

-- index just after the #SBATCH block (shebang, comments, blank lines), as sbatch reads it
local function insert_at(script)
  local pos, first = 1, true
  while pos <= #script do
    local e = string.find(script, "\n", pos, true) or #script
    local line = string.sub(script, pos, e)
    local body = string.match(line, "^%s*(.-)%s*$")
    if not (first or body == "" or string.sub(body, 1, 1) == "#") then break end
    first = false
    pos = e + 1
  end
  return pos
end

local function rewrite(job_desc)
  local script = job_desc.script
  if type(script) ~= "string" or not string.find(string.sub(script, 1, MAX_SCAN), "#IOADVISE", 1, true) then
    return
  end
  if string.find(script, MARK_BEGIN, 1, true) or string.find(script, WRAP_MARK, 1, true) then return end
  local list = hints_for(parse(script))
  if #list == 0 then return end
  local at = insert_at(script)
  job_desc.script = string.sub(script, 1, at - 1) .. block(list) .. string.sub(script, at)
  slurm.log_info("ioadvise: injected %d MPI-IO hints", #list)
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local ok, err = pcall(rewrite, job_desc)
  if not ok then slurm.log_info("ioadvise: job left unchanged: %s", tostring(err)) end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

return slurm.SUCCESS
