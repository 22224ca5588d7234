--- Neovim's knowledge as MCP tools: the Lua half of the tools served on `/tools`
--- (rplugin/python3/gemini_companion/tools/neovim.py validates the arguments and
--- formats nothing; this module reads the editor and answers).
---
--- Each call arrives as a one-way message (`host.lua` `tool_run`) and is answered
--- by another (`host.tool_result`), so Neovim never waits for Python and Python
--- never blocks Neovim. Every answer is computed in one short step on the main
--- loop, bounded by the caps below; language-server requests are asynchronous and
--- end with a clear error after `lsp_timeout_ms`.
---
--- Paths are absolute (Python resolves relative ones). A path outside the
--- workspace is refused unless a buffer for it is open. Nothing here changes the
--- editor: no buffer is loaded, no option set.
local M = {}

local api, fn, uv = vim.api, vim.fn, vim.uv or vim.loop

--- Most lines readBuffer returns at once, and most characters.
M.max_lines = 2000
M.max_chars = 200000
--- Most locations and symbols a language-server answer returns.
M.max_locations = 200

---@return integer
local function lsp_timeout_ms()
  return require("gemini_companion.config").get().tools.lsp_timeout_ms
end

--- A refusal: the message is what the agent (a model) reads.
---@param message string
local function refuse(message)
  error({ tool_error = message }, 0)
end

---@param path string
---@return string
local function real(path)
  return uv.fs_realpath(path) or vim.fs.normalize(path)
end

---@param buf integer
---@return string? path of a buffer holding a file
local function buffer_path(buf)
  return require("gemini_companion.context").file_path(buf)
end

--- The loaded buffer holding `path`, if any.
---@param path string
---@return integer?
local function find_buffer(path)
  local wanted = real(path)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    local name = api.nvim_buf_is_loaded(buf) and buffer_path(buf)
    if name and (name == path or real(name) == wanted) then
      return buf
    end
  end
end

