"""The agent panel's own msgpack-rpc connection to Neovim (agent/nvim_channel.py,
issue 25 items 2 and 3): batches go over it from the session's loop, with no hop
through pynvim's thread, and through the editor (pynvim) once it is gone. A real
Neovim at the other end, reached at its own server address as the host reaches
it (``$NVIM``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_setup import transcript
from gemini_companion.agent.nvim_channel import NvimChannel
from gemini_companion.agent.view import PanelView
from harness import Nvim, wait_for


class Editor:
    def __init__(self) -> None:
        self.batches: list[list[dict[str, Any]]] = []

    def agent_draw(self, ops: list[dict[str, Any]]) -> concurrent.futures.Future[Any]:
        self.batches.append(list(ops))
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_result(None)
        return future


def endpoint(nvim: Nvim) -> tuple[str, int]:
    """Neovim's RPC address and its host's pid: what the panel's own connection
    (view.connect) is given."""
    address = nvim.lua("return vim.v.servername")
    host = nvim.lua("return vim.fn.jobpid(require('gemini_companion.host').channel)")
    return str(address), int(host)


def test_batches_go_over_the_panels_own_connection_then_through_the_editor_once_closed(
    nvim: Nvim,
) -> None:
    address, host = endpoint(nvim)
    editor = Editor()

    async def main() -> None:
        view = PanelView(editor)  # type: ignore[arg-type]
        await view.connect(address, host)
        view.block(1, ["", ""], "message")
        view.append(1, "over the panel's own connection")
        await asyncio.sleep(0)
        view.append(1, ", in two batches")
        await view.drained()
        assert editor.batches == []
        view.close()
        view.append(1, " and through the editor")
        await view.drained()

    asyncio.run(main())
    lines = nvim.lua("return require('gemini_companion.agent.transcript').lines()")
    assert "over the panel's own connection, in two batches" in lines
    assert [op["text"] for batch in editor.batches for op in batch] == [" and through the editor"]


def test_neovims_errors_and_a_closed_connection_fail_the_request_not_the_panel(
    nvim: Nvim,
) -> None:
    address = nvim.lua("return vim.v.servername")

    async def main() -> None:
        channel = await NvimChannel.connect(address)
        assert channel is not None
        assert await channel.request("nvim_exec_lua", ["return 1 + ...", [41]]) == 42
        with pytest.raises(RuntimeError, match="boom"):
            await channel.request("nvim_exec_lua", ["error('boom')", []])
        waiting = channel.request("nvim_exec_lua", ["return 1", []])
        channel.close()
        with pytest.raises(ConnectionError):
            await waiting
        with pytest.raises(ConnectionError):
            await channel.request("nvim_exec_lua", ["return 1", []])
        assert await NvimChannel.connect(address + ".nothing-here") is None
        assert await NvimChannel.connect("192.0.2.1:6666") is None  # only a local Neovim

    asyncio.run(main())


def test_a_neovim_whose_host_is_another_process_is_not_the_panels(nvim: Nvim) -> None:
    """``$NVIM`` inherited from another Neovim (this one started inside its
    terminal) names a Neovim that did not start this host: the panel draws through
    its editor, never there."""
    address = nvim.lua("return vim.v.servername")
    editor = Editor()

    async def main() -> None:
        view = PanelView(editor)  # type: ignore[arg-type]
        await view.connect(address)  # this process is not that Neovim's host
        view.block(1, ["", ""], "message")
        view.append(1, "not in that Neovim")
        await view.drained()

    asyncio.run(main())
    assert [op["op"] for batch in editor.batches for op in batch] == ["block", "append"]
    lines = nvim.lua("return require('gemini_companion.agent.transcript').lines()")
    assert "not in that Neovim" not in "\n".join(lines)


def hold(fifo: str) -> str:
    """Lua that holds Neovim's main loop (no request of any channel is answered)
    until the test writes a line to the named pipe ``fifo``; the test's opening of
    the pipe for writing returns once Neovim holds (it has opened it to read)."""
    return f"local f = io.open({json.dumps(fifo)}, 'r') f:read('*l') f:close()"


COUNT_BATCHES = (
    "local t = require('gemini_companion.agent.transcript') local apply = t._apply"
    " _G.test_batches = 0"
    " t._apply = function(ops) _G.test_batches = _G.test_batches + 1 return apply(ops) end"
)


def test_a_flood_while_neovim_is_busy_joins_one_waiting_batch_and_loses_nothing(
    nvim: Nvim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neovim's answers are read only when the next batch is ready (nvim_channel.py):
    while a batch waits to be drawn, every chunk that arrives joins the next one,
    in order, and nothing is lost; Neovim never gets a batch per chunk. (Batches
    go as soon as they may here: test_agent_acp_stream.py has the frame.)"""
    monkeypatch.setattr("gemini_companion.agent.view.FRAME", 0.0)
    address, host = endpoint(nvim)
    editor = Editor()
    fifo = tmp_path / "hold"
    os.mkfifo(fifo)

    async def main() -> None:
        view = PanelView(editor)  # type: ignore[arg-type]
        await view.connect(address, host)
        view.block(1, ["", ""], "message")
        await view.drained()
        await view._channel.request("nvim_exec_lua", [COUNT_BATCHES, []])  # type: ignore[union-attr]
        other = await NvimChannel.connect(address)
        assert other is not None
        held = other.request("nvim_exec_lua", [hold(str(fifo)), []])
        release = await asyncio.to_thread(open, fifo, "w")  # Neovim holds from now on
        for i in range(300):
            view.append(1, f"<{i}>")
            await asyncio.sleep(0)  # each chunk in a turn of the loop of its own
        release.write("go\n")
        release.close()
        await held
        await view.drained()
        other.close()
        view.close()

    asyncio.run(main())
    assert editor.batches == []
    # The first chunk's batch, sent as Neovim held; then one with the other 299.
    assert nvim.lua("return _G.test_batches") == 2
    text = "\n".join(nvim.lua("return require('gemini_companion.agent.transcript').lines()"))
    assert "".join(f"<{i}>" for i in range(300)) in text


