"""The A2A transport: the Gemini CLI agent over A2A with the ``development-tool``
extension, through the official ``a2a-sdk``.

Everything only A2A uses lives here (the core, one level up, knows nothing of it):

- ``transport.py``: :class:`~.transport.A2ATransport`, the panel's client of the
  agent (start, prompt, answers, cancel), built of small parts: ``state.py``
  (the task's state the parts share, one dataclass), ``connection.py`` (the HTTP
  client, the agent's card, the server started), ``events.py`` (the agent's
  updates as the panel's events; the user's edited version written),
  ``resume.py`` (a turn's stream, followed again when it breaks) and
  ``commands.py`` (slash commands).
- ``server.py``: the A2A server the plugin starts (command, environment,
  private home, process through ``agent/child.py``).
- ``devtool/``: the development-tool extension's two encodings, one module each
  (``rfc.py``; ``coder_agent.py``, 0.25.2's), with what they share (the
  extension's version, the normalised events) and ``devtool/__init__.py`` as
  the one entry.
- ``gemini_home.py``: the started server's private Gemini home, which adds
  Neovim's tools to the user's settings.
- ``loopback.cjs``: a Node preload that keeps the started server on 127.0.0.1,
  answering the plugin alone (a secret), and removes its private home as it ends.

Nothing is imported here: the service loads ``transport.py`` by name.
"""
