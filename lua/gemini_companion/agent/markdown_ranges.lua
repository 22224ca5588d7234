--- The passes of agent/markdown_inline.lua that mask what they find whole: code
--- spans, links and autolinks. Each is `pass(I, st, limit, fin)`: it goes on from
--- where it stopped (`st`) up to byte `limit`, the end of what the passes before
--- it decided (`fin`: the line's end).
local M = {}

local masks = require("gemini_companion.agent.markdown_masks")
local barrier, masked, bar, stop_at = masks.barrier, masks.masked, masks.bar, masks.stop_at
local huge = math.huge
local ALPHA = masks.ALPHA
local CODE, LINK, AUTO = masks.CODE, masks.LINK, masks.AUTO

local RAW = "@markup.raw.markdown_inline"
local LINKP = "@markup.link.markdown_inline"
local LABEL = "@markup.link.label.markdown_inline"
local URL = "@markup.link.url.markdown_inline"

-- Code spans ---------------------------------------------------------------------

--- Runs of backticks left to right: a run closes the open run of its length, if
--- one is open (the spans after that run are then inside this one), else opens.
--- Spans after the first open run wait: it may yet close over them.
---@param I gemini_companion.Inline
---@param st table
function M.code(I, st)
  local s, n = I.s, I.n
  local open, bylen, later = st.open, st.bylen, st.later
  local h = st.h
  while true do
    local a, b = s:find("`+", h)
    if not a then
      h = n + 1
      break
    end
    if b == n and not I.eol then
      h = a -- the run may grow
      break
    end
    local len = b - a + 1
    local oi = bylen[len]
    if oi then
      local from = open[oi][1]
      for j = #open, oi, -1 do
        bylen[open[j][2]] = nil
        open[j] = nil
      end
      while #later > 0 and later[#later - 1] > from do
        later[#later] = nil
        later[#later] = nil
      end
      if oi == 1 then
        bar(I, CODE, from, b)
        I.emit(from, b, RAW)
      else
        later[#later + 1] = from
        later[#later + 1] = b
      end
    else
      open[#open + 1] = { a, len }
      bylen[len] = #open
    end
    h = b + 1
  end
  if I.eol and h > n then
    -- The open runs never closed: the spans after them stand.
    for j = 1, #later, 2 do
      bar(I, CODE, later[j], later[j + 1])
      I.emit(later[j], later[j + 1], RAW)
    end
    st.open, st.later, st.bylen = {}, {}, {}
  end
  st.h = h
  I.F[CODE] = st.open[1] and math.min(st.open[1][1], h) or h
end

-- Links ------------------------------------------------------------------------

--- `[text](url)`: the leftmost `[` whose first `]` is followed by `(`, a url
--- without blanks, and `)`. A url that stops short is remembered (`dstop`): the
--- `[`s inside it find the same stop.
---@param I gemini_companion.Inline
---@param st table
---@param limit integer
---@param fin boolean
function M.link(I, st, limit, fin)
  local s = I.s
  local h, p, q = st.h, st.p, st.q
  while true do
    if not p then
      local a = h < limit and s:find("[", h, true)
      if not a or a >= limit then
        h = limit
        break
      end
      local ba, bb = barrier(I, LINK, a)
      if ba and ba <= a then
        h = bb + 1
      else
        p, h = a, a + 1
      end
    elseif not q then
      local c = s:find("]", h, true)
      local ba, bb = barrier(I, LINK, h)
      if ba and ba < limit and (not c or ba <= c) then
        p, h = nil, bb + 1 -- every `[` before the masked bytes fails
      elseif c and c < limit then
        q, h, st.dx = c, c + 1, nil
      elseif fin then
        p, h = nil, limit
      else
        h = limit
        break
      end
    else
      local stop
      if q + 1 >= limit then
        if not fin then
          break
        end
      elseif s:byte(q + 1) == 40 and not masked(I, LINK, q + 1) then -- (
        if st.dstop and q + 2 <= st.dstop then
          stop = st.dstop
        else
          local from = math.max(q + 2, st.dx or 0)
          stop = stop_at(I, LINK, "[%)%s]", from)
          if stop >= limit then
            if not fin then
              st.dx = limit
              break
            end
            stop = huge
          end
        end
        if stop < huge and s:byte(stop) == 41 and not masked(I, LINK, stop) then -- )
          I.emit(p, p, LINKP)
          I.emit(p + 1, q - 1, LABEL)
          I.emit(q, q + 1, LINKP)
          I.emit(q + 2, stop - 1, URL)
          I.emit(stop, stop, LINKP)
          bar(I, LINK, p, stop)
          p, q, h = nil, nil, stop + 1
        else
          st.dstop = stop
        end
      end
      if q then
        p, q, h = nil, nil, q + 1
      end
    end
  end
  st.h, st.p, st.q = h, p, q
  I.F[LINK] = p or h
end

-- Autolinks --------------------------------------------------------------------

--- `<scheme:rest>`: `<`, a letter, `[%w+.-]*`, `:`, `[^%s<>]+`, `>`.
---@param I gemini_companion.Inline
---@param st table
---@param limit integer
---@param fin boolean
function M.autolink(I, st, limit, fin)
  local s = I.s
  local h, p = st.h, st.p
  while true do
    if not p then
      local a = h < limit and s:find("<", h, true)
      if not a or a >= limit then
        h = limit
        break
      end
      local ba, bb = barrier(I, AUTO, a)
      if ba and ba <= a then
        h = bb + 1
      else
        p, st.x, st.colon = a, a + 1, nil
      end
    else
      local x, failed, pending = st.x, nil, false
      if x == p + 1 then
        if p + 1 >= limit then
          pending, failed = not fin, p + 1
        elseif ALPHA[s:byte(p + 1)] and not masked(I, AUTO, p + 1) then
          x = p + 2
        else
          failed = p + 1
        end
      end
      if not failed and not st.colon then
        local e, m = stop_at(I, AUTO, "[^%w+.-]", x)
        if e >= limit then
          pending, failed, x = not fin, limit, limit
        elseif not m and s:byte(e) == 58 then -- :
          st.colon, x = e, e + 1
        else
          failed = e
        end
      end
      if not failed and st.colon then
        local e, m = stop_at(I, AUTO, "[%s<>]", x)
        if e >= limit then
          pending, failed, x = not fin, limit, limit
        elseif not m and e > st.colon + 1 and s:byte(e) == 62 then -- >
          I.emit(p, e, URL)
          bar(I, AUTO, p, e)
          p, h, st.colon = nil, e + 1, nil
        else
          failed = e
        end
      end
      if pending then
        st.x = x
        break
      elseif failed then
        p, h, st.colon = nil, failed, nil
      end
    end
  end
  st.h, st.p = h, p
  I.F[AUTO] = p or h
end

return M
