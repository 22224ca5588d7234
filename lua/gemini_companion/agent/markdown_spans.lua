--- The passes of agent/markdown_inline.lua that mask only the delimiters of what
--- they find: `**`, `__`, `~~`, `*`, `_`. Each is `pass(I, st, k, limit, fin)`, as
--- in agent/markdown_ranges.lua.
local M = {}

local masks = require("gemini_companion.agent.markdown_masks")
local barrier, masked, bar = masks.barrier, masks.masked, masks.bar
local word_before = masks.word_before
local WORD, SPACE = masks.WORD, masks.SPACE
local UBOLD, UITALIC = masks.UBOLD, masks.UITALIC

local STRONG = "@markup.strong.markdown_inline"

-- Spans ------------------------------------------------------------------------

--- `**x**`, `~~x~~`: a pair not followed by a blank or its character, to the next
--- pair.
---@param I gemini_companion.Inline
---@param st table
---@param k integer
---@param limit integer
---@param fin boolean
function M.double(I, st, k, limit, fin)
  local s, pair, ch = I.s, st.pair, st.ch
  local h, p = st.h, st.p
  while true do
    if not p then
      local a = h < limit and s:find(pair, h, true)
      if not a or a >= limit then
        h = fin and limit or math.max(h, limit - 1) -- a pair may end past the limit
        break
      elseif a + 2 >= limit and not fin then
        h = a
        break
      end
      local ba, bb = barrier(I, k, a)
      if ba and ba <= a + 1 then
        h = ba <= a and bb + 1 or a + 1
      else
        local c = s:byte(a + 2)
        if c and c ~= ch and not SPACE[c] and ba ~= a + 2 then
          p, st.x = a, a + 3
        else
          h = a + 1
        end
      end
    else
      local j = s:find(pair, st.x, true)
      local ba, bb = barrier(I, k, st.x)
      if ba and ba < limit and (not j or ba <= j + 1) then
        p, h = nil, bb + 1
      elseif j and j + 1 < limit then
        I.emit(p, j + 1, st.group)
        bar(I, k, p, p + 1)
        bar(I, k, j, j + 1)
        p, h = nil, j + 2
      elseif fin then
        p, h = nil, limit
      else
        st.x = math.max(st.x, limit - 1)
        break
      end
    end
  end
  st.h, st.p = h, p
  I.F[k] = p or h
end

--- `__x__`: as `**`, between non-word bytes.
---@param I gemini_companion.Inline
---@param st table
---@param limit integer
---@param fin boolean
function M.ubold(I, st, _, limit, fin)
  local s = I.s
  local h, p = st.h, st.p
  while true do
    if not p then
      local a = h < limit and s:find("__", h, true)
      if not a or a >= limit then
        h = fin and limit or math.max(h, limit - 1) -- a pair may end past the limit
        break
      elseif a + 2 >= limit and not fin then
        h = a
        break
      end
      local ba, bb = barrier(I, UBOLD, a)
      if ba and ba <= a + 1 then
        h = ba <= a and bb + 1 or a + 1
      else
        local c = s:byte(a + 2)
        if c and c ~= 95 and not SPACE[c] and ba ~= a + 2 and not word_before(I, UBOLD, a) then
          p, st.x = a, a + 3
        else
          h = a + 1
        end
      end
    else
      local j = s:find("__", st.x, true)
      local ba, bb = barrier(I, UBOLD, st.x)
      if ba and ba < limit and (not j or ba <= j + 1) then
        p, h = nil, bb + 1
      elseif j and j + 1 < limit then
        local after, ok = j + 2, true
        if after < limit then
          local c = s:byte(after)
          ok = not c or not WORD[c] or masked(I, UBOLD, after)
        elseif not fin then
          st.x = j
          break
        end
        if ok then
          I.emit(p, j + 1, STRONG)
          bar(I, UBOLD, p, p + 1)
          bar(I, UBOLD, j, j + 1)
          p, h = nil, j + 2
        else
          st.x = j + 1
        end
      elseif fin then
        p, h = nil, limit
      else
        st.x = math.max(st.x, limit - 1)
        break
      end
    end
  end
  st.h, st.p = h, p
  I.F[UBOLD] = p or h
end

--- `*x*`, `_x_` (`_` between non-word bytes): a delimiter not followed by a blank
--- or itself, to the next one.
---@param I gemini_companion.Inline
---@param st table
---@param k integer
---@param limit integer
---@param fin boolean
function M.single(I, st, k, limit, fin)
  local s, ch, frontier = I.s, st.ch, k == UITALIC
  local byte = ch:byte()
  local h, p = st.h, st.p
  while true do
    if not p then
      local a = h < limit and s:find(ch, h, true)
      if not a or a >= limit then
        h = limit
        break
      elseif a + 1 >= limit and not fin then
        h = a
        break
      end
      local ba, bb = barrier(I, k, a)
      if ba and ba <= a then
        h = bb + 1
      else
        local c = s:byte(a + 1)
        if c and c ~= byte and not SPACE[c] and ba ~= a + 1 and not (frontier and word_before(I, k, a)) then
          p, st.x = a, a + 2
        else
          h = a + 1
        end
      end
    else
      local j = s:find(ch, st.x, true)
      local ba, bb = barrier(I, k, st.x)
      if ba and ba < limit and (not j or ba <= j) then
        p, h = nil, bb + 1
      elseif j and j < limit then
        local ok = true
        if frontier then
          if j + 1 < limit then
            local c = s:byte(j + 1)
            ok = not c or not WORD[c] or masked(I, k, j + 1)
          elseif not fin then
            st.x = j
            break
          end
        end
        if ok then
          I.emit(p, j, "@markup.italic.markdown_inline")
          bar(I, k, p, p)
          bar(I, k, j, j)
          p, h = nil, j + 1
        else
          p, h = nil, j
        end
      elseif fin then
        p, h = nil, limit
      else
        st.x = limit
        break
      end
    end
  end
  st.h, st.p = h, p
  I.F[k] = p or h
end

return M
