--[[
ioadvise cli_filter/lua hook (copy next to slurm.conf, set CliFilterPlugins=lua).

The client-side filter cannot see the job script, so it only marks submissions that asked for the BeeOND
per-job scratch tier: it sets IOADVISE_TIER=beeond in the job's environment options so the job (and
`ioadvise`'s preamble) can tell the tier was requested. It never runs a program and never rejects a job.
--]]

function slurm_cli_setup_defaults(options, early_pass)
  return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, pack_offset)
  local ok = pcall(function()
    local c = options["constraint"]
    if type(c) == "string" and #c < 4096 and string.find(c, "BEEOND", 1, true) then
      local exp = options["export"]
      if exp == nil or exp == "" or exp == "ALL" then
        options["export"] = "ALL,IOADVISE_TIER=beeond"
      end
    end
  end)
  return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, job_id, step_id)
  return slurm.SUCCESS
end