def test_chunks_drawn_one_by_one_each_go_when_they_come_and_all_are_drawn(nvim: Nvim) -> None:
    """A steady stream: each chunk arrives after the last is drawn (its answer is not
    watched for, but read when the next one goes): one batch each, none held back."""
    address, host = endpoint(nvim)

    last_line = "local l = require('gemini_companion.agent.transcript').lines() return l[#l]"

    async def main() -> None:
        view = PanelView(Editor())  # type: ignore[arg-type]
        await view.connect(address, host)
        other = await NvimChannel.connect(address)
        assert other is not None

        async def drawn(text: str) -> None:
            while not (await other.request("nvim_exec_lua", [last_line, []])).endswith(text):
                pass

        view.block(1, ["", ""], "message")
        await view.drained()
        await other.request("nvim_exec_lua", [COUNT_BATCHES, []])
        for i in range(20):
            view.append(1, f"[{i}]")
            # Drawn before the next goes: the view has not read Neovim's answer yet.
            await asyncio.wait_for(drawn(f"[{i}]"), 10)
        await view.drained()
        other.close()
        view.close()

    asyncio.run(main())
    assert nvim.lua("return _G.test_batches") == 20  # one each: none held for the next


def _wait_for_hang_up(fd: int) -> None:
    """Until the other end of the socket ``fd`` has closed it (an event, not a delay)."""
    import select

    poller = select.poll()
    poller.register(fd, select.POLLRDHUP)
    assert poller.poll(10_000), "Neovim did not close the channel"


def test_a_batch_pushed_as_neovim_closes_the_panels_connection_is_drawn_through_the_editor(
    nvim: Nvim,
) -> None:
    """Neovim closes the panel's own connection while a batch is in flight: the next
    batch's flush reads the end of it, and that batch goes through the editor, not
    to the closed connection (where it was lost: never drawn, only an error logged)."""
    address, host = endpoint(nvim)
    editor = Editor()

    async def main() -> None:
        view = PanelView(editor)  # type: ignore[arg-type]
        await view.connect(address, host)
        channel = view._channel
        assert channel is not None
        info = await channel.request("nvim_get_api_info", [])
        view.block(1, ["first"], "message")
        await asyncio.sleep(0)  # sent; its answer is read when the next batch goes
        assert view._in_flight and editor.batches == []
        # Neovim closes that connection (another client asks it to).
        other = await NvimChannel.connect(address)
        assert other is not None
        await other.request("nvim_exec_lua", ["vim.fn.chanclose(...)", [info[0]]])
        other.close()
        _wait_for_hang_up(channel._fd)
        view.block(2, ["second"], "message")
        await asyncio.wait_for(view.drained(), 10)
        assert channel.closed
        view.append(2, " and after")
        await asyncio.wait_for(view.drained(), 10)
        view.close()

    asyncio.run(main())
    assert editor.batches == [
        [{"op": "block", "id": 2, "lines": ["second"], "kind": "message"}],
        [{"op": "append", "id": 2, "prefix": "", "text": " and after"}],
    ]


