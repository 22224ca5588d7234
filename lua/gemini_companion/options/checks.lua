--- The checks that several parts of the option schema share (options.lua says what
--- an entry holds): predicates for `valid`/`item_valid`, and `key()`, an entry for
--- a key option with its check.
local M = {}

---@param n number
function M.positive(n)
  return n > 0
end

---@param n number
function M.fraction(n)
  return n > 0 and n <= 1
end

---@param dir string
function M.absolute(dir)
  return vim.startswith(dir, "/") or vim.startswith(dir, "~/") or dir == "~"
end

---@param lhs string|false
local function key_sequence(lhs)
  return lhs ~= true and lhs ~= ""
end

local no_key = "must be a key sequence, or false for none"

--- A key option: a key sequence, or false for none.
---@param name string
---@param default string
---@param summary string
---@return gemini_companion.OptionSpec
function M.key(name, default, summary)
  return {
    name = name,
    type = "keys",
    default = default,
    valid = key_sequence,
    invalid = no_key,
    summary = summary,
  }
end

return M
