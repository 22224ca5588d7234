--- What Neovim's markdown tree-sitter parser costs per batch appended at the end
--- of a growing transcript (issue 25 item 2): the main (block) tree re-parsed
--- after each append, with and without headings splitting the text into sections.
---
--- Run: nvim --headless --clean -l bench/markdown_parse.lua [batches]
---
--- Finding (Neovim 0.11.4): without headings the whole answer is one `section`
--- and each re-parse costs about as much as parsing the whole text again (32 ms
--- p50 at 200 KB, 180–225 ms at 800 KB); with a heading every 20 paragraphs the
--- same appends cost about 1 ms. An agent's long answer usually has no headings,
--- so the highlighter's incremental parse is not incremental for the transcript.
local batches = tonumber(arg[1]) or 100
local para = "Some **bold** text with `code` and a [link](http://x) here, more words to fill the line."

---@param headings boolean
---@return number p50, number p99, number max, integer bytes
local function run(headings)
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
    parser:parse(false)
    times[#times + 1] = (vim.uv.hrtime() - t0) / 1e6
  end
  local bytes = vim.api.nvim_buf_get_offset(b, vim.api.nvim_buf_line_count(b))
  vim.api.nvim_buf_delete(b, { force = true })
  local worst = math.max(unpack(times))
  table.sort(times)
  return times[math.ceil(#times / 2)], times[math.ceil(#times * 0.99)], worst, bytes
end

for _, headings in ipairs({ false, true }) do
  local p50, p99, worst, bytes = run(headings)
  io.stdout:write(
    ("%s: %d batches, %d KB: re-parse after an append p50 %.1f ms, p99 %.1f ms, max %.1f ms\n"):format(
      headings and "a heading every 20 paragraphs" or "no headings (one section)",
      batches,
      bytes / 1000,
      p50,
      p99,
      worst
    )
  )
end
