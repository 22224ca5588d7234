"""The agent panel's own msgpack-rpc connection to Neovim (agent/nvim_channel.py,
issue 25 items 2 and 3): batches go over it from the session's loop, with no hop
through pynvim's thread, and through the editor (pynvim) once it is gone. A real
Neovim at the other end, reached at its own server address as the host reaches
it (``$NVIM``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

import pytest
from gemini_companion.agent.nvim_channel import NvimChannel
from gemini_companion.agent.view import PanelView
from harness import Nvim


class Editor:
    def __init__(self) -> None:
        self.batches: list[list[dict[str, Any]]] = []

    def agent_draw(self, ops: list[dict[str, Any]]) -> concurrent.futures.Future[Any]:
        self.batches.append(list(ops))
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_result(None)
        return future


def test_batches_go_over_the_panels_own_connection_then_through_the_editor_once_closed(
    nvim: Nvim,
) -> None:
    address = nvim.lua("return vim.v.servername")
    host = nvim.lua("return vim.fn.jobpid(require('gemini_companion.host').channel)")
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


BUSY = "local t = vim.uv.hrtime() while vim.uv.hrtime() - t < 3e8 do end"
COUNT_BATCHES = (
    "local t = require('gemini_companion.agent.transcript') local apply = t._apply"
    " _G.test_batches = 0"
    " t._apply = function(ops) _G.test_batches = _G.test_batches + 1 return apply(ops) end"
)


def test_a_flood_while_neovim_is_busy_joins_one_waiting_batch_and_loses_nothing(
    nvim: Nvim,
) -> None:
    """Neovim's answers are read only when the next batch is ready (nvim_channel.py):
    while a batch waits to be drawn, every chunk that arrives joins the next one,
    in order, and nothing is lost; Neovim never gets a batch per chunk."""
    address = nvim.lua("return vim.v.servername")
    host = nvim.lua("return vim.fn.jobpid(require('gemini_companion.host').channel)")
    editor = Editor()

    async def main() -> None:
        view = PanelView(editor)  # type: ignore[arg-type]
        await view.connect(address, host)
        view.block(1, ["", ""], "message")
        await view.drained()
        await view._channel.request("nvim_exec_lua", [COUNT_BATCHES, []])  # type: ignore[union-attr]
        other = await NvimChannel.connect(address)
        assert other is not None
        busy = other.request("nvim_exec_lua", [BUSY, []])  # Neovim runs Lua for 0.3 s
        for i in range(300):
            view.append(1, f"<{i}>")
            await asyncio.sleep(0)  # each chunk in a turn of the loop of its own
        await view.drained()
        await busy
        other.close()
        view.close()

    asyncio.run(main())
    assert editor.batches == []
    assert nvim.lua("return _G.test_batches") <= 3
    text = "\n".join(nvim.lua("return require('gemini_companion.agent.transcript').lines()"))
    assert "".join(f"<{i}>" for i in range(300)) in text


def test_chunks_drawn_one_by_one_each_go_when_they_come_and_all_are_drawn(nvim: Nvim) -> None:
    """A steady stream: each chunk arrives after the last is drawn (its answer is not
    watched for, but read when the next one goes): one batch each, none held back."""
    address = nvim.lua("return vim.v.servername")
    host = nvim.lua("return vim.fn.jobpid(require('gemini_companion.host').channel)")

    last_line = "local l = require('gemini_companion.agent.transcript').lines() return l[#l]"

    async def main() -> list[str]:
        view = PanelView(Editor())  # type: ignore[arg-type]
        await view.connect(address, host)
        other = await NvimChannel.connect(address)
        assert other is not None

        async def drawn(text: str) -> str:
            while not (line := await other.request("nvim_exec_lua", [last_line, []])).endswith(
                text
            ):
                pass
            return str(line)

        view.block(1, ["", ""], "message")
        shown = []
        for i in range(20):
            view.append(1, f"[{i}]")
            # Drawn before the next goes: the view has not read Neovim's answer yet.
            shown.append(await asyncio.wait_for(drawn(f"[{i}]"), 10))
        await view.drained()
        other.close()
        view.close()
        return shown

    shown = asyncio.run(main())
    assert [s.endswith(f"[{i}]") for i, s in enumerate(shown)] == [True] * 20
