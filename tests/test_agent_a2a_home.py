"""The A2A server's private Gemini home (gemini_home.py: a token file and chat logs)
goes in every way Neovim or its Python host can end, and one left by processes
that could not remove it goes at the next start: the real A2A server 0.25.2
against the fake Gemini API, started by a real Neovim."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_setup import START, a2a_setup, wait_agent, wait_transcript
from fake_gemini import FakeGemini, text_turn
from harness import Nvim, process_env, wait_for
from test_agent_a2a import alive
from test_agent_a2a import pytestmark as a2a_server_installed

pytestmark = a2a_server_installed


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(") ", 1)[1].split()[1])


def started(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, workspace: Path, home: Path, word: str
) -> tuple[Nvim, int, Path]:
    """A Neovim whose panel started the A2A server and had one answer: the Neovim,
    the server's pid and its private home."""
    nvim = nvim_factory(cwd=workspace, setup=a2a_setup(fake, home))
    nvim.wait_running(60)  # other servers may be starting: a busy machine
    fake.add(text_turn(f"Answer {word}."))
    nvim.api.command(f"GeminiAgent {word}")
    wait_transcript(nvim, f"Answer {word}.", START)
    pid = wait_agent(nvim, "the server's pid", lambda s: bool(s.get("pid")))["pid"]
    private = Path(process_env(pid)["GEMINI_CLI_HOME"])
    assert private.is_dir() and private.name.startswith("gemini-companion-a2a-")
    assert (private / ".gemini" / "extensions" / "gemini-companion-nvim").is_dir()
    return nvim, pid, private


def kill_neovim(nvim: Nvim, server: int) -> None:
    os.kill(nvim.pid, signal.SIGKILL)


def kill_host(nvim: Nvim, server: int) -> None:
    host = parent_of(server)
    assert host != nvim.pid
    os.kill(host, signal.SIGKILL)


def quit_all(nvim: Nvim, server: int) -> None:
    nvim.close()  # :qa!


@pytest.mark.parametrize(
    "end",
    [quit_all, kill_neovim, kill_host],
    ids=[":qa", "SIGKILL of Neovim", "SIGKILL of the host"],
)
def test_the_private_home_goes_however_neovim_or_its_host_ends(
    nvim_factory: Callable[..., Nvim],
    fake: FakeGemini,
    workspace: Path,
    tmp_path: Path,
    end: Callable[[Nvim, int], None],
) -> None:
    home = tmp_path / "home"
    (home / ".gemini" / "extensions" / "theirs").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text("{}")
    nvim, server, private = started(nvim_factory, fake, workspace, home, "one")
    assert (private / ".gemini" / "settings.json").is_symlink()
    end(nvim, server)
    wait_for(lambda: not alive(server), 30, "the A2A server to stop")
    wait_for(lambda: not private.exists(), 30, f"{private} to be removed")
    # The user's own home, which the private one links to, is left alone.
    assert (home / ".gemini" / "settings.json").read_text() == "{}"
    assert (home / ".gemini" / "extensions" / "theirs").is_dir()


def test_a_home_no_process_could_remove_goes_at_the_next_start_and_live_ones_stay(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    live_nvim, live_server, live = started(nvim_factory, fake, workspace, home, "live")
    _, server, stale = started(nvim_factory, fake, workspace, home, "doomed")
    # Host and server end with no chance to clean up: the server is stopped (the
    # signal its parent's death sends waits), the host killed, then the server.
    host = parent_of(server)
    os.kill(server, signal.SIGSTOP)
    os.kill(host, signal.SIGKILL)
    wait_for(lambda: not alive(host), 30, "the host to die")
    os.kill(server, signal.SIGKILL)
    wait_for(lambda: not alive(server), 30, "the server to die")
    assert stale.is_dir()

    _, _, fresh = started(nvim_factory, fake, workspace, home, "next")
    assert not stale.exists()
    assert fresh.is_dir() and live.is_dir()  # another Neovim's home is in use: kept
    assert alive(live_server)
    fake.add(text_turn("Still here."))
    live_nvim.api.command("GeminiAgent still there")
    wait_transcript(live_nvim, "Still here.")
