"""A small ACP agent on stdio, for what the real ``gemini --acp`` cannot be made to do:
print garbage on its stdout, hang on a prompt and ignore the cancel, or stream
timestamped chunks at a set pace (bench/agent.py). Built on the agent side of the
official ``agent-client-protocol`` package.

The prompt's text says what to do:
- ``garbage``: write a line that is not JSON-RPC to stdout, then answer normally;
- ``hang``: never answer (and ignore ``session/cancel``);
- ``deaf PATH``: ignore ``session/cancel`` and wait until the file PATH exists, then
  say ``late words``, ask permission to run ``late request``, ask the client for
  the file PATH, and answer (with ``--session-log``, logged as ``"late": true``,
  ``"read"``: ``"read"`` or ``"refused"``);
- ``exit``: exit at once, code 3, after a line on stderr;
- ``read PATH``: ask the client for the file (``fs/read_text_file``) and answer
  ``read: <its text>`` or ``read failed: <the client's error>``;
- ``stream COUNT SIZE INTERVAL_MS``: COUNT chunks of about SIZE characters, each
  starting ``<t=NANOSECONDS>`` (CLOCK_MONOTONIC, as Neovim's ``vim.uv.hrtime()``);
- ``ask WORDS``: ask permission to run ``WORDS`` (``session/request_permission``),
  then answer ``allowed WORDS`` or ``rejected WORDS``;
- ``ask-fail WORDS``: ask as ``ask`` does, then answer the prompt with a JSON-RPC
  error (``the model failed``) whatever the user said;
- ``fail``: answer the prompt with that JSON-RPC error at once;
- ``--hold-initialize PATH`` (a flag): answer ``initialize`` once the file PATH
  exists (the agent is starting until then).
- ``until PATH``: stream ``tick N`` chunks, one every 20 ms, until the file PATH
  exists, then answer ``released`` (a turn that goes on while a test does more);
- ``usage IN OUT``: answer ``counted``, the prompt's answer carrying
  ``_meta.quota`` as Gemini CLI 0.61.0 sends it (IN input and OUT output tokens);
- anything else: the answer ``echo: <text>``.

With ``FAKE_ACP_PROMPTS`` set to a file, each prompt's content blocks are appended
to it as one JSON line (what the agent received, attachments included).

Options (its command line): ``--ignore-sigterm``: SIGTERM is ignored and it
lives on when its input closes (only a SIGKILL stops it, or its parent's end);
``--pid-file PATH``: its pid is appended to PATH at start; ``--session-log PATH``:
each ``session/new`` and each prompt appends ``{"pid", "session", "text"?}`` as one
JSON line to PATH (which sessions one process served); ``--image``: its
``initialize`` declares ``promptCapabilities.image`` (it takes image blocks).
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import select
import signal
import sys
import time
import uuid
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, run_agent, schema
from acp.helpers import text_block, update_agent_message


def write_update(session_id: str, update: dict[str, Any]) -> None:
    """One ``session/update`` written on stdout at once, as the SDK would write it
    (bench/script_agent.py writes its updates with it too)."""
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": update},
    }
    data = memoryview((json.dumps(message, separators=(",", ":")) + "\n").encode())
    while data:
        try:
            data = data[os.write(1, data) :]
        except BlockingIOError:  # the SDK's stdout is non-blocking: wait until it drains
            select.select([], [1], [])


def _write_chunk(session_id: str, text: str) -> None:
    """One ``agent_message_chunk`` written on stdout at once: the stamp in ``text`` is
    then when the chunk is written, not before the SDK's pydantic models and its
    sender task (0.3 ms of the fake's own)."""
    update = {"content": {"text": text, "type": "text"}, "sessionUpdate": "agent_message_chunk"}
    write_update(session_id, update)


def _append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


async def _appeared(path: str) -> bool:
    """Whether the file ``path`` exists, asked 20 ms from now."""
    await asyncio.sleep(0.02)
    return await asyncio.to_thread(os.path.exists, path)


def _log_session(session_id: str, text: str | None = None) -> None:
    if "--session-log" in sys.argv:
        entry: dict[str, Any] = {"pid": os.getpid(), "session": session_id}
        if text is not None:
            entry["text"] = text
        _append(sys.argv[sys.argv.index("--session-log") + 1], json.dumps(entry) + "\n")


class FakeAgent:
    def __init__(self) -> None:
        self._client: Any = None

    def on_connect(self, conn: Any) -> None:
        self._client = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> schema.InitializeResponse:
        if "--hold-initialize" in sys.argv:
            # Answered once the test makes this file: the agent is "starting" until then.
            gate = sys.argv[sys.argv.index("--hold-initialize") + 1]
            while not await _appeared(gate):
                pass
        return schema.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(
                load_session=False,
                prompt_capabilities=schema.PromptCapabilities(image="--image" in sys.argv),
            ),
            agent_info=schema.Implementation(name="fake-acp-agent", version="0.0.1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> schema.NewSessionResponse:
        session_id = str(uuid.uuid4())
        _log_session(session_id)
        return schema.NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def _say(self, session_id: str, text: str) -> None:
        await self._client.session_update(session_id, update_agent_message(text_block(text)))

    async def _ask(self, session_id: str, what: str) -> bool:
        """Ask permission to run ``what``; True if the user allowed it."""
        options = [
            schema.PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
            schema.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ]
        call = schema.ToolCallUpdate(
            tool_call_id=f"run-{uuid.uuid4().hex[:8]}", title=what, kind="execute", status="pending"
        )
        answer = await self._client.request_permission(
            session_id=session_id, tool_call=call, options=options
        )
        return getattr(answer.outcome, "option_id", None) == "allow"

    async def _deaf(self, session_id: str, path: str) -> None:
        """Whatever the client says, wait for the file ``path``, then say ``late words``,
        ask a permission and read the file."""
        while not await _appeared(path):
            pass
        await self._say(session_id, "late words")
        await self._ask(session_id, "late request")
        try:
            await self._client.read_text_file(path=path, session_id=session_id)
            read = "read"
        except Exception:
            read = "refused"
        if "--session-log" in sys.argv:
            entry = {"pid": os.getpid(), "session": session_id, "late": True, "read": read}
            _append(sys.argv[sys.argv.index("--session-log") + 1], json.dumps(entry) + "\n")

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> Any:
        log = os.environ.get("FAKE_ACP_PROMPTS")
        if log:
            blocks = [p.model_dump(mode="json", exclude_none=True) for p in prompt]
            _append(log, json.dumps(blocks) + "\n")
        words = " ".join(getattr(p, "text", "") for p in prompt).split()
        command = words[0] if words else ""
        rest = " ".join(words[1:])
        _log_session(session_id, " ".join(words))
        if command == "ask":
            allowed = await self._ask(session_id, rest)
            await self._say(session_id, ("allowed " if allowed else "rejected ") + rest)
        elif command in ("ask-fail", "fail"):
            if command == "ask-fail":
                await self._ask(session_id, rest)
            raise RequestError(-32603, "the model failed")
        elif command == "usage":
            tokens, out = (int(w) for w in words[1:3])
            await self._say(session_id, "counted")
            count = {"input_tokens": tokens, "output_tokens": out}
            quota = {
                "token_count": count,
                "model_usage": [{"model": "gemini-2.5-flash", "token_count": count}],
            }
            return schema.PromptResponse(stop_reason="end_turn", field_meta={"quota": quota})
        elif command == "until":
            tick = 0
            while not await asyncio.to_thread(os.path.exists, rest):
                tick += 1
                _write_chunk(session_id, f"tick {tick}\n")
                await asyncio.sleep(0.02)
            await self._say(session_id, "released")
        elif command == "garbage":
            sys.stdout.buffer.write(b"Loaded cached credentials. (not JSON-RPC)\n")
            sys.stdout.buffer.flush()
            await self._say(session_id, "after the garbage")
        elif command in ("hang", "deaf"):  # deaf to the cancel: forever, or until a file
            await (asyncio.Event().wait() if command == "hang" else self._deaf(session_id, rest))
        elif command == "exit":
            print("fake agent: exiting on purpose", file=sys.stderr, flush=True)
            os._exit(3)
        elif command == "read":
            try:
                read = await self._client.read_text_file(path=words[1], session_id=session_id)
                await self._say(session_id, "read: " + read.content)
            except Exception as exc:
                await self._say(session_id, f"read failed: {exc}")
        elif command == "stream":
            count, size, interval = (int(w) for w in words[1:4])
            for _ in range(count):
                stamp = f"<t={time.monotonic_ns()}>"
                _write_chunk(session_id, stamp + "x" * max(size - len(stamp) - 1, 0) + "\n")
                if interval:
                    await asyncio.sleep(interval / 1000)
        else:
            await self._say(session_id, "echo: " + " ".join(words))
        return schema.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    if "--ignore-sigterm" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        # Never outlives the plugin's host, whatever the test did: killed with it
        # (Linux's PR_SET_PDEATHSIG).
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    if "--pid-file" in sys.argv:
        with open(sys.argv[sys.argv.index("--pid-file") + 1], "a") as pids:
            pids.write(f"{os.getpid()}\n")
    asyncio.run(run_agent(FakeAgent()))  # type: ignore[arg-type]
    if "--ignore-sigterm" in sys.argv:
        signal.pause()  # its input closed: it lives on, until a SIGKILL
