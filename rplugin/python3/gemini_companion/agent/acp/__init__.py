"""The ACP transport: Gemini CLI as ``gemini --acp``, a child process of the plugin.

Everything only ACP uses lives here (the core, one level up, knows nothing of it):

- ``transport.py``: :class:`~.transport.AcpTransport`, the panel's client of the
  agent (start, prompt, answers, cancel, sessions), built of small parts:
  ``state.py`` (the session's state the parts share, one dataclass), ``link.py``
  (the child the conversation uses, and requests to it), ``client_requests.py``
  (the agent's requests: session updates, permissions, ``fs/*``), ``turns.py`` (a
  prompt's turn), ``handshake.py`` (initialize, login, a session started or
  loaded) and ``answers.py`` (the user's answer to a permission).
- ``options.py``: ``agent.acp`` of the configuration.
- ``process.py``: one run of the agent: its process (``agent/child.py``) and the
  JSON-RPC connection on its pipes.
- ``wire.py``: JSON-RPC on the child's stdin and stdout, and the agent's errors.
- ``events.py``: ACP session updates as the panel's events, and prompts as ACP
  content blocks.
- ``permissions.py``: the agent's permission requests waiting for the user.
- ``grants.py``: which of the agent's writes the user approved.
- ``sessions.py``: the record of the sessions the panel started, for
  ``:GeminiAgentResume``.

Nothing is imported here: the service loads ``transport.py`` by name.
"""
