--- Writes the views of the option schema (lua/gemini_companion/options.lua and its
--- groups in lua/gemini_companion/options/): the option classes of
--- lua/gemini_companion/types.lua and the defaults block and option list of
--- doc/gemini-companion.txt (section CONFIGURATION). Run it through
--- scripts/gen-options after changing an option; tests/test_options.py fails
--- while either file differs from what this writes.
---
---   nvim -l scripts/gen_options.lua [--check]
---
--- Loaded with `dofile()` it only returns its functions (the test does that).
local M = {}

local WIDTH = 78 -- the help's text width
local COLUMN = 20 -- where the help's descriptions start
local NBSP = "\1" -- a space the help's wrapping keeps

M.TYPES_BEGIN = "-- Option classes: generated from options.lua by scripts/gen-options; edit there."
M.TYPES_END = "-- End of the generated option classes."
M.HELP_BEGIN = '    require("gemini_companion").setup({'

---@param spec gemini_companion.OptionSpec
---@param fn fun(spec: gemini_companion.OptionSpec, path: string)
---@param path? string
local function walk(spec, fn, path)
  path = path or ""
  fn(spec, path)
  for _, field in ipairs(spec.fields or {}) do
    if field.type == "table" then
      walk(field, fn, path == "" and field.name or (path .. "." .. field.name))
    end
  end
end

---@param spec gemini_companion.OptionSpec
---@return string
local function lua_literal(spec)
  if spec.shown then
    return spec.shown
  end
  local value = spec.default
  if type(value) == "table" then
    if #value == 0 then
      return "{}"
    end
    local items = vim.tbl_map(vim.inspect, value)
    return "{ " .. table.concat(items, ", ") .. " }"
  end
  return vim.inspect(value)
end

-- types.lua ----------------------------------------------------------------------

---@param spec gemini_companion.OptionSpec
---@param side "Options"|"Config"
---@return string
local function luacats_type(spec, side)
  local t = spec.type
  if t == "table" then
    return "gemini_companion." .. spec.class .. side
  elseif spec.enum then
    return table.concat(vim.tbl_map(vim.inspect, spec.enum), "|")
  end
  return ({
    keys = "string|false",
    command = "string[]",
    strings = "string[]",
    env = "table<string,string>",
    border = "string|string[]",
  })[t] or t
end

---@param spec gemini_companion.OptionSpec
---@return string
local function type_summary(spec)
  local text = spec.summary
  if spec.type == "table" then
    return text
  elseif spec.default == nil then
    return string.format("%s (unset: %s)", text, spec.unset)
  end
  return string.format("%s (default %s)", text, lua_literal(spec))
end