def test_localhost_resolving_first_to_a_family_the_host_lacks_connects_to_the_next(
    nvim: Nvim, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$NVIM`` is localhost:PORT on a host with IPv6 disabled, where localhost still
    resolves to ::1 first: the socket of that family cannot be made, and 127.0.0.1
    (where Neovim listens) is tried next, not the channel given up."""
    import socket

    port = nvim.lua("return vim.fn.serverstart('127.0.0.1:0')").rpartition(":")[2]

    async def main() -> None:
        loop = asyncio.get_running_loop()
        resolve = loop.getaddrinfo

        async def getaddrinfo(*args: Any, **kwargs: Any) -> Any:
            infos = await resolve(*args, **kwargs)
            # A family no kernel has (EAFNOSUPPORT from socket()), resolved first.
            return [(255, socket.SOCK_STREAM, 0, "", ("::1", int(port), 0, 0)), *infos]

        monkeypatch.setattr(loop, "getaddrinfo", getaddrinfo)
        channel = await NvimChannel.connect(f"localhost:{port}")
        assert channel is not None
        assert await channel.request("nvim_exec_lua", ["return 1 + ...", [41]]) == 42
        channel.close()

    asyncio.run(main())


def test_a_failing_answer_callback_is_logged_and_the_connection_stays_open(
    nvim: Nvim,
) -> None:
    """A callback of an answer that raises is the caller's failure, not the
    connection's: later requests are answered (it was taken for bytes that are not
    msgpack-rpc, and the connection closed)."""
    address = nvim.lua("return vim.v.servername")

    def boom(*_args: Any) -> Any:
        raise RuntimeError("a callback's own bug")

    async def main() -> None:
        channel = await NvimChannel.connect(address)
        assert channel is not None
        channel.call("nvim_exec_lua", ["return 1", []], boom)
        assert await channel.request("nvim_exec_lua", ["return 2", []]) == 2
        assert not channel.closed
        channel.close()

    asyncio.run(main())


def test_a_failing_state_builder_leaves_the_state_out_of_a_batch_not_the_panel_stalled(
    nvim: Nvim,
) -> None:
    """The agent's state failing to build (as the answer to the batch in flight sends
    the next) is logged and that batch goes without it: the panel goes on drawing
    over its connection (it stalled, the batch in flight forever)."""
    address, host = endpoint(nvim)
    editor = Editor()

    def boom() -> Any:
        raise RuntimeError("a state builder's own bug")

    async def main() -> None:
        view = PanelView(editor)  # type: ignore[arg-type]
        await view.connect(address, host)
        view.block(1, ["", ""], "message")
        await asyncio.sleep(0)  # in flight
        view.state(boom)
        view.append(1, "drawn although the state failed")
        await asyncio.wait_for(view.drained(), 10)
        assert view._channel is not None and not view._channel.closed
        view.append(1, ", and on")
        await asyncio.wait_for(view.drained(), 10)
        view.close()

    asyncio.run(main())
    assert editor.batches == []
    lines = nvim.lua("return require('gemini_companion.agent.transcript').lines()")
    assert "drawn although the state failed, and on" in lines


def test_a_batch_pushed_after_neovims_end_is_gone_unanswered_is_drawn_through_the_editor() -> None:
    """Neovim's end of the panel's connection goes away without answering the batch
    in flight (a socket pair plays Neovim): the next batch's flush reads the end of
    the connection, and that batch goes through the editor (it went to the closed
    connection and was lost)."""
    import socket

    editor = Editor()
    ours, neovims = socket.socketpair()

    async def main() -> None:
        ours.setblocking(False)
        view = PanelView(editor)  # type: ignore[arg-type]
        view._channel = NvimChannel(ours)
        view._channel_thread = threading.get_ident()
        view.block(1, ["first"], "message")
        await asyncio.sleep(0)  # sent, its answer read when the next batch goes
        assert neovims.recv(65536)
        neovims.close()
        view.block(2, ["second"], "message")
        await asyncio.wait_for(view.drained(), 10)
        view.close()

    asyncio.run(main())
    assert editor.batches == [[{"op": "block", "id": 2, "lines": ["second"], "kind": "message"}]]


def test_a_neovim_without_a_server_address_draws_the_panel_through_the_editor(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    """A Neovim whose server socket could not be made (its runtime folder is too deep
    for a Unix socket's path, as under a deep TMPDIR): v:servername is empty or names
    no socket, there is no connection of the panel's own, and the agent's answer is
    drawn all the same, through the editor."""
    from conftest import SCRIPTED

    deep = tmp_path / ("d" * 110)
    deep.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    nvim = nvim_factory(
        cwd=work,
        env={
            "XDG_RUNTIME_DIR": str(deep),
            "GEMINI_COMPANION_TEST_TRANSPORT": SCRIPTED,
            "SCRIPTED_TRANSPORT_LOG": str(tmp_path / "transport.jsonl"),
        },
    )
    address = nvim.lua("return vim.v.servername")
    assert not address or not Path(address).is_socket(), address
    nvim.wait_running()
    nvim.api.command("GeminiAgent stream 1000")
    wait_for(lambda: transcript(nvim).count("x" * 99) == 10, 30, "the agent's answer, all of it")
    assert "no channel of the panel's own to Neovim" in nvim.sandbox.log_file.read_text()
