--- What Neovim's markdown tree-sitter parser costs per batch appended at the end
--- of a growing transcript (issue 25 item 2): the main (block) tree re-parsed
--- after each append, with and without headings splitting the text into sections,
--- then with the injections of the last 50 lines parsed too (what the highlighter
--- parses for a window on the tail), with and without the `html_block` injection.
---
--- Then the transcript's own highlighting (agent.markdown true, and false for
--- the floor) drawing a 1 MB answer batch by batch (see `panel` below).
---
--- Run: nvim --headless --clean -l bench/markdown_parse.lua [batches]
---
--- Finding (Neovim 0.11.4): without headings the whole answer is one `section`
--- and each re-parse costs about as much as parsing the whole text again (32 ms
--- p50 at 200 KB, 180–225 ms at 800 KB); with a heading every 20 paragraphs the
--- same appends cost about 1 ms. An agent's long answer usually has no headings,
--- so the highlighter's incremental parse is not incremental for the transcript.
--- With headings, parsing the injections of the 50 lines on screen too costs
--- about 25–30 ms per append. Measured by editing the injection query: with only
--- the fence and metadata patterns 1.4 ms; fences plus `markdown_inline` 24 ms;
--- fences plus the combined `html_block` pattern 30 ms (the text has no HTML);
--- the last run here drops only `html_block`, which leaves about 20 ms.
local batches = tonumber(arg[1]) or 100
local para = "Some **bold** text with `code` and a [link](http://x) here, more words to fill the line."

