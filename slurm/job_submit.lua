--[[
ioadvise job_submit/lua hook (copy next to slurm.conf, set JobSubmitPlugins=lua).

For batch jobs whose script carries "#IOADVISE key=value" lines, insert a short block after the #SBATCH
block that exports MPI-IO hints (ROMIO hints file + ROMIO_HINTS, MPICH_MPIIO_HINTS, IOADVISE_HINTS).

Safety rules this file keeps:
  * it never runs a program (no os.execute, io.popen) and never evaluates script text;
  * its work per job is bounded: it looks at most at the first MAX_SCAN bytes and MAX_LINES lines of the
    script, ignores #IOADVISE lines longer than MAX_LINE, and uses only plain finds and anchored patterns
    whose cost is linear in the text they look at (slurmctld runs this hook while holding its job lock);
  * keys and values must match a strict character set; anything else is ignored;
  * the hints file is created by mktemp (exclusive, unpredictable name) in the job's own $TMPDIR, never at a
    predictable shared path, and its name is removed at once (the batch shell holds it open on descriptor 9,
    ROMIO_HINTS=/proc/$$/fd/9), so it never outlives the job;
  * any error lets the job through unchanged (pcall around everything).
--]]

local MAX_SCAN = 65536
local MAX_LINES = 400
local MAX_LINE = 1024
local MAX_VALUE = 128
local MARK_BEGIN = "# >>> ioadvise job_submit"
local MARK_END = "# <<< ioadvise job_submit"
local WRAP_MARK = "# >>> ioadvise wrap"

-- >>> IOADVISE KEYS: generated from ioadvisor/job.py (KEYS); the #IOADVISE keys and how each value must look
local KEYS = {
  nodes = "^%d+$", ranks_per_node = "^%d+$", bytes_per_rank = "^[%w%.]+$", total_bytes = "^[%w%.]+$",
  api = "^[%w%-]+$", layout = "^%a+$", op = "^%a+$", pattern = "^%a+$", random = "^%a+$",
  access_size = "^[%w%.]+$", files = "^%d+$", lifetime = "^[%a%-]+$", outdir = "^[%w%._%-/]+$",
  stage_in = "^[%w%._%-/]+$", hint = "^[%w_]+:[%w%._%-]+$", stripe_count = "^%-?%d+$",
  stripe_size = "^[%w%.]+$", tier = "^[%w%._%-]+$", collective = "^%a+$", mpi = "^[%w@%.]+$",
  system = "^[%w%._%-]+$", center = "^[%w%._%-/]+$",
}
-- <<< IOADVISE KEYS

-- the interpreters the inserted block is written for (POSIX shells; ioadvisor/slurm/rewrite.py SHELLS): a
-- Python, csh or other script is left alone, since shell lines in it would break the job
local SHELLS = { sh = true, bash = true, dash = true, ksh = true, zsh = true, ash = true }

-- center policy: hints for MPI-IO jobs, by layout (shared file vs file per process)
local POLICY = {
  shared = { romio_cb_write = "enable", romio_ds_write = "disable" },
  fpp = { romio_cb_write = "disable" },
}

