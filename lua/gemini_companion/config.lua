--- Defaults, merging and validation of the options given to `setup()`, all read
--- from the option schema (options.lua): no option is named here.
local M = {}

local schema = require("gemini_companion.options")

---@param spec gemini_companion.OptionSpec
---@return any
local function default_of(spec)
  if spec.type ~= "table" then
    return vim.deepcopy(spec.default)
  end
  local tbl = {}
  for _, field in ipairs(spec.fields) do
    tbl[field.name] = default_of(field)
  end
  return tbl
end

---@type gemini_companion.Config
M.defaults = default_of(schema)

---@type gemini_companion.Config
local current = vim.deepcopy(M.defaults)

---@param path string
---@param value any
---@param expected string|string[]
local function check_type(path, value, expected)
  local types = type(expected) == "table" and expected or { expected }
  for _, t in ipairs(types) do
    if type(value) == t then
      return
    end
  end
  error(
    string.format(
      "gemini_companion.setup: option '%s' must be %s, got %s",
      path,
      table.concat(types, " or "),
      vim.inspect(value)
    ),
    0
  )
end

---@param path string
---@param cond boolean
---@param message string
local function check(path, cond, message)
  if not cond then
    error(string.format("gemini_companion.setup: option '%s' %s", path, message), 0)
  end
end

--- The Lua types a value of each schema type may have.
local lua_types = {
  boolean = "boolean",
  number = "number",
  integer = "number",
  string = "string",
  keys = { "string", "boolean" },
  command = "table",
  strings = "table",
  env = "table",
  border = { "string", "table" },
  choice = { "string", "boolean" },
  table = "table",
}

---@param path string
---@param spec gemini_companion.OptionSpec
---@param value any
local function validate(path, spec, value)
  if value == nil and spec.default == nil and spec.type ~= "table" then
    return -- unset: the option is not used
  end
  check_type(path, value, lua_types[spec.type])
  if spec.type == "table" then
    local known = {}
    for _, field in ipairs(spec.fields) do
      known[#known + 1] = field.name
    end
    for key in pairs(value) do
      local where = path == "" and tostring(key) or (path .. "." .. tostring(key))
      check(where, vim.tbl_contains(known, key), "is not a known option (" .. table.concat(known, ", ") .. ")")
    end
    for _, field in ipairs(spec.fields) do
      validate(path == "" and field.name or (path .. "." .. field.name), field, value[field.name])
    end
  elseif spec.type == "command" then
    check(path, #value > 0 and vim.islist(value), "must be a list: the command and its arguments")
  elseif spec.type == "env" then
    for name, v in pairs(value) do
      check_type(path .. "." .. tostring(name), v, "string")
    end
  end
  if spec.type == "command" or spec.type == "strings" then
    for i, item in ipairs(value) do
      local where = path .. "[" .. i .. "]"
      check_type(where, item, "string")
      if spec.item_valid then
        check(where, spec.item_valid(item), spec.item_invalid)
      end
    end
  end
  if spec.enum then
    local allowed = table.concat(vim.tbl_map(tostring, spec.enum), ", ")
    check(path, vim.tbl_contains(spec.enum, value), "must be one of " .. allowed)
  end
  if spec.valid then
    check(path, spec.valid(value), spec.invalid)
  end
end

--- Validate a merged configuration; raises an error naming the first bad field.
---@param config gemini_companion.Config
function M.validate(config)
  validate("", schema, config)
end

--- Lists are values, not tables to merge index by index: a user's list replaces
--- the default one whole.
---@param spec gemini_companion.OptionSpec
---@param merged table
---@param given any
local function replace_lists(spec, merged, given)
  if type(given) ~= "table" then
    return
  end
  for _, field in ipairs(spec.fields) do
    local value = given[field.name]
    if field.type == "table" then
      if type(merged[field.name]) == "table" then
        replace_lists(field, merged[field.name], value)
      end
    elseif (field.type == "command" or field.type == "strings") and value ~= nil then
      merged[field.name] = vim.deepcopy(value)
    end
  end
end

--- Merge `opts` over the defaults, validate, and make the result current.
--- Nothing changes when validation fails.
---@param opts? gemini_companion.Options
---@return gemini_companion.Config
function M.set(opts)
  if opts ~= nil then
    check_type("opts", opts, "table")
  end
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  replace_lists(schema, merged, opts)
  M.validate(merged)
  current = merged
  return current
end

---@return gemini_companion.Config
function M.get()
  return current
end

---@return string
function M.log_file()
  return current.log_file or (vim.fn.stdpath("log") .. "/gemini-companion.log")
end

return M
