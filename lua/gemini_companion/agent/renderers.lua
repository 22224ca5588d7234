--- The markdown renderers a user installs (render-markdown.nvim, markview.nvim) draw
--- over the transcript when `gemini_agent` is in their file types. They redraw on
--- the user's own events in a buffer (TextChanged, CursorMoved, WinScrolled), and
--- the transcript changes while the cursor is elsewhere (in the prompt): a streamed
--- answer stayed raw until the cursor went into the transcript. So, at most every
--- 100 ms while it changes, each renderer attached to the transcript is asked to
--- draw it again, through its own entry point; so is each when the panel opens a
--- window on it. markview.nvim sets its window options (conceallevel) for the
--- windows showing a buffer when it attaches, and it attaches to the transcript
--- when its filetype is set, before any window shows it: a window the panel opens
--- gets them from markview's own `on_enable` callback (the user's, if configured).
--- Nothing runs when neither is loaded.
local M = {}

local api = vim.api

local INTERVAL_MS = 100

---@type table<integer, boolean>
local watched = {}

---@type table<integer, boolean> windows markview's window options were applied to
local markview_windows = {}

--- Ask each renderer that drew `buf` before to draw it again.
---@param buf integer
function M.refresh(buf)
  if not api.nvim_buf_is_valid(buf) or #vim.fn.win_findbuf(buf) == 0 then
    return
  end
  local manager = package.loaded["render-markdown.core.manager"]
  if manager and type(manager.attached) == "function" and manager.attached(buf) then
    pcall(function()
      require("render-markdown").render({ buf = buf, event = "GeminiAgentTranscript" })
    end)
  end
  local markview_state = package.loaded["markview.state"]
  if markview_state and type(markview_state.buf_attached) == "function" and markview_state.buf_attached(buf) then
    pcall(function()
      local fresh = vim.tbl_filter(function(win)
        return not markview_windows[win]
      end, vim.fn.win_findbuf(buf))
      if #fresh > 0 then
        for _, win in ipairs(fresh) do
          markview_windows[win] = true
        end
        require("markview.actions").autocmd("on_enable", buf, fresh)
      end
      require("markview").render(buf)
    end)
  end
end

---@return boolean
local function any_loaded()
  return package.loaded["render-markdown.core.manager"] ~= nil or package.loaded["markview.state"] ~= nil
end

local timer = nil ---@type uv.uv_timer_t?
local pending = false

--- Refresh the renderers of `buf` (the panel's transcript) after its changes.
---@param buf integer
function M.watch(buf)
  watched[buf] = true
end

--- `buf` changed (transcript.lua, once per batch it draws): its renderers are
--- refreshed at most once per interval.
---@param buf integer
function M.changed(buf)
  if pending or not watched[buf] or not any_loaded() then
    return
  end
  pending = true
  timer = timer or vim.uv.new_timer()
  if not timer then
    pending = false
    return
  end
  timer:start(
    INTERVAL_MS,
    0,
    vim.schedule_wrap(function()
      pending = false
      M.refresh(buf)
    end)
  )
end

return M
