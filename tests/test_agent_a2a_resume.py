"""What the real ``@google/gemini-cli-a2a-server`` 0.25.2 does when the stream of
a running turn drops, and what the A2A transport makes of it: the server (run
offline against tests/fake_gemini.py, the model being the one fake) is reached
through a loopback TCP relay the test can cut, as a lost connection would."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from agent_setup import SERVER_BIN
from fake_gemini import fake_gemini, text_turn
from gemini_companion.agent.a2a.transport import A2ATransport
from gemini_companion.agent.model import Notice, Prompt
from gemini_companion.agent.transport import TransportContext
from test_agent_rfc import Editor, Sink

pytestmark = pytest.mark.skipif(
    not SERVER_BIN.exists(), reason="scripts/setup installs the A2A server (npm)"
)


class Relay:
    """A TCP relay on 127.0.0.1 to ``port``; :meth:`cut` closes the connections it
    carries (new ones still pass)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers += [writer, up_writer]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        for writer in self.writers:
            writer.transport.abort()
        self.writers.clear()

    def close(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()


async def until(check: object, what: str, timeout: float = 120) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():  # type: ignore[operator]
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


def test_a_dropped_stream_on_the_real_server_ends_its_turn_and_the_task_goes_on(
    tmp_path: Path,
) -> None:
    workspace, home = tmp_path / "work", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    with fake_gemini() as fake:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "GEMINI_API_KEY": "test-key",
            "GOOGLE_GEMINI_BASE_URL": fake.url,
        }

        def context(options: dict[str, object]) -> TransportContext:
            return TransportContext(
                workspace=str(workspace),
                env=env,
                editor=Editor(),  # type: ignore[arg-type]
                options=options,
            )

        async def main() -> None:
            server = A2ATransport(context({"cmd": [str(SERVER_BIN)]}))
            await server.start(Sink())
            port = int(server.health()["url"].rsplit(":", 1)[1])
            relay = Relay(port)
            t, sink = A2ATransport(context({"url": await relay.start()})), Sink()
            # The started server answers its host alone (loopback.cjs): the relayed
            # client carries its secret and names it as the host does.
            t.headers = {"Authorization": f"Bearer {server.secret}", "Host": f"127.0.0.1:{port}"}
            try:
                await t.start(sink)
                fake.add([[{"text": "Partial answer"}], {"wait": "held"}, [{"text": " never"}]])
                turn = asyncio.create_task(t.prompt(Prompt("tell me a long story")))
                await until(lambda: "Partial answer" in sink.text(), "the first words")
                task_id = t.task_id
                relay.cut()
                await asyncio.wait_for(turn, 120)
                fake.release("held")
                notices = [e.text for e in sink.events if isinstance(e, Notice)]
                assert any("dropped while task" in n for n in notices), notices
                # 0.25.2 cancels the turn whose connection closed; the reconnect
                # (tasks/resubscribe, then tasks/get) shows that, not an error.
                assert notices[-1] == f"Reconnected to task {task_id}: it is input-required."
                assert "never" not in sink.text()
                assert sink.text().count("Execution aborted by client.") == 1
                assert t.connected and t.task_id == task_id

                fake.add(text_turn("Still here."))
                await asyncio.wait_for(t.prompt(Prompt("are you there")), 120)
                assert sink.text().endswith("Still here.")
                assert t.task_id == task_id  # the same task goes on
            finally:
                relay.close()
                await t.stop()
                await server.stop()

        asyncio.run(main())
