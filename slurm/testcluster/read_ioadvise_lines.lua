--[==[
Read lines the way slurm/job_submit.lua reads them, inside plain Lua 5.1, for tests only: the hook's own local
functions (read_line, parse) are found through the debug library, so the hook exposes nothing new to slurmctld.

  lua5.1 read_ioadvise_lines.lua HOOK LINES   LINES: lines separated by "\n"; prints one JSON object a line:
      {"line":false}                    not an #IOADVISE line
      {"line":true,"error":true}        a quote left open (the hook uses nothing from the line)
      {"line":true,"items":[[k,v],..],"bare":[w,..],"taken":{k:v,..,"hints":[[k,v],..]}}
  "taken" is what the hook keeps from that line alone (known keys, values matching the key's pattern).

  lua5.1 read_ioadvise_lines.lua HOOK SCRIPT script   prints the hints the hook takes from the whole script,
      one JSON array of [key, value] (here-document bodies are not read)
--]==]

slurm = { SUCCESS = 0, ERROR = -1 }
function slurm.log_info() end
dofile(arg[1])

-- a local function of the hook by name, searched through the upvalues of the functions it reaches
local function find(fn, name, seen)
  seen = seen or {}
  if seen[fn] then return nil end
  seen[fn] = true
  local i = 1
  while true do
    local n, v = debug.getupvalue(fn, i)
    if n == nil then return nil end
    if n == name and type(v) == "function" then return v end
    if type(v) == "function" then
      local got = find(v, name, seen)
      if got then return got end
    end
    i = i + 1
  end
end
local read_line = assert(find(slurm_job_submit, "read_line"), "read_line not found in the hook")
local parse = assert(find(slurm_job_submit, "parse"), "parse not found in the hook")

local function str(s)
  return '"' .. string.gsub(s, '[%c"\\\127]', function(c)
    if c == '"' or c == "\\" then return "\\" .. c end
    return string.format("\\u%04x", string.byte(c))
  end) .. '"'
end
local function pairs_list(list)
  local out = {}
  for _, kv in ipairs(list) do table.insert(out, "[" .. str(kv[1]) .. "," .. str(kv[2]) .. "]") end
  return "[" .. table.concat(out, ",") .. "]"
end

local f = assert(io.open(arg[2], "rb")); local text = f:read("*a"); f:close()
if arg[3] == "script" then
  print(pairs_list(parse(text).hints or {}))
  os.exit(0)
end
local pos = 1
while pos <= #text + 1 do
  local e = string.find(text, "\n", pos, true) or #text + 1
  local line = string.sub(text, pos, e - 1)
  pos = e + 1
  local r = read_line(line)
  if r == nil then
    print('{"line":false}')
  elseif r == false then
    print('{"line":true,"error":true}')
  else
    local bare = {}
    for _, w in ipairs(r.bare) do table.insert(bare, str(w)) end
    local taken, keys = {}, {}
    local found = parse(line)
    for k in pairs(found) do table.insert(keys, k) end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local v = found[k]
      table.insert(taken, str(k) .. ":" .. (type(v) == "table" and pairs_list(v) or str(v)))
    end
    print('{"line":true,"items":' .. pairs_list(r.items) .. ',"bare":[' .. table.concat(bare, ",") ..
          '],"taken":{' .. table.concat(taken, ",") .. '}}')
  end
end