--- The option classes: for each table of the schema, `<class>Options` (what
--- `setup()` takes: everything optional) and `<class>Config` (what config.get()
--- returns: everything with a default is there).
---@param schema gemini_companion.OptionSpec
---@return string
function M.types(schema)
  local out = { M.TYPES_BEGIN }
  walk(schema, function(spec)
    for _, side in ipairs({ "Options", "Config" }) do
      out[#out + 1] = ""
      out[#out + 1] = "---@class (exact) gemini_companion." .. spec.class .. side
      for _, field in ipairs(spec.fields) do
        local optional = side == "Options" or (field.type ~= "table" and field.default == nil)
        local line = string.format("---@field %s%s %s", field.name, optional and "?" or "", luacats_type(field, side))
        if side == "Options" then
          line = line .. " " .. type_summary(field)
        end
        out[#out + 1] = line
      end
    end
  end)
  out[#out + 1] = ""
  out[#out + 1] = M.TYPES_END
  return table.concat(out, "\n")
end

-- doc/gemini-companion.txt ----------------------------------------------------------

--- Words of `text`, a `code span` with spaces kept as one word.
---@param text string
---@return string[]
local function words(text)
  local out = {}
  for word in text:gmatch("%S+") do
    local last = out[#out]
    if last and select(2, last:gsub("`", "")) % 2 == 1 then
      out[#out] = last .. " " .. word
    else
      out[#out + 1] = word
    end
  end
  return out
end

--- `text` wrapped to WIDTH, every line indented to COLUMN, the first one after
--- `first` (the option's name) when it fits.
---@param first string
---@param text string
---@return string[]
local function wrap(first, text)
  local lines = {}
  local indent = string.rep(" ", COLUMN)
  local line
  if #first < COLUMN then
    line = first .. string.rep(" ", COLUMN - #first)
  else
    lines[1] = first
    line = indent
  end
  local empty = true
  for _, word in ipairs(words(text)) do
    if not empty and #line + 1 + #word > WIDTH then
      lines[#lines + 1] = line
      line, empty = indent, true
    end
    line = line .. (empty and "" or " ") .. word
    empty = false
  end
  lines[#lines + 1] = line
  for i, l in ipairs(lines) do
    lines[i] = l:gsub(NBSP, " ")
  end
  return lines
end

---@param text string
---@return string
local function sentence(text)
  return text:match("[.!?]$") and text or (text .. ".")
end

---@param spec gemini_companion.OptionSpec
---@return string
local function help_type(spec)
  local kind
  if spec.enum then
    local quoted = vim.tbl_map(vim.inspect, spec.enum)
    kind = table.concat(quoted, ", ", 1, #quoted - 1) .. " or " .. quoted[#quoted]
  else
    kind = ({
      keys = "key sequence or false",
      command = "string[]",
      strings = "string[]",
      env = "table<string, string>",
      border = "string or string[]",
    })[spec.type] or spec.type
  end
  if spec.type == "table" then
    return kind
  elseif spec.default == nil then
    return string.format("%s (unset: %s)", kind, spec.unset)
  end
  local shown = lua_literal(spec)
  shown = shown:find(" ") and ("`" .. shown .. "`") or shown
  return string.format("%s (default%s%s)", kind, NBSP, shown)
end

--- The value of table `spec` in the defaults block, at `indent`.
---@param spec gemini_companion.OptionSpec
---@param indent string
---@param out string[]
---@param head string what comes before the value on its first line
---@param tail string what follows it ("," or ")")
local function block_table(spec, indent, out, head, tail)
  local inline, simple = {}, true
  for _, field in ipairs(spec.fields) do
    if field.type == "table" or field.default == nil then
      simple = false
      break
    end
    inline[#inline + 1] = field.name .. " = " .. lua_literal(field)
  end
  if simple then
    local line = indent .. head .. "{ " .. table.concat(inline, ", ") .. " }" .. tail
    if #line <= WIDTH then
      out[#out + 1] = line
      return
    end
  end
  out[#out + 1] = indent .. head .. "{"
  local inner = indent .. "  "
  for _, field in ipairs(spec.fields) do
    local name = field.name .. " = "
    if field.type == "table" then
      block_table(field, inner, out, name, ",")
    elseif field.default == nil then
      out[#out + 1] = inner .. name .. "nil, -- unset: " .. field.unset
    else
      out[#out + 1] = inner .. name .. lua_literal(field) .. ","
    end
  end
  out[#out + 1] = indent .. "}" .. tail
end

--- The defaults block (a `setup()` call with every default) and one tagged entry
--- per option, to the end of the CONFIGURATION section.
---@param schema gemini_companion.OptionSpec
---@return string
function M.help(schema)
  local out = {}
  block_table(schema, "    ", out, 'require("gemini_companion").setup(', ")")
  out[#out + 1] = "<"
  local function entry(spec, path)
    local tag = "*gemini-companion-config." .. path .. "*"
    out[#out + 1] = ""
    out[#out + 1] = string.rep(" ", WIDTH - #tag) .. tag
    vim.list_extend(out, wrap(path, help_type(spec)))
    vim.list_extend(out, wrap("", sentence(spec.help or spec.summary)))
  end
  local function fields(spec, prefix)
    for _, field in ipairs(spec.fields) do
      local path = prefix == "" and field.name or (prefix .. "." .. field.name)
      entry(field, path)
      if field.type == "table" then
        fields(field, path)
      end
    end
  end
  fields(schema, "")
  return table.concat(out, "\n")
end

-- Splicing ----------------------------------------------------------------------------

--- `text` with the generated part of types.lua replaced by `generated`.
---@param text string
---@param generated string
---@return string
function M.splice_types(text, generated)
  local first = assert(text:find(M.TYPES_BEGIN, 1, true), "types.lua: the generated part's first line is missing")
  local last = assert(text:find(M.TYPES_END, first, true), "types.lua: the generated part's last line is missing")
  return text:sub(1, first - 1) .. generated .. text:sub(last + #M.TYPES_END)
end

--- `text` with the generated part of the help (from the defaults block to the end of
--- the CONFIGURATION section) replaced by `generated`.
---@param text string
---@param generated string
---@return string
function M.splice_help(text, generated)
  local first = assert(text:find("\n" .. M.HELP_BEGIN .. "\n", 1, true), "help: the defaults block is missing") + 1
  local rule = assert(text:find("\n\n=====", first, true), "help: no section follows CONFIGURATION")
  return text:sub(1, first - 1) .. generated .. text:sub(rule)
end

---@param path string
---@return string
local function read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  return text
end

--- Regenerate both files (or, with `--check`, exit 1 naming those that differ).
---@param root string the repository
---@param check boolean
---@return string[] the files that differed, relative to `root`
function M.run(root, check)
  -- The schema requires its groups (lua/gemini_companion/options/*.lua): this
  -- repository's, read afresh, even under `nvim --clean` or beside another copy.
  vim.opt.runtimepath:prepend(root)
  for name in pairs(package.loaded) do
    if name == "gemini_companion.options" or vim.startswith(name, "gemini_companion.options.") then
      package.loaded[name] = nil
    end
  end
  local schema = dofile(root .. "/lua/gemini_companion/options.lua")
  local files = {
    { "lua/gemini_companion/types.lua", M.splice_types, M.types(schema) },
    { "doc/gemini-companion.txt", M.splice_help, M.help(schema) },
  }
  local differed = {}
  for _, file in ipairs(files) do
    local name, splice, generated = file[1], file[2], file[3]
    local path = root .. "/" .. name
    local old = read(path)
    local new = splice(old, generated)
    if new ~= old then
      differed[#differed + 1] = name
      if not check then
        local f = assert(io.open(path, "wb"))
        f:write(new)
        f:close()
      end
    end
  end
  return differed
end

if arg and arg[0] then
  local root = vim.fn.fnamemodify(arg[0], ":p:h:h")
  local check = arg[1] == "--check"
  local differed = M.run(root, check)
  for _, path in ipairs(differed) do
    io.write((check and "differs from the schema: " or "rewritten: ") .. path .. "\n")
  end
  if check and #differed > 0 then
    os.exit(1)
  end
end

return M
