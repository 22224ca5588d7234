"""A fake Gemini API on loopback: the part of generativelanguage v1beta the real
A2A server calls (``streamGenerateContent?alt=sse``, ``generateContent``,
``countTokens``), answering from a script. The one fake in the agent tests: the
model cannot run here. Selected with ``GOOGLE_GEMINI_BASE_URL`` and any
``GEMINI_API_KEY``.

A turn is a list of chunks; a chunk is a list of parts (``{"text": ...}``,
``{"functionCall": {"name", "args"}}``, ``{"thought": True, "text": ...}``), or
``{"delay": seconds}`` to pause the stream there (for cancel tests), or
``{"wait": "name"}`` to hold the stream until :meth:`FakeGemini.release` is called
(:meth:`FakeGemini.held` counts the streams held there), or ``{"barrier": "name",
"count": n}`` to hold it until ``n`` streams reached that barrier (several answers
streamed in step, chunk by chunk).

A turn is the next one added (:meth:`FakeGemini.add`), or one added for a request
whose last content holds a given text (:meth:`FakeGemini.add_for`: the answer of
one conversation among several asking at once). ``most_streaming`` is the most
answers that were streaming at once.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = list[Any]


def text_turn(*pieces: str) -> Turn:
    return [[{"text": p}] for p in pieces]


def call_turn(name: str, args: dict[str, Any]) -> Turn:
    return [[{"functionCall": {"name": name, "args": args}}]]


class FakeGemini:
    def __init__(self) -> None:
        self.turns: deque[Turn] = deque()
        self.requests: list[dict[str, Any]] = []
        self.gates: dict[str, threading.Event] = {}
        self.routed: list[tuple[str, Turn]] = []
        self.barriers: dict[str, threading.Barrier] = {}
        self.holding: dict[str, int] = {}
        self.streaming = 0
        self.most_streaming = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append({"path": self.path, "body": body})
                if ":countTokens" in self.path:
                    self._json({"totalTokens": 10})
                elif ":streamGenerateContent" in self.path:
                    self._stream(fake.next_turn(body))
                elif ":generateContent" in self.path:
                    self._json(fake.side_answer(body))
                else:
                    self._json({"error": {"code": 404, "message": self.path}}, 404)

            def do_GET(self) -> None:
                self._json({"models": []})

            def _json(self, payload: Any, status: int = 200) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, turn: Turn) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                chunks = [c for c in turn if isinstance(c, list)]
                last = chunks[-1] if chunks else None
                fake.counted(1)
                try:
                    for chunk in turn:
                        if isinstance(chunk, dict) and "delay" in chunk:
                            threading.Event().wait(float(chunk["delay"]))
                            continue
                        if isinstance(chunk, dict) and "wait" in chunk:
                            fake.hold(str(chunk["wait"]))
                            continue
                        if isinstance(chunk, dict) and "barrier" in chunk:
                            fake.barrier(str(chunk["barrier"]), int(chunk["count"]))
                            continue
                        candidate: dict[str, Any] = {
                            "content": {"role": "model", "parts": chunk},
                            "index": 0,
                        }
                        if chunk is last:
                            candidate["finishReason"] = "STOP"
                        payload = {
                            "candidates": [candidate],
                            "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 6},
                            "modelVersion": "gemini-fake",
                        }
                        self.wfile.write(f"data: {json.dumps(payload)}\r\n\r\n".encode())
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, threading.BrokenBarrierError):
                    pass
                finally:
                    fake.counted(-1)
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def gate(self, name: str) -> threading.Event:
        with self._lock:
            return self.gates.setdefault(name, threading.Event())

    def release(self, name: str) -> None:
        self.gate(name).set()

    def hold(self, name: str) -> None:
        """A stream waits at gate ``name`` (counted by :meth:`held`)."""
        with self._lock:
            self.holding[name] = self.holding.get(name, 0) + 1
        try:
            self.gate(name).wait(60)
        finally:
            with self._lock:
                self.holding[name] -= 1

    def held(self, name: str) -> int:
        """How many streams wait at gate ``name`` now."""
        with self._lock:
            return self.holding.get(name, 0)

    def barrier(self, name: str, count: int) -> None:
        with self._lock:
            barrier = self.barriers.setdefault(name, threading.Barrier(count))
        barrier.wait(60)

    def counted(self, step: int) -> None:
        with self._lock:
            self.streaming += step
            self.most_streaming = max(self.most_streaming, self.streaming)

    def add(self, *turns: Turn) -> None:
        with self._lock:
            self.turns.extend(turns)

    def add_for(self, needle: str, turn: Turn) -> None:
        """``turn`` answers the first stream request whose last content holds ``needle``
        (before the turns :meth:`add` queued)."""
        with self._lock:
            self.routed.append((needle, turn))

    def next_turn(self, body: dict[str, Any] | None = None) -> Turn:
        last = json.dumps((body or {}).get("contents", [{}])[-1:])
        with self._lock:
            for i, (needle, turn) in enumerate(self.routed):
                if needle in last:
                    del self.routed[i]
                    return turn
            if self.turns:
                return self.turns.popleft()
        return text_turn("(the fake model has no scripted answer)")

    def side_answer(self, body: dict[str, Any]) -> dict[str, Any]:
        # Side requests (next-speaker checks, summaries, ...): a short JSON-ish
        # answer that parses as "the user speaks next".
        text = json.dumps({"reasoning": "done", "next_speaker": "user"})
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 6},
        }

    def stream_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if ":streamGenerateContent" in r["path"]]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        for gate in self.gates.values():
            gate.set()
        for barrier in self.barriers.values():
            barrier.abort()
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def fake_gemini() -> Iterator[FakeGemini]:
    fake = FakeGemini()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
