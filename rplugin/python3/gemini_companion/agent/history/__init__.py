"""The history of the panel's conversations, kept across Neovim restarts.

One JSON file under ``stdpath("state")`` (``gemini-companion/acp-sessions.json``,
the file :GeminiAgentResume has read since the first ACP release, so nothing a
user had is lost): a list of records, one per conversation (``records.py``),
read and rewritten whole and atomically (``store.py``). The Python side writes
what the agent did (an ACP session created, prompted, loaded, or failing to
load); the Lua side (lua/gemini_companion/agent/history.lua) reads it for
:GeminiAgentConversations and writes what the user did (rename, delete) and
the A2A tasks. Both re-read the file just before they replace it.
"""
