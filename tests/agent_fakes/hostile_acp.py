"""A scripted ACP agent that does what a confused or hostile agent would: raw JSON-RPC
lines on stdio, no SDK, so it can send what the protocol's own types would refuse to
(two permission requests with one ``toolCallId``, paths with newlines, writes nobody
asked about, JSON nested 3000 deep, invalid UTF-8, lone surrogates).

Usage: ``hostile_acp.py SCRIPT LOG``. SCRIPT is a JSON file::

    {"new_session": {...extra fields of the session/new answer (modes, ...)},
     "turns": [[step, ...], ...]}

Each ``session/prompt`` runs the next turn's steps in order, then answers the prompt
(``end_turn`` unless a step said otherwise). A step is one of:

- ``{"call": METHOD, "params": {...}, "wait": true}``: a request to the client; with
  ``wait`` (the default) the turn waits for its answer, else it goes on;
- ``{"notify": METHOD, "params": {...}}``: a notification to the client;
- ``{"await": "all"}``: wait for the answers of every request sent so far;
- ``{"raw": TEXT}`` / ``{"raw_hex": HEX}``: one line written as it is (no newline in
  it), UTF-8 with lone surrogates kept for ``raw``;
- ``{"deep": N}``: a ``session/update`` notification whose params nest N arrays deep;
- ``{"wait_for_file": PATH}``: wait until PATH exists (the test's go-ahead);
- ``{"repeat": N, "steps": [...]}``: those steps N times;
- ``{"stop": REASON}``: the prompt's stopReason; ``{"hang": true}``: never answer;
- ``{"close_stdout": true}``: close stdout and live on (the turn never ends).

The turns are counted across runs (in LOG.turns): a restarted agent goes on with
the next turn.

The string ``$SESSION`` anywhere in params is the session id. Every line the agent
reads and writes is appended to LOG as ``{"dir": "in"|"out", "msg": ...}`` (or
``{"dir": "in", "raw": ...}`` for a line that is not JSON), so a test reads what the
client answered.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

SESSION = "hostile-session-1"


class Agent:
    def __init__(self, script: dict[str, Any], log_path: str) -> None:
        self.script = script
        self.turns: list[list[dict[str, Any]]] = list(script.get("turns") or [])
        self.log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115
        self.next_id = 1000
        self.waiting: dict[Any, asyncio.Future[Any]] = {}
        self.out = sys.stdout.buffer
        self.stop = "end_turn"

    def record(self, entry: dict[str, Any]) -> None:
        self.log.write(json.dumps(entry, ensure_ascii=True) + "\n")
        self.log.flush()

    def write_line(self, data: bytes) -> None:
        self.out.write(data + b"\n")
        self.out.flush()

    def send(self, message: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", **message}
        self.record({"dir": "out", "msg": message})
        self.write_line(json.dumps(message, ensure_ascii=True).encode())

    def request(self, method: str, params: Any) -> asyncio.Future[Any]:
        self.next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        self.send({"id": self.next_id, "method": method, "params": params})
        return future

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 26)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        tasks: set[asyncio.Task[None]] = set()
        while True:
            line = await reader.readline()
            if not line:
                return
            try:
                message = json.loads(line)
            except ValueError:
                self.record({"dir": "in", "raw": line.decode("utf-8", "replace")})
                continue
            self.record({"dir": "in", "msg": message})
            if "method" not in message:
                future = self.waiting.get(message.get("id"))
                if future is not None and not future.done():
                    future.set_result(message)
                continue
            task = loop.create_task(self.handle(message))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    async def handle(self, message: dict[str, Any]) -> None:
        method, mid = message["method"], message.get("id")
        if method == "initialize":
            result: Any = {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False},
                "agentInfo": {"name": "hostile-acp-agent", "version": "0.0.1"},
                "authMethods": [],
            }
        elif method == "session/new":
            result = {"sessionId": SESSION, **(self.script.get("new_session") or {})}
        elif method == "session/prompt":
            result = await self.turn()
            if result is None:
                return
        elif method in ("session/set_mode", "session/set_model"):
            result = {}
        elif mid is None:
            return  # session/cancel and other notifications: logged, nothing else
        else:
            self.send({"id": mid, "error": {"code": -32601, "message": f"no {method}"}})
            return
        if mid is not None:
            self.send({"id": mid, "result": result})

    def next_turn(self) -> list[dict[str, Any]]:
        counter = self.log.name + ".turns"
        done = int(open(counter).read()) if os.path.exists(counter) else 0  # noqa: SIM115
        with open(counter, "w") as f:
            f.write(str(done + 1))
        return self.turns[done] if done < len(self.turns) else []

    async def turn(self) -> dict[str, Any] | None:
        self.stop = "end_turn"
        await self.steps(self.next_turn())
        return {"stopReason": self.stop}

    async def steps(self, steps: list[dict[str, Any]]) -> None:
        for raw_step in steps:
            step = substitute(raw_step)
            if "call" in step:
                future = self.request(step["call"], step.get("params") or {})
                if step.get("wait", True):
                    await future
            elif "notify" in step:
                self.send({"method": step["notify"], "params": step.get("params") or {}})
            elif "await" in step:
                await asyncio.gather(*self.waiting.values())
            elif "raw" in step:
                self.write_line(step["raw"].encode("utf-8", "surrogatepass"))
            elif "raw_hex" in step:
                self.write_line(bytes.fromhex(step["raw_hex"]))
            elif "deep" in step:
                depth = int(step["deep"])
                update = "[" * depth + "]" * depth
                params = f'{{"sessionId":"{SESSION}","update":{update}}}'
                self.write_line(
                    f'{{"jsonrpc":"2.0","method":"session/update","params":{params}}}'.encode()
                )
            elif "wait_for_file" in step:
                await asyncio.to_thread(wait_for_file, step["wait_for_file"])
            elif "repeat" in step:
                for _ in range(int(step["repeat"])):
                    await self.steps(step["steps"])
            elif "stop" in step:
                self.stop = step["stop"]
            elif step.get("close_stdout"):
                self.out.close()
                os.close(1)
                await asyncio.Event().wait()
            elif step.get("hang"):
                await asyncio.Event().wait()


def wait_for_file(path: str) -> None:
    """Until the test creates ``path`` (its go-ahead: a poll, in a thread)."""
    while not os.path.exists(path):
        time.sleep(0.02)


def substitute(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("$SESSION", SESSION)
    if isinstance(value, list):
        return [substitute(v) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v) for k, v in value.items()}
    return value


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        script = json.load(f)
    asyncio.run(Agent(script, sys.argv[2]).run())


if __name__ == "__main__":
    main()
