--- Language-server requests for the tools: asking every attached server that offers
--- a method, with a clear error after `tools.lsp_timeout_ms` (locations.lua turns
--- the answers into what the agent reads).
local M = {}

local api, uv = vim.api, vim.uv or vim.loop
local paths = require("gemini_companion.tools.paths")
local text = require("gemini_companion.tools.text")

--- Most locations and symbols an answer holds.
M.max_locations = 200

local nvim_011 = vim.fn.has("nvim-0.11") == 1

-- Client methods take `self` from Neovim 0.11 on; 0.10 has plain functions.
---@param client vim.lsp.Client
local function client_request(client, ...)
  if nvim_011 then
    return client:request(...)
  end
  return client.request(...) ---@diagnostic disable-line: missing-parameter
end

---@param client vim.lsp.Client
---@param id integer
local function client_cancel(client, id)
  if nvim_011 then
    return client:cancel_request(id)
  end
  return client.cancel_request(id) ---@diagnostic disable-line: param-type-mismatch
end

--- The column of byte index `byte` of `line` in the client's encoding.
---@param line string
---@param encoding string
---@param byte integer
---@return integer
local function lsp_column(line, encoding, byte)
  if nvim_011 then
    return vim.str_utfindex(line, encoding, byte, false)
  end
  local utf32, utf16 = vim.str_utfindex(line, byte) ---@diagnostic disable-line: param-type-mismatch
  return encoding == "utf-8" and byte or encoding == "utf-32" and utf32 or utf16
end