-- calls fn(line) for each line of text (at most MAX_LINES); stops early when fn returns true.
-- Returns the index just after the last line visited, and whether fn stopped the walk.
local function each_line(text, fn)
  local pos, n = 1, 0
  while pos <= #text and n < MAX_LINES do
    n = n + 1
    local e = string.find(text, "\n", pos, true)
    local line = string.sub(text, pos, (e or #text + 1) - 1)
    if fn(line, pos) then return pos, true end
    if not e then return #text + 1, false end
    pos = e + 1
  end
  return pos, false
end

-- The #IOADVISE grammar of ioadvisor/ioadvise_lines.py (tests/data/ioadvise_lines.json holds both to it):
-- "#IOADVISE" then a blank or the end; words separated by blanks (space, tab, CR, VT, FF), made of plain
-- characters and '...' or "..." parts (no escapes); a "#" starting a word begins a comment; KEY=VALUE split at
-- the first "=", "-" in a key read as "_". Each step consumes what it matches, so this is linear in the line.
local BLANK = "[ \t\r\v\f]"

-- the words after the prefix, or nil when a quote is left open
local function words(s)
  local out, pos, n = {}, 1, #s
  while true do
    local _, e = string.find(s, "^" .. BLANK .. "*", pos)
    pos = e + 1
    if pos > n or string.sub(s, pos, pos) == "#" then return out end
    local parts = {}
    while pos <= n do
      local c = string.sub(s, pos, pos)
      if c == '"' or c == "'" then
        local close = string.find(s, c, pos + 1, true)
        if not close then return nil end
        table.insert(parts, string.sub(s, pos + 1, close - 1))
        pos = close + 1
      else
        local _, e2 = string.find(s, "^[^ \t\r\v\f\"']+", pos)
        if not e2 then break end
        table.insert(parts, string.sub(s, pos, e2))
        pos = e2 + 1
      end
    end
    table.insert(out, table.concat(parts))
  end
end

-- nil: not an #IOADVISE line; false: a quote left open (the line is not used); else { items = {{k, v}, ...},
-- bare = {word, ...} }
local function read_line(line)
  if string.sub(line, 1, 9) ~= "#IOADVISE" then return nil end
  local rest = string.sub(line, 10)
  if rest ~= "" and not string.find(rest, "^" .. BLANK) then return nil end
  local ws = words(rest)
  if not ws then return false end
  local items, bare = {}, {}
  for _, w in ipairs(ws) do
    local eq = string.find(w, "=", 1, true)
    if eq then
      local key = string.gsub(string.sub(w, 1, eq - 1), "%-", "_")
      table.insert(items, { key, string.sub(w, eq + 1) })
    else
      table.insert(bare, w)
    end
  end
  return { items = items, bare = bare }
end

-- keeps an item only when its key is known and its value matches the key's strict pattern
local function take(found, key, value)
  local pat = KEYS[key]
  if not pat or #value == 0 or #value > MAX_VALUE or not string.match(value, pat) then return end
  if key == "hint" then
    local colon = string.find(value, ":", 1, true)
    found.hints = found.hints or {}
    table.insert(found.hints, { string.sub(value, 1, colon - 1), string.sub(value, colon + 1) })
  else
    found[key] = value
  end
end

-- Here-documents (ioadvisor/ioadvise_lines.py `heredocs`): a line inside a body is data, never an #IOADVISE
-- line. A command line opens one with <<WORD or <<-WORD (WORD maybe quoted), outside quotes, comments,
-- ((...)) arithmetic and <<< here-strings; its body ends at a line that is WORD (leading tabs removed for <<-).
-- One pass over the line, jumping between the characters that matter: linear.
local B_BSL, B_SQ, B_DQ, B_HASH, B_OPEN, B_CLOSE, B_LT, B_DASH = 92, 39, 34, 35, 40, 41, 60, 45
local WORD_END = {}   -- the bytes that end an unquoted shell word: blank, tab, ; & | ( ) < >
for _, b in ipairs({ 32, 9, 59, 38, 124, 40, 41, 60, 62 }) do WORD_END[b] = true end

-- the shell word at i with its quotes and backslashes removed, and the index after it ("" when none or a
-- quote is left open)
local function shell_word(line, i)
  local parts, n = {}, #line
  while i <= n do
    local _, e = string.find(line, "^[^ \t;&|()<>'\"\\]+", i)  -- a run of plain characters
    if e then
      table.insert(parts, string.sub(line, i, e))
      i = e + 1
    end
    local b = string.byte(line, i)
    if b == B_SQ or b == B_DQ then
      local close = string.find(line, string.char(b), i + 1, true)
      if not close then return "", n + 1 end
      table.insert(parts, string.sub(line, i + 1, close - 1))
      i = close + 1
    elseif b == B_BSL and i < n then
      table.insert(parts, string.sub(line, i + 1, i + 1))
      i = i + 2
    else
      break  -- the end of the line, or a byte that ends the word
    end
  end
  return table.concat(parts), i
end

-- the here-documents a line opens, in order: { {word, strip_tabs}, ... }
local function heredocs(line)
  if not string.find(line, "<<", 1, true) then return {} end  -- most lines: one plain find
  local out, i, n, quote, arith = {}, 1, #line, 0, 0
  while i <= n do
    -- only these characters change anything: jump to the next one (an unanchored one-class find, linear)
    i = string.find(line, "[\\'\"#()<]", i)
    if not i then break end
    local b = string.byte(line, i)
    local skip = false
    if quote == B_SQ or (quote == B_DQ and b ~= B_BSL) then
      if b == quote then quote = 0 end
    elseif b == B_BSL then
      i = i + 1
    elseif arith > 0 then
      if b == B_OPEN then arith = arith + 1 elseif b == B_CLOSE then arith = arith - 1 end
    elseif b == B_SQ or b == B_DQ then
      quote = b
    elseif b == B_HASH and (i == 1 or WORD_END[string.byte(line, i - 1)]) then
      break
    elseif b == B_OPEN and string.byte(line, i + 1) == B_OPEN then
      arith, i = 2, i + 1
    elseif b == B_LT and string.byte(line, i + 1) == B_LT and string.byte(line, i + 2) == B_LT then
      i = i + 2
    elseif b == B_LT and string.byte(line, i + 1) == B_LT then
      local strip = string.byte(line, i + 2) == B_DASH
      i = i + (strip and 3 or 2)
      local _, e = string.find(line, "^[ \t]*", i)
      local word
      word, i = shell_word(line, e + 1)
      if word ~= "" then table.insert(out, { word, strip }) end
      -- each body takes a line at least, and at most MAX_LINES are read: more cannot change what is read
      if #out >= MAX_LINES then break end
      skip = true
    end
    if not skip then i = i + 1 end
  end
  return out
end

local function parse(text)
  local found, pending, k = {}, {}, 1  -- pending[k]: the here-document whose body this line is in
  each_line(text, function(line)
    if k <= #pending then
      local word, strip = pending[k][1], pending[k][2]
      local body = line
      if strip then body = string.match(line, "^\t*(.*)$") end
      if body == word then k = k + 1 end
      return
    end
    local r = #line <= MAX_LINE and read_line(line)
    if r then
      for _, kv in ipairs(r.items) do take(found, kv[1], kv[2]) end
    elseif r == nil or #line > MAX_LINE then
      pending, k = heredocs(line), 1
    end
  end)
  return found
end

local function hints_for(w)
  local list, seen = {}, {}
  for _, kv in ipairs(w.hints or {}) do
    if not seen[kv[1]] then table.insert(list, kv); seen[kv[1]] = true end
  end
  local api = string.gsub(string.upper(w.api or ""), "%-", "")  -- MPI-IO is MPIIO, as ioadvise reads it
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
    -- mktemp creates the file exclusively (O_EXCL, mode 0600) under an unpredictable name; the batch shell
    -- keeps it open on descriptor 9 and removes its name at once, so no file is left behind whatever ends the
    -- job: ROMIO opens it again through /proc/<batch shell>/fd/9 (`command` keeps a failed open from ending
    -- the shell)
    "_ioadv_h=$(mktemp \"${TMPDIR:-/tmp}/ioadvise-romio-hints.XXXXXXXXXX\" 2>/dev/null) &&",
    "  printf '%s\\n' '" .. table.concat(romio, "' '") .. "' > \"$_ioadv_h\" &&",
    "  command exec 9<\"$_ioadv_h\" && export ROMIO_HINTS=\"/proc/$$/fd/9\"",
    "if [ -n \"${_ioadv_h:-}\" ]; then rm -f -- \"$_ioadv_h\"; fi; unset _ioadv_h",
    "export MPICH_MPIIO_HINTS='*:" .. table.concat(mpich, ":") .. "'",
    "export IOADVISE_HINTS='" .. table.concat(plain, ",") .. "'",
    MARK_END,
  }, "\n") .. "\n"
