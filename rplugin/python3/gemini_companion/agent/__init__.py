"""The agent half: a panel in Neovim driving the Gemini CLI agent.

Layout (one direction of imports, top to bottom):

- ``service.py``: what a server run holds (``gemini_companion/run.py``); picks
  the transport from the configuration, owns the session; built, driven and
  stopped on the server's loop, its stop awaited before the loop ends.
- ``session.py``: the protocol-neutral core (transcript, tool calls, pending
  confirmations, the user's answers); runs on the server's loop.
- ``view.py`` (the panel, batched into Neovim), ``review.py`` (agent edits in
  the diff tab of IDE mode), ``render.py`` (blocks as lines), ``replayed.py``
  (the user's words in a message a resumed conversation replays).
- ``transport.py``: the :class:`~.transport.Transport` interface a protocol
  implements, and its context. Read its docstring to write a transport.
- ``model.py``: the events a transport emits and the transcript's data.
- ``files.py`` and ``merge.py``: the agent's file reads and writes through
  Neovim's buffers, under the path policy (``gemini_companion/paths.py``).
- ``attach.py``: what a prompt attaches, checked (links resolved, the path
  policy, the user's consent outside it) and read before anything is sent;
  ``reader.py``: the one reader of files on disk it and files.py share.
- ``child.py``: an agent's child process, for both protocols (its own process
  group, ended with Neovim, stopped with one policy, its output in the log).
- ``mcp_servers.py``: the MCP servers handed to the agent (Neovim's tools), in
  one description and each protocol's shape.
- one package per protocol, holding everything only it uses: ``acp/`` (Gemini
  CLI as ``gemini --acp``) and ``a2a/`` (the A2A server with the
  ``development-tool`` extension). The core imports neither. Each package's
  ``__init__.py`` lists its modules; each protocol's client is a short ladder of
  classes, one module per job, with ``transport.py`` (the panel's interface) at
  its top.
"""