--- The byte index of column `index` (in the client's encoding) of `line`.
---@param line string
---@param encoding string
---@param index integer
---@return integer
function M.lsp_byte(line, encoding, index)
  if nvim_011 then
    return vim.str_byteindex(line, encoding, index, false)
  end
  if encoding == "utf-8" then
    return math.min(index, #line)
  end
  local ok, byte = pcall(vim.str_byteindex, line, index, encoding == "utf-16") ---@diagnostic disable-line: param-type-mismatch
  return ok and byte or #line
end

---@param buf integer
---@return string[] names of the language servers attached
function M.servers(buf)
  local names = {}
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = buf })) do
    names[#names + 1] = client.name
  end
  return names
end

---@param buf integer
---@param method string
---@param what string what the user would call the request
---@return vim.lsp.Client[]
function M.clients_for(buf, method, what)
  local clients = vim.lsp.get_clients({ bufnr = buf, method = method })
  if #clients == 0 then
    local attached = M.servers(buf)
    if #attached == 0 then
      paths.refuse(
        string.format(
          "no language server is attached to %s (filetype %q): %s is not available for it",
          paths.buffer_path(buf),
          vim.bo[buf].filetype,
          what
        )
      )
    end
    paths.refuse(
      string.format(
        "the language servers of %s (%s) do not offer %s",
        paths.buffer_path(buf),
        table.concat(attached, ", "),
        what
      )
    )
  end
  return clients
end

---@param value any
---@return string
function M.message_of(value)
  return type(value) == "table" and value.tool_error or tostring(value)
end

--- Send `method` to every client of `buf` that offers it; `convert(results, finish)`
--- once all answered (it calls `finish(ok, value)`, at once or later), or a timeout
--- error after `lsp_timeout_ms`.
---@param buf integer
---@param clients vim.lsp.Client[]
---@param method string
---@param make_params fun(client: vim.lsp.Client): table
---@param reply fun(ok: boolean, value: any)
---@param convert fun(results: { client: vim.lsp.Client, result: any }[], finish: fun(ok: boolean, value: any))
function M.request_all(buf, clients, method, make_params, reply, convert)
  local pending, results, errors, finished = #clients, {}, {}, false
  local requests = {}
  local timer = assert(uv.new_timer())
  local function finish()
    if finished then
      return
    end
    finished = true
    timer:stop()
    timer:close()
    if #results == 0 and #errors > 0 then
      reply(false, "the language server answered with an error: " .. table.concat(errors, "; "))
      return
    end
    require("gemini_companion.tools").in_steps(convert, function(ok, err)
      if not ok then
        reply(false, M.message_of(err))
      end
    end, results, reply)
  end
  for _, client in ipairs(clients) do
    local ok, id = client_request(client, method, make_params(client), function(err, result)
      if err then
        errors[#errors + 1] = string.format("%s: %s", client.name, err.message or vim.inspect(err))
      elseif result ~= nil then
        results[#results + 1] = { client = client, result = result }
      end
      pending = pending - 1
      if pending == 0 then
        finish()
      end
    end, buf)
    if ok then
      requests[#requests + 1] = { client = client, id = id }
    else
      pending = pending - 1
    end
  end
  if pending == 0 then
    vim.schedule(finish)
    return
  end
  local timeout = require("gemini_companion.config").get().tools.lsp_timeout_ms
  timer:start(
    timeout,
    0,
    vim.schedule_wrap(function()
      if finished then
        return
      end
      for _, r in ipairs(requests) do
        pcall(client_cancel, r.client, r.id)
      end
      finished = true
      timer:close()
      local names = vim.tbl_map(function(c)
        return c.name
      end, clients)
      reply(
        false,
        string.format(
          "the language server (%s) did not answer within %d ms; it may still be starting: try again shortly",
          table.concat(names, ", "),
          timeout
        )
      )
    end)
  )
end

--- The position `line`/`character` (1-based) of `buf` as the client counts it.
---@param positions gemini_companion.LinePositions
---@param line integer
---@param character integer
---@param client vim.lsp.Client
---@return lsp.TextDocumentPositionParams
function M.position_params(positions, line, character, client)
  local buf, row = positions.buf, line - 1
  local byte = positions:byte(row, character)
  -- The column counts what comes before it: only that much of the line is read.
  local before = text.slice(buf, row, 0, byte)
  return {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = row, character = lsp_column(before, client.offset_encoding, #before) },
  }
end

--- The arguments of a request at a position: filePath, line, character and `extra`.
---@param extra? table<string, table> more properties
---@return table
function M.position_schema(extra)
  local properties = {
    filePath = { type = "string", description = "Path of the file: absolute, or relative to the workspace root" },
    line = { type = "integer", minimum = 1, maximum = 10000000, description = "1-based line number" },
    character = {
      type = "integer",
      minimum = 1,
      maximum = 10000000,
      description = "1-based character (code point) in the line",
    },
  }
  for name, property in pairs(extra or {}) do
    properties[name] = property
  end
  return {
    type = "object",
    properties = properties,
    required = { "filePath", "line", "character" },
    additionalProperties = false,
  }
end

--- A request at a position of an open file, answered with locations.
---@param args { filePath: string, line: integer, character: integer, includeDeclaration?: boolean }
---@param call gemini_companion.ToolCall
---@param method string
---@param what string
function M.position_request(args, call, method, what)
  local buf = paths.open_buffer(args.filePath, call)
  local count = api.nvim_buf_line_count(buf)
  if args.line > count then
    paths.refuse(string.format("line %d is past the end: %s has %d lines", args.line, args.filePath, count))
  end
  local clients = M.clients_for(buf, method, what)
  local positions = text.positions(buf)
  M.request_all(
    buf,
    clients,
    method,
    function(client)
      local params = M.position_params(positions, args.line, args.character, client)
      if method == "textDocument/references" then
        params.context = { includeDeclaration = args.includeDeclaration or false }
      end
      return params
    end,
    call.reply,
    function(results, finish)
      require("gemini_companion.tools.locations").convert(results, call, function(found, total)
        local result = { locations = found, total = total }
        if total > #found then
          result.truncated = true
          result.note = string.format(
            "showing the first %d of %d %s (by file, then position); ask about a narrower symbol to see others",
            #found,
            total,
            what
          )
        end
        if total == 0 then
          result.note =
            string.format("the language server found no %s at line %d, character %d", what, args.line, args.character)
        end
        finish(true, result)
      end, function(message)
        finish(false, message)
      end)
    end
  )
end

return M