end

-- index just after the #SBATCH block (shebang, comments, blank lines), as sbatch reads it. When that block
-- runs past the scanned text, the start of the last line read (sbatch has parsed the options already, so
-- #SBATCH lines after the inserted block are plain comments to the shell); nil if that is the first line.
local function insert_at(text, whole)
  local first, last = true, 1
  local stop, found = each_line(text, function(line, pos)
    last = pos
    local c = string.find(line, "%S")  -- unanchored single-class find: linear
    if not (first or c == nil or string.sub(line, c, c) == "#") then return true end
    first = false
  end)
  if found then return stop end
  if stop > #text and #text == whole then return stop end
  if last > 1 then return last end
  return nil
end

-- the program name of the #! line ("bash" for "#!/usr/bin/env -S bash -l"), nil without one
local function interpreter(text)
  if string.sub(text, 1, 2) ~= "#!" then return nil end
  local e = string.find(text, "\n", 1, true)
  local prog, via_env = nil, false
  for w in string.gmatch(string.sub(text, 3, (e or #text + 1) - 1), "[^ \t\r\v\f]+") do
    local name, slash = w, string.find(w, "/", 1, true)
    while slash do  -- the part after the last "/", by plain finds (linear)
      name = string.sub(w, slash + 1)
      slash = string.find(w, "/", slash + 1, true)
    end
    if prog == nil then
      prog, via_env = name, name == "env"
      if not via_env then return prog end
    elseif string.sub(w, 1, 1) ~= "-" then
      return name
    end
  end
  return prog
end

local function rewrite(job_desc)
  local script = job_desc.script
  if type(script) ~= "string" then return end
  local text = string.sub(script, 1, MAX_SCAN)
  if not string.find(text, "#IOADVISE", 1, true) then return end
  if not SHELLS[interpreter(text) or ""] then
    slurm.log_info("ioadvise: job left unchanged: not a POSIX shell script")
    return
  end
  if string.find(text, MARK_BEGIN, 1, true) or string.find(script, WRAP_MARK, 1, true) then return end
  local list = hints_for(parse(text))
  if #list == 0 then return end
  local at = insert_at(text, #script)
  if not at then
    slurm.log_info("ioadvise: job left unchanged: first line longer than %d bytes", MAX_SCAN)
    return
  end
  local sep = ""
  if at > #script and string.sub(script, -1) ~= "\n" then sep = "\n" end  -- last line without a newline
  job_desc.script = string.sub(script, 1, at - 1) .. sep .. block(list) .. string.sub(script, at)
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
