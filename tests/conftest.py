from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_setup import a2a_setup
from fake_gemini import FakeGemini, fake_gemini
from harness import ROOT, Nvim, Sandbox, empty_manifest, remove_short_dir
from home_guard import isolate, isolate_worker, real_home_untouched, release
from ide_client import ensure_interop_packages

__all__ = ["real_home_untouched"]  # the guard of the user's home: every test process

_private_home: list[Path] = []  # the one isolate() made, in the process that made it


def pytest_configure(config: pytest.Config) -> None:
    """HOME and the XDG folders of the run (and of its xdist workers and every child
    they start) point into a private folder: tests never touch the real home
    (home_guard.py, issue 32 item 2)."""
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        isolate_worker(str(worker["workerid"]))
    elif (private := isolate()) is not None:
        _private_home.append(private)


# The modules that take longest (minutes: fresh installs, pip, the real CLIs), run
# first under pytest-xdist: each worker takes a module at a time (--dist loadfile),
# and one of these started last would keep one worker busy after the other is done.
LONGEST_FIRST = (
    "test_agent_acp.py",  # a minute of it waits for the CLI's clock (handshake.py)
    "test_agent_resume_words.py",  # the same wait
    "test_agent_history_restart.py",  # the same wait, and three Neovims in turn
    "test_plugin.py",
    "test_agent_resume.py",
    "test_hardening.py",
    "test_agent_a2a_home.py",
    "test_agent_a2a.py",
    "test_companion.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # the same order in every worker
        rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_unconfigure(config: pytest.Config) -> None:
    while _private_home:
        release(_private_home.pop())


@pytest.fixture(scope="session")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty remote-plugin manifest: the plugin needs none (its Python side is a
    job, host.lua), and the user's own is kept out."""
    return empty_manifest(tmp_path_factory.mktemp("manifest") / "rplugin.vim")


@pytest.fixture
def sandbox(tmp_path: Path, manifest: Path) -> Iterator[Sandbox]:
    """The test's own HOME, XDG folders and TMPDIR (harness.Sandbox); its short
    runtime folder (Neovim's server socket) is removed after the test."""
    box = Sandbox.create(tmp_path / "sandbox", manifest)
    yield box
    remove_short_dir(Path(box.env["XDG_RUNTIME_DIR"]))


@pytest.fixture
def nvim_factory(sandbox: Sandbox) -> Iterator[Callable[..., Nvim]]:
    """Start headless Neovims in the sandbox; all are closed after the test."""
    started: list[Nvim] = []

    def start(**kwargs: Any) -> Nvim:
        nvim = Nvim(kwargs.pop("in_sandbox", sandbox), **kwargs)
        started.append(nvim)
        return nvim

    yield start
    for nvim in started:
        nvim.close()


@pytest.fixture
def nvim(nvim_factory: Callable[..., Nvim]) -> Nvim:
    """A Neovim whose companion started by itself on VimEnter."""
    instance = nvim_factory()
    instance.wait_running()
    return instance


@pytest.fixture(scope="session")
def interop() -> None:
    """The pinned Gemini CLI npm packages (installed on first use)."""
    ensure_interop_packages()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty folder for the test's Neovim to start in."""
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    """The fake Gemini API on loopback (the model is the one fake); tests whose agent
    is a fake of its own define their own ``fake``."""
    with fake_gemini() as f:
        yield f


@pytest.fixture
def agent_nvim(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, workspace: Path, tmp_path: Path
) -> Nvim:
    """A Neovim in ``workspace`` whose panel starts the real A2A server against ``fake``."""
    nvim = nvim_factory(cwd=workspace, setup=a2a_setup(fake, tmp_path / "home"))
    nvim.wait_running()
    return nvim


SCRIPTED = f"{ROOT / 'tests' / 'agent_fakes' / 'scripted_transport.py'}:ScriptedTransport"


@pytest.fixture
def scripted_nvim(nvim_factory: Callable[..., Nvim], tmp_path: Path) -> Nvim:
    """A Neovim in a fresh folder whose panel drives the real host with the scripted
    transport (tests/agent_fakes/scripted_transport.py), logging to
    ``tmp_path / "transport.jsonl"``."""
    work = tmp_path / "work"
    work.mkdir()
    nvim = nvim_factory(
        cwd=work,
        env={
            "GEMINI_COMPANION_TEST_TRANSPORT": SCRIPTED,
            "SCRIPTED_TRANSPORT_LOG": str(tmp_path / "transport.jsonl"),
        },
    )
    nvim.wait_running()
    return nvim
