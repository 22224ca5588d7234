"""A transport whose agent is a real child process (``sleep``) started through
agent/child.py, and whose start makes a folder its stop removes (as the A2A
server's private home): for tests of the agent's lifecycle without a protocol.
Loaded through ``GEMINI_COMPANION_TEST_TRANSPORT``; it writes the child's pid and
the folder's path into ``<workspace>/agent.json``."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from gemini_companion.agent.child import AgentProcess
from gemini_companion.agent.model import Prompt
from gemini_companion.agent.transport import EventSink, Transport

log = logging.getLogger(__name__)


class ChildTransport(Transport):
    protocol = "acp"

    def __init__(self, context: object) -> None:
        super().__init__(context)  # type: ignore[arg-type]
        self._process: AgentProcess | None = None
        self._home: str | None = None

    @property
    def connected(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self, events: EventSink) -> None:
        self._home = tempfile.mkdtemp(prefix="child-transport-")
        self._process = await AgentProcess.start(
            ["sleep", "600"], cwd=self.context.workspace, env=dict(os.environ), log=log
        )
        record = {"pid": self._process.pid, "home": self._home}
        path = Path(self.context.workspace, "agent.json")
        # Whole or not at all: the test reads it as soon as it exists.
        partial = path.with_suffix(".partial")
        await asyncio.to_thread(partial.write_text, json.dumps(record))
        partial.replace(path)

    async def prompt(self, prompt: Prompt) -> None:
        return None

    async def answer(self, call_id: str, option_id: str | None, new_content: str | None) -> None:
        return None

    async def cancel(self) -> None:
        return None

    async def run_command(self, name: str, args: str) -> None:
        return None

    async def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            await process.stop()
        home, self._home = self._home, None
        if home is not None:
            shutil.rmtree(home, ignore_errors=True)
