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