--- The workspace folders, resolved, for one call (a tool may ask per buffer).
---@return string[]
local function workspace_roots()
  local roots = {}
  for _, dir in ipairs(require("gemini_companion").workspace_dirs()) do
    roots[#roots + 1] = (real(dir):gsub("/$", ""))
  end
  return roots
end

---@param path string
---@param roots? string[] from workspace_roots(), when asking for many paths
---@return boolean
local function in_workspace(path, roots)
  local target = real(path)
  for _, root in ipairs(roots or workspace_roots()) do
    if target == root or vim.startswith(target, root .. "/") then
      return true
    end
  end
  return false
end

--- The open buffer for `path`, or a refusal saying why there is none.
---@param path string
---@return integer buf
local function open_buffer(path)
  local buf = find_buffer(path)
  if buf then
    return buf
  end
  if not in_workspace(path) then
    refuse(path .. " is outside the workspace and not open in Neovim: it cannot be read")
  end
  if not uv.fs_stat(path) then
    refuse("no such file: " .. path .. " (listOpenBuffers shows the files open in Neovim)")
  end
  refuse(path .. " is not open in Neovim: read it from disk instead, or ask the user to open it")
end

--- Whether `path` may be named at all: inside the workspace, or open.
---@param path string
local function check_allowed(path)
  if not find_buffer(path) and not in_workspace(path) then
    refuse(path .. " is outside the workspace and not open in Neovim")
  end
end

---@param buf integer
---@return string[] names of the language servers attached
local function servers(buf)
  local names = {}
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = buf })) do
    names[#names + 1] = client.name
  end
  return names
end

---@param line string
---@return boolean
local function is_text(line)
  -- NUL bytes (kept as "\n" in buffer lines) or bytes that are not UTF-8.
  return not line:find("[%z\n]") and (not line:find("[\128-\255]") or fn.iconv(line, "utf-8", "utf-8") == line)
end

-- Characters are counted as the CLI's context counts them: 1-based code points.

---@param line string
---@param byte integer 0-based byte index
---@return integer 1-based character
local function char_of(line, byte)
  if byte <= 0 then
    return 1
  end
  return fn.charidx(line, math.min(byte, #line)) + 1 + math.max(0, byte - #line)
end

---@param line string
---@param char integer 1-based character
---@return integer 0-based byte index
local function byte_of(line, char)
  local index = fn.byteidx(line, char - 1)
  return index < 0 and #line or index
end

local severities = { "error", "warning", "info", "hint" }
local severity_rank = { error = 1, warning = 2, info = 3, hint = 4 }

-- Tools -----------------------------------------------------------------------------

local tools = {}

---@param args { filePath?: string, severity?: string, limit: integer }
function tools.getDiagnostics(args)
  local bufs
  if args.filePath then
    check_allowed(args.filePath)
    local buf = find_buffer(args.filePath)
    if not buf then
      return {
        filePath = args.filePath,
        diagnostics = {},
        total = 0,
        note = "this file is not open in Neovim; Neovim has diagnostics only for open buffers",
      }
    end
    bufs = { buf }
  else
    bufs = {}
    for _, buf in ipairs(api.nvim_list_bufs()) do
      if api.nvim_buf_is_loaded(buf) and buffer_path(buf) then
        bufs[#bufs + 1] = buf
      end
    end
  end
  local min_rank = severity_rank[args.severity or "hint"]
  local found = {}
  local counts = { error = 0, warning = 0, info = 0, hint = 0 }
  for _, buf in ipairs(bufs) do
    local path = buffer_path(buf)
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      local severity = severities[d.severity] or "hint"
      if severity_rank[severity] <= min_rank then
        counts[severity] = counts[severity] + 1
        found[#found + 1] = { buf = buf, path = path, d = d, severity = severity }
      end
    end
  end
  table.sort(found, function(a, b)
    if a.d.severity ~= b.d.severity then
      return a.d.severity < b.d.severity
    end
    if a.path ~= b.path then
      return a.path < b.path
    end
    if a.d.lnum ~= b.d.lnum then
      return a.d.lnum < b.d.lnum
    end
    return a.d.col < b.d.col
  end)
  local out = {}
  for i = 1, math.min(#found, args.limit) do
    local f = found[i]
    local d = f.d
    local line = api.nvim_buf_get_lines(f.buf, d.lnum, d.lnum + 1, false)[1] or ""
    local end_lnum = d.end_lnum or d.lnum
    local end_line = end_lnum == d.lnum and line
      or (api.nvim_buf_get_lines(f.buf, end_lnum, end_lnum + 1, false)[1] or "")
    out[i] = {
      filePath = f.path,
      severity = f.severity,
      line = d.lnum + 1,
      character = char_of(line, d.col),
      endLine = end_lnum + 1,
      endCharacter = char_of(end_line, d.end_col or d.col),
      message = d.message,
      source = d.source,
      code = d.code ~= nil and tostring(d.code) or nil,
    }
  end
  local result = {
    diagnostics = out,
    total = #found,
    counts = counts,
    filePath = args.filePath,
  }
  if #found > #out then
    result.truncated = true
    result.note = string.format(
      "showing the %d most severe of %d; ask for one filePath or a higher severity to see the rest",
      #out,
      #found
    )
  end
  return result
end

---@param args { filePath: string, startLine?: integer, endLine?: integer }
function tools.readBuffer(args)
  local buf = open_buffer(args.filePath)
  if vim.bo[buf].binary then
    refuse(args.filePath .. " is a binary buffer ('binary' is set): it has no text to read")
  end
  local count = api.nvim_buf_line_count(buf)
  local first = args.startLine or 1
  if first > count then
    refuse(string.format("startLine %d is past the end: the buffer has %d lines", first, count))
  end
  local last
  if args.endLine then
    last = math.min(args.endLine, count)
    if last - first + 1 > M.max_lines then
      refuse(
        string.format(
          "lines %d-%d are too many at once: ask for at most %d lines (the buffer has %d)",
          first,
          args.endLine,
          M.max_lines,
          count
        )
      )
    end
  else
    last = math.min(count, first + M.max_lines - 1)
  end
  local lines = api.nvim_buf_get_lines(buf, first - 1, last, false)
  local chars = 0
  for i, line in ipairs(lines) do
    if not is_text(line) then
      refuse(string.format("line %d of %s is not text (NUL or non-UTF-8 bytes)", first + i - 1, args.filePath))
    end
    chars = chars + #line + 1
    if chars > M.max_chars then
      last = first + i - 2
      lines = vim.list_slice(lines, 1, i - 1)
      break
    end
  end
  local result = {
    filePath = buffer_path(buf),
    startLine = first,
    endLine = last,
    lineCount = count,
    modified = vim.bo[buf].modified,
    text = table.concat(lines, "\n"),
  }
  if last < count and not args.endLine or (args.endLine and last < math.min(args.endLine, count)) then
    result.note = string.format("lines %d-%d of %d; ask for startLine=%d to read on", first, last, count, last + 1)
  end
  return result
end

function tools.listOpenBuffers()
  local current = api.nvim_get_current_buf()
  local roots = workspace_roots()
  -- Language servers by buffer, from one pass over the clients.
  local attached = {}
  for _, client in ipairs(vim.lsp.get_clients()) do
    for buf in pairs(client.attached_buffers or {}) do
      attached[buf] = attached[buf] or {}
      table.insert(attached[buf], client.name)
    end
  end
  local out = {}
  for _, info in ipairs(fn.getbufinfo({ buflisted = 1 })) do
    local path = info.loaded == 1 and buffer_path(info.bufnr)
    if path then
      out[#out + 1] = {
        filePath = path,
        modified = info.changed == 1,
        filetype = vim.bo[info.bufnr].filetype,
        lineCount = info.linecount,
        languageServers = attached[info.bufnr] or {},
        current = info.bufnr == current or nil,
        inWorkspace = in_workspace(path, roots),
        lastUsed = info.lastused,
        bufnr = info.bufnr,
      }
    end
  end
  -- 'lastused' counts seconds: the current and the alternate buffer break ties.
  local alternate = fn.bufnr("#")
  local function rank(entry)
    return entry.bufnr == current and 2 or entry.bufnr == alternate and 1 or 0
  end
  table.sort(out, function(a, b)
    if a.lastUsed ~= b.lastUsed then
      return a.lastUsed > b.lastUsed
    end
    if rank(a) ~= rank(b) then
      return rank(a) > rank(b)
    end
    return a.bufnr > b.bufnr
  end)
  for _, entry in ipairs(out) do
    entry.lastUsed, entry.bufnr = nil, nil
  end
  return { buffers = out }
end

local region_types = { v = "v", V = "V", ["\22"] = "\22", s = "v", S = "V", ["\19"] = "\22" }
local mode_names = { v = "characterwise", V = "linewise", ["\22"] = "blockwise" }

---@param buf integer
---@param from integer[] {line, byte col 0-based}
---@param to integer[]
---@param kind string
---@param current boolean
local function selection(buf, from, to, kind, current)
  if from[1] > to[1] or (from[1] == to[1] and from[2] > to[2]) then
    from, to = to, from
  end
  -- A linewise mark's column is v:maxcol: keep it on the line.
  local function clamp(pos)
    local text = api.nvim_buf_get_lines(buf, pos[1] - 1, pos[1], false)[1] or ""
    return { pos[1], math.max(0, math.min(pos[2], #text - 1)) }
  end
  from, to = clamp(from), clamp(to)
  local ok, lines = pcall(fn.getregion, { buf, from[1], from[2] + 1, 0 }, { buf, to[1], to[2] + 1, 0 }, {
    type = kind,
  })
  if not ok then
    refuse("the selection could not be read: " .. tostring(lines))
  end
  local text = table.concat(lines, "\n")
  local truncated = nil
  if #text > M.max_chars then
    text = text:sub(1, M.max_chars)
    truncated = true
  end
  local first_line = api.nvim_buf_get_lines(buf, from[1] - 1, from[1], false)[1] or ""
  local last_line = api.nvim_buf_get_lines(buf, to[1] - 1, to[1], false)[1] or ""
  local last_char = kind == "V" and fn.strchars(last_line) or char_of(last_line, to[2])
  return {
    filePath = buffer_path(buf),
    startLine = from[1],
    startCharacter = kind == "V" and 1 or char_of(first_line, from[2]),
    endLine = to[1],
    endCharacter = math.max(1, last_char),
    mode = mode_names[kind],
    current = current,
    text = text,
    truncated = truncated,
  }
end

function tools.getSelection()
  local mode = api.nvim_get_mode().mode
  local kind = region_types[mode:sub(1, 1)]
  local buf = api.nvim_get_current_buf()
  if kind and buffer_path(buf) then
    local v, cur = fn.getpos("v"), fn.getpos(".")
    return selection(buf, { v[2], v[3] - 1 }, { cur[2], cur[3] - 1 }, kind, true)
  end
  -- The last Visual selection: its marks in the file buffer used most recently.
  local best, best_used
  for _, info in ipairs(fn.getbufinfo({ bufloaded = 1 })) do
    if buffer_path(info.bufnr) and api.nvim_buf_get_mark(info.bufnr, "<")[1] > 0 then
      if not best_used or info.lastused > best_used then
        best, best_used = info.bufnr, info.lastused
      end
    end
  end
  if not best then
    return { note = "nothing is selected in Neovim, and no file has a previous Visual selection" }
  end
  local from, to = api.nvim_buf_get_mark(best, "<"), api.nvim_buf_get_mark(best, ">")
  -- visualmode() is the mode last used in the current buffer: ask it in `best`.
  local last_kind = region_types[api.nvim_buf_call(best, fn.visualmode)] or "v"
  local result = selection(best, from, to, last_kind, false)
  return result
end

-- Language-server tools ---------------------------------------------------------------

local symbol_kinds = vim.lsp.protocol.SymbolKind
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

--- The column of byte index `byte` of `text` in the client's encoding.
---@param text string
---@param encoding string
---@param byte integer
---@return integer
local function lsp_column(text, encoding, byte)
  if nvim_011 then
    return vim.str_utfindex(text, encoding, byte, false)
  end
  local utf32, utf16 = vim.str_utfindex(text, byte) ---@diagnostic disable-line: param-type-mismatch
  return encoding == "utf-8" and byte or encoding == "utf-32" and utf32 or utf16
end

---@param buf integer
---@param method string
---@param what string what the user would call the request
---@return vim.lsp.Client[]
local function clients_for(buf, method, what)
  local clients = vim.lsp.get_clients({ bufnr = buf, method = method })
  if #clients == 0 then
    local attached = servers(buf)
    if #attached == 0 then
      refuse(
        string.format(
          "no language server is attached to %s (filetype %q): %s is not available for it",
          buffer_path(buf),
          vim.bo[buf].filetype,
          what
        )
      )
    end
    refuse(
      string.format(
        "the language servers of %s (%s) do not offer %s",
        buffer_path(buf),
        table.concat(attached, ", "),
        what
      )
    )
  end
  return clients
end

--- Send `method` to every client of `buf` that offers it; `done(results, errors)`
--- once all answered, or a timeout error after `lsp_timeout_ms`.
---@param buf integer
---@param clients vim.lsp.Client[]
---@param method string
---@param make_params fun(client: vim.lsp.Client): table
---@param reply fun(ok: boolean, value: any)
---@param convert fun(results: { client: vim.lsp.Client, result: any }[]): table
local function request_all(buf, clients, method, make_params, reply, convert)
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
    local ok, value = pcall(convert, results)
    if ok then
      reply(true, value)
    else
      reply(false, type(value) == "table" and value.tool_error or tostring(value))
    end
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
  local timeout = lsp_timeout_ms()
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

---@param buf integer
---@param line integer 1-based
---@param character integer 1-based
---@param client vim.lsp.Client
---@return lsp.TextDocumentPositionParams
local function position_params(buf, line, character, client)
  local text = api.nvim_buf_get_lines(buf, line - 1, line, false)[1] or ""
  local byte = byte_of(text, character)
  return {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = line - 1, character = lsp_column(text, client.offset_encoding, byte) },
  }
end

--- LSP locations as `{filePath, line, character, endLine, endCharacter, text}`.
---@param results { client: vim.lsp.Client, result: any }[]
---@return table[] locations
---@return integer total
local function locations(results)
  local out, seen, total = {}, {}, 0
  local roots = workspace_roots()
  ---@type table<string, boolean>?
  local open_paths
  ---@param path string
  local function is_open(path)
    if not open_paths then
      open_paths = {}
      for _, buf in ipairs(api.nvim_list_bufs()) do
        local name = api.nvim_buf_is_loaded(buf) and buffer_path(buf)
        if name then
          open_paths[real(name)] = true
        end
      end
    end
    return open_paths[real(path)] == true
  end
  for _, r in ipairs(results) do
    local list = r.result
    if list.uri or list.targetUri then
      list = { list }
    end
    local items = vim.lsp.util.locations_to_items(list, r.client.offset_encoding)
    for _, item in ipairs(items) do
      local key = string.format("%s:%d:%d", item.filename, item.lnum, item.col)
      if not seen[key] then
        seen[key] = true
        total = total + 1
        if #out < M.max_locations then
          local text = item.text or ""
          -- The line's text is read from the file: not for a file outside the
          -- workspace that is not open (a library's source says where, not what).
          local readable = in_workspace(item.filename, roots) or is_open(item.filename)
          out[#out + 1] = {
            filePath = item.filename,
            line = item.lnum,
            character = char_of(text, item.col - 1),
            endLine = item.end_lnum,
            endCharacter = item.end_col and item.end_lnum == item.lnum and char_of(text, item.end_col - 1) or nil,
            text = readable and vim.trim(text) or nil,
          }
        end
      end
    end
  end
  return out, total
end

---@param args { filePath: string, line: integer, character: integer, includeDeclaration?: boolean }
---@param reply fun(ok: boolean, value: any)
---@param method string
---@param what string
local function position_request(args, reply, method, what)
  local buf = open_buffer(args.filePath)
  local count = api.nvim_buf_line_count(buf)
  if args.line > count then
    refuse(string.format("line %d is past the end: %s has %d lines", args.line, args.filePath, count))
  end
  local clients = clients_for(buf, method, what)
  request_all(
    buf,
    clients,
    method,
    function(client)
      local params = position_params(buf, args.line, args.character, client)
      if method == "textDocument/references" then
        params.context = { includeDeclaration = args.includeDeclaration or false }
      end
      return params
    end,
    reply,
    function(results)
      local found, total = locations(results)
      local result = { locations = found, total = total }
      if total > #found then
        result.truncated = true
      end
      if total == 0 then
        result.note =
          string.format("the language server found no %s at line %d, character %d", what, args.line, args.character)
      end
      return result
    end
  )
end

function tools.findDefinition(args, reply)
  position_request(args, reply, "textDocument/definition", "definition")
end

function tools.findReferences(args, reply)
  position_request(args, reply, "textDocument/references", "references")
end

---@param args { filePath: string }
---@param reply fun(ok: boolean, value: any)
function tools.documentSymbols(args, reply)
  local buf = open_buffer(args.filePath)
  local clients = clients_for(buf, "textDocument/documentSymbol", "document symbols")
  request_all(
    buf,
    clients,
    "textDocument/documentSymbol",
    function()
      return { textDocument = { uri = vim.uri_from_bufnr(buf) } }
    end,
    reply,
    function(results)
      local out, total = {}, 0
      ---@param list table[]
      ---@param into table[]
      local function walk(list, into)
        for _, s in ipairs(list) do
          total = total + 1
          if total <= M.max_locations then
            local range = s.range or (s.location and s.location.range)
            local entry = {
              name = s.name,
              kind = symbol_kinds[s.kind] or tostring(s.kind),
              detail = s.detail ~= "" and s.detail or nil,
              containerName = s.containerName,
              line = range and range.start.line + 1,
              endLine = range and range["end"].line + 1,
            }
            into[#into + 1] = entry
            if s.children and #s.children > 0 then
              entry.children = {}
              walk(s.children, entry.children)
            end
          end
        end
      end
      if results[1] then
        walk(results[1].result, out)
      end
      return { filePath = buffer_path(buf), symbols = out, total = total, truncated = total > M.max_locations or nil }
    end
  )
end

-- Dispatch ------------------------------------------------------------------------------

--- Whether a tool answers later (through `reply`) rather than by returning.
local asynchronous = { findDefinition = true, findReferences = true, documentSymbols = true }

--- Run tool `name` for call `id`; the answer goes back through host.tool_result,
--- exactly once: `ok` true with the result, or false with the message for the agent.
---@param id integer
---@param name string
---@param args table
function M.run(id, name, args)
  local host = require("gemini_companion.host")
  local answered = false
  local function reply(ok, value)
    if not answered then
      answered = true
      host.tool_result(id, ok, value)
    end
  end
  local tool = tools[name]
  if not tool then
    reply(false, "Neovim has no tool named " .. tostring(name))
    return
  end
  local ok, value = pcall(tool, args or {}, reply)
  if not ok then
    reply(false, type(value) == "table" and value.tool_error or ("failed in Neovim: " .. tostring(value)))
  elseif not asynchronous[name] then
    reply(true, value)
  end
end

M._tools = tools

return M
