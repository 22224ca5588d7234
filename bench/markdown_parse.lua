--- What Neovim's markdown tree-sitter parser costs per batch appended at the end
--- of a growing transcript (issue 25 item 2): the main (block) tree re-parsed
--- after each append, with and without headings splitting the text into sections,
--- then with the injections of the last 50 lines parsed too (what the highlighter
--- parses for a window on the tail), with and without the `html_block` injection.
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