---@param headings boolean
---@param on_screen boolean parse the injections of the last 50 lines too
---@return number p50, number p99, number max, integer bytes
local function run(headings, on_screen)
  local b = vim.api.nvim_create_buf(false, true)
  local parser = vim.treesitter.get_parser(b, "markdown")
  local times = {}
  for i = 1, batches do
    local lines = {}
    for _ = 1, 20 do
      lines[#lines + 1] = para
    end
    if i % 10 == 0 then
      vim.list_extend(lines, { "```python", "x = 1", "```" })
    end
    lines[#lines + 1] = ""
    if headings then
      vim.list_extend(lines, { "## Part " .. i, "" })
    end
    local n = vim.api.nvim_buf_line_count(b)
    vim.api.nvim_buf_set_lines(b, n, n, false, lines)
    local t0 = vim.uv.hrtime()
    local count = vim.api.nvim_buf_line_count(b)
    parser:parse(on_screen and { math.max(count - 50, 0), count } or false)
    times[#times + 1] = (vim.uv.hrtime() - t0) / 1e6
  end
  local bytes = vim.api.nvim_buf_get_offset(b, vim.api.nvim_buf_line_count(b))
  vim.api.nvim_buf_delete(b, { force = true })
  local worst = math.max(unpack(times))
  table.sort(times)
  return times[math.ceil(#times / 2)], times[math.ceil(#times * 0.99)], worst, bytes
end

---@param what string
---@param headings boolean
---@param on_screen boolean
local function report(what, headings, on_screen)
  local p50, p99, worst, bytes = run(headings, on_screen)
  io.stdout:write(
    ("%s: %d batches, %d KB: re-parse after an append p50 %.1f ms, p99 %.1f ms, max %.1f ms\n"):format(
      what,
      batches,
      bytes / 1000,
      p50,
      p99,
      worst
    )
  )
end

--- The transcript's highlighters themselves, as the panel drives them: a 1 MB
--- answer with a heading and a `lua` fence every 14 lines and no other heading
--- section break, drawn in 1000 batches by transcript.lua's `_apply` into a
--- window showing its end, each batch followed by a redraw (the tree-sitter
--- highlighter parses at redraw), then the wait for the screen to keep still
--- (code fences on it parsed). Prints the CPU per batch (apply + redraw),
--- p50/p99/max over the first and the last tenth of the answer: a cost
--- proportional to what arrived stays flat as the transcript grows.
---@param mode boolean|string agent.markdown
local function panel(mode)
  vim.opt.rtp:prepend(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h"))
  package.loaded["gemini_companion.config"] = {
    get = function()
      return { agent = { markdown = mode } }
    end,
  }
  -- Neovim 0.11's highlighter parses in slices between events: parse at each
  -- redraw, as it does when the main loop has time (a stream at the CLI's pace).
  vim.g._ts_force_sync_parsing = true
  local t = require("gemini_companion.agent.transcript")
  local part = "## Step %d\n\nThe function below *counts* the `lines` of a **file**:\n\n"
    .. "```lua\nlocal function count(path)\n  return #vim.fn.readfile(path)\nend\n```\n\n"
    .. "- first point\n- second point\n\n"
  local parts, size = {}, 0
  while size < 1000000 do
    parts[#parts + 1] = part:format(#parts)
    size = size + #parts[#parts]
  end
  local whole = table.concat(parts)
  local b = t.buffer()
  vim.api.nvim_win_set_buf(0, b)
  t._apply({ { op = "block", id = 1, lines = { "▍ You", "go", "", "▍ Gemini" }, kind = "prompt" } })
  local step = math.ceil(#whole / 1000)
  local times = {}
  local c0 = os.clock()
  for i = 1, #whole, step do
    local t0 = os.clock()
    t._apply({ { op = "append", id = 2, text = whole:sub(i, i + step - 1), prefix = "" } })
    vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 0 })
    vim.cmd.redraw()
    times[#times + 1] = (os.clock() - t0) * 1000
  end
  -- The stream ends: the screen keeps still, the code fences on it are parsed.
  local t0 = os.clock()
  vim.wait(require("gemini_companion.agent.markdown_code").SETTLE_MS * 3)
  vim.cmd.redraw()
  local settle = (os.clock() - t0) * 1000
  local total = (os.clock() - c0) * 1000
  ---@param from integer
  ---@param to integer
  local function tenth(from, to)
    local slice = vim.list_slice(times, from, to)
    local worst = math.max(unpack(slice))
    table.sort(slice)
    return ("p50 %.2f ms, p99 %.2f ms, max %.2f ms"):format(
      slice[math.ceil(#slice / 2)],
      slice[math.ceil(#slice * 0.99)],
      worst
    )
  end
  local n = #times
  io.stdout:write(
    ("agent.markdown = %s: %d batches, %d lines, CPU %.0f ms (%.1f ms once it ended); per batch (apply + redraw) first tenth %s; last tenth %s\n"):format(
      vim.inspect(mode),
      n,
      vim.api.nvim_buf_line_count(b),
      total,
      settle,
      tenth(1, math.floor(n / 10)),
      tenth(n - math.floor(n / 10) + 1, n)
    )
  )
end

if arg[2] == "panel" then
  local modes = { ["true"] = true, ["false"] = false, treesitter = "treesitter" }
  panel(modes[arg[3]])
  return
end
if arg[2] == "without-html" then
  -- Set before any parser reads the query (Neovim keeps the first it reads).
  local files = vim.treesitter.query.get_files("markdown", "injections")
  local text = table.concat(vim.fn.readfile(files[#files]), "\n")
  local without = text:gsub("%(%(html_block%).-\n\n", "")
  vim.treesitter.query.set("markdown", "injections", without)
  report("with the injections on screen, headings, without the html_block injection", true, true)
  return
end
report("main tree, no headings (one section)", false, false)
report("main tree, a heading every 20 paragraphs", true, false)
report("with the injections on screen, headings", true, true)
local script = debug.getinfo(1, "S").source:sub(2)
local cmd = { vim.v.progpath, "--headless", "--clean", "-l", script, tostring(batches), "without-html" }
io.stdout:write(vim.system(cmd, { text = true }):wait().stdout)
-- ("treesitter" is left out: parsing at each redraw, it takes minutes at 1 MB;
-- the figures above are its cost.)
for _, mode in ipairs({ "false", "true" }) do
  cmd = { vim.v.progpath, "--headless", "--clean", "-l", script, tostring(batches), "panel", mode }
  io.stdout:write(vim.system(cmd, { text = true }):wait().stdout)
end
