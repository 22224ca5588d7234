--- Images attached to the next prompt (:GeminiAgentImage): a file, or the
--- clipboard's image. They wait here until the prompt is sent (prompt.lua takes
--- them), and come back when it is not (agent/attach.py refused it: the image it
--- refused does not). The Python side reads and checks them (agent/image.py: PNG,
--- JPEG, GIF or WebP by their bytes, at most `MAX_BYTES`).
---
--- Each conversation (conversations.lua) has its own: an image attached in one
--- goes with that conversation's next prompt, wherever the user went meanwhile.
local M = {}

--- The largest image a prompt takes: agent/image.py's MAX_BYTES (5 MiB). Here it
--- only spares sending a larger clipboard image to be refused.
M.MAX_BYTES = 5 * 1024 * 1024

--- Clipboard readers, the first whose program exists (and whose display is set) is used.
---@type { env?: string, cmd: string[] }[]
M.CLIPBOARD = {
  { env = "WAYLAND_DISPLAY", cmd = { "wl-paste", "--no-newline", "--type", "image/png" } },
  { env = "DISPLAY", cmd = { "xclip", "-selection", "clipboard", "-t", "image/png", "-o" } },
  { cmd = { "pngpaste", "-" } },
}

---@class gemini_companion.AgentImage
---@field path? string an absolute path (a file)
---@field name? string the clipboard's image: its name
---@field data? string the clipboard's image: its bytes in base64

--- The images waiting in each conversation (its slot: the same across a renumbering).
---@type table<gemini_companion.AgentConversationSlot, gemini_companion.AgentImage[]>
local attached = setmetatable({}, { __mode = "k" })

--- The images waiting for the next prompt of conversation `c` (default: the shown one).
---@param c? gemini_companion.AgentConversationSlot
---@return gemini_companion.AgentImage[]
local function waiting(c)
  c = c or require("gemini_companion.agent.conversations").current()
  attached[c] = attached[c] or {}
  return attached[c]
end

---@param images gemini_companion.AgentImage[]
---@param c? gemini_companion.AgentConversationSlot default: the shown one
local function set_waiting(images, c)
  attached[c or require("gemini_companion.agent.conversations").current()] = images
end

---@param image gemini_companion.AgentImage
---@return string
local function name_of(image)
  return image.name or vim.fs.basename(image.path or "")
end

---@param text string
---@param level integer
local function post(text, level)
  require("gemini_companion.agent.messages").post(text, level)
end

--- Attach `image` in conversation `c` (default: the shown one).
---@param image gemini_companion.AgentImage
---@param c? gemini_companion.AgentConversationSlot
local function add(image, c)
  local pending = waiting(c)
  pending[#pending + 1] = image
  vim.cmd.redrawstatus({ bang = true })
  local names = vim.tbl_map(name_of, pending)
  local shown = require("gemini_companion.agent.conversations").current()
  local where = c and c ~= shown and (" of conversation #%d"):format(c.id) or ""
  post(
    ("image %s goes with the next prompt%s (attached: %s)"):format(name_of(image), where, table.concat(names, ", ")),
    vim.log.levels.INFO
  )
end

--- What the prompt window's status line says of them: "" when none waits.
---@return string
function M.status()
  local names = M.pending()
  return #names > 0 and ("images: %s"):format(table.concat(names, ", ")) or ""
end

--- The names of the images waiting for the shown conversation's next prompt.
---@return string[]
function M.pending()
  return vim.tbl_map(name_of, waiting())
end

--- The images for the prompt being sent in the shown conversation; none wait
--- there after this.
---@return gemini_companion.AgentImage[]
function M.take()
  local out = waiting()
  set_waiting({})
  vim.cmd.redrawstatus({ bang = true })
  return out
end

--- Images of a prompt that was not sent: they wait again in conversation `c`
--- (the one it was sent from; default: the shown one), before any attached since.
---@param images? gemini_companion.AgentImage[]
---@param c? gemini_companion.AgentConversationSlot
function M.give_back(images, c)
  set_waiting(vim.list_extend(vim.list_extend({}, images or {}), waiting(c)), c)
  vim.cmd.redrawstatus({ bang = true })
end

--- The first clipboard reader this system has, or nil.
---@return { env?: string, cmd: string[] }?
local function clipboard_reader()
  for _, reader in ipairs(M.CLIPBOARD) do
    local display = reader.env == nil or (vim.env[reader.env] or "") ~= ""
    if display and vim.fn.executable(reader.cmd[1]) == 1 then
      return reader
    end
  end
  return nil
end

--- Attach the clipboard's image (read in the background).
local function from_clipboard()
  local reader = clipboard_reader()
  if not reader then
    post(
      "no clipboard image reader: install wl-paste (Wayland), xclip (X11) or pngpaste (macOS), or give a path",
      vim.log.levels.ERROR
    )
    return
  end
  local program = reader.cmd[1]
  -- The image goes to the conversation it was asked in, whichever is shown once read.
  local c = require("gemini_companion.agent.conversations").current()
  vim.system(reader.cmd, { text = false, timeout = 10000 }, function(out)
    vim.schedule(function()
      local data = out.stdout or ""
      if out.code ~= 0 or data == "" then
        local why = vim.trim(((out.stderr or ""):match("^[^\n]*")) or "")
        post(
          ("no image in the clipboard (%s: %s)"):format(program, why ~= "" and why or "nothing read"),
          vim.log.levels.ERROR
        )
      elseif #data > M.MAX_BYTES then
        post(
          "cannot attach the clipboard's image: it is larger than 5 MiB, the limit for an image",
          vim.log.levels.ERROR
        )
      else
        add({ name = "clipboard.png", data = vim.base64.encode(data) }, c)
      end
    end)
  end)
end

--- :GeminiAgentImage [path] (with ! : drop the images attached so far).
---@param path string "" for the clipboard's image
---@param bang? boolean
function M.command(path, bang)
  if bang then
    local dropped = #M.take()
    post(("%d image(s) dropped from the next prompt"):format(dropped), vim.log.levels.INFO)
    return
  end
  if path == "" then
    from_clipboard()
    return
  end
  local full = vim.fs.normalize(vim.fn.fnamemodify(path, ":p"))
  local stat = vim.uv.fs_stat(full)
  if not stat or stat.type ~= "file" then
    post(("cannot attach %s: %s"):format(path, stat and "not a file" or "no such file"), vim.log.levels.ERROR)
    return
  end
  add({ path = full })
end

return M
