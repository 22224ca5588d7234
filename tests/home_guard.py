"""The user's real home is never written by a test (issue 32 item 2).

Two halves, both wired in conftest.py:

- :func:`isolate`, once per run (in the process that starts pytest, before any
  test and before pytest-xdist starts its workers, which inherit it and each take
  a folder of their own in it, :func:`isolate_worker`): ``HOME`` and
  the ``XDG_*`` folders of this process, and so of every child process a test
  starts with the test's own environment, point into a private folder; the
  Gemini CLI's own ``GEMINI_CLI_HOME`` is dropped. Read-only configuration a child
  may need to reach a package registry (npm's ``~/.npmrc``, pip's ``pip.conf``) is
  still read where it is, never written.
- :func:`untouched`, a session fixture of every test process: the real home's
  ``.gemini``, ``.config`` and ``.local`` (and any ``XDG_*_HOME`` set outside) are
  listed before the first test and after the last; any difference fails the run,
  as an error of the last test, naming what changed.

The real home is ``$HOME`` as pytest found it, or ``GEMINI_COMPANION_TESTS_REAL_HOME``
when set (the guard's own test points it at a folder of its own).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REAL_HOME = "GEMINI_COMPANION_TESTS_REAL_HOME"
"""The real home, as the run found it (its workers read it here)."""
WATCHED = (".gemini", ".config", ".local")
XDG_HOMES = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")
_PRIVATE = "GEMINI_COMPANION_TESTS_PRIVATE_HOME"

Listing = dict[str, tuple[str, int, int]]


def watched_roots() -> list[Path]:
    """The folders no test may write: in the real home(s), and any XDG folder that
    was set outside pytest (kept in ``REAL_HOME``'s companions by :func:`isolate`)."""
    home = os.environ.get(REAL_HOME) or os.path.expanduser("~")
    roots = [Path(home) / name for name in WATCHED]
    for name in XDG_HOMES:
        outside = os.environ.get(f"GEMINI_COMPANION_TESTS_REAL_{name}")
        if outside:
            roots.append(Path(outside))
    return roots


NOT_OURS = frozenset({"swap", "shada", "undo", "view", "sessions"})
"""Folders of Neovim's own (``nvim/swap``, ``nvim/shada``, ...) that the user's
running Neovim writes while the suite runs: not watched, or an editor left open
beside ``scripts/test`` would fail the run. Neovim's log stays watched: a Neovim
the suite starts without its private home writes there."""


def _users_editor(folder: str, name: str) -> bool:
    return name in NOT_OURS and os.path.basename(folder) == "nvim"


def listing(roots: list[Path]) -> Listing:
    """Every file and folder under ``roots`` (the roots included, also when absent):
    kind, size and modification time."""
    found: Listing = {}
    for root in roots:
        if not root.exists() and not root.is_symlink():
            found[str(root)] = ("absent", 0, 0)
            continue
        for folder, dirs, files in os.walk(root, onerror=lambda _e: None):
            dirs[:] = [d for d in dirs if not _users_editor(folder, d)]
            for name in [".", *dirs, *files]:
                path = os.path.normpath(os.path.join(folder, name))
                if name != "." or path == str(root):
                    try:
                        st = os.lstat(path)
                    except OSError:
                        continue
                    if os.path.isdir(path):  # its entries say what changed in it
                        found[path] = ("dir", 0, 0)
                    else:
                        found[path] = ("file", st.st_size, st.st_mtime_ns)
    return found


def changes(before: Listing, after: Listing) -> list[str]:
    """What differs, one line each: created, removed or changed paths."""
    lines = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if old is None or old[0] == "absent":
            lines.append(f"created: {path}")
        elif new is None or new[0] == "absent":
            lines.append(f"removed: {path}")
        else:
            lines.append(f"changed: {path}")
    return lines


def isolate() -> Path | None:
    """Point this process's (and so its children's) home and XDG folders at a fresh
    private folder; returns it (None in a run started by a test run, which keeps
    the first one's)."""
    if os.environ.get(_PRIVATE):
        return None
    os.environ.setdefault(REAL_HOME, os.path.expanduser("~"))
    real = Path(os.environ[REAL_HOME])
    for name in XDG_HOMES:
        if os.environ.get(name):
            os.environ[f"GEMINI_COMPANION_TESTS_REAL_{name}"] = os.environ[name]
    private = Path(tempfile.mkdtemp(prefix="gemini-companion-tests-home-"))
    config = Path(os.environ.get("XDG_CONFIG_HOME") or real / ".config")
    # Read, never written: how to reach the package registries.
    if (real / ".npmrc").is_file():
        os.environ.setdefault("NPM_CONFIG_USERCONFIG", str(real / ".npmrc"))
    if (config / "pip" / "pip.conf").is_file():
        os.environ.setdefault("PIP_CONFIG_FILE", str(config / "pip" / "pip.conf"))
    os.environ[_PRIVATE] = str(private)
    _point_at(private)
    os.environ.pop("GEMINI_CLI_HOME", None)
    return private


def isolate_worker(name: str) -> None:
    """A pytest-xdist worker's own home, inside the run's private folder (tests in
    parallel never share one)."""
    private = os.environ.get(_PRIVATE)
    if private:
        _point_at(Path(private) / name)


def _point_at(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    os.environ.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
        }
    )


def release(private: Path) -> None:
    """Remove the private home :func:`isolate` made."""
    shutil.rmtree(private, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def real_home_untouched() -> Iterator[None]:
    """Fails the run (as an error of its last test) when anything under the real
    home's watched folders was created, changed or removed while tests ran."""
    roots = watched_roots()
    before = listing(roots)
    yield
    found = changes(before, listing(roots))
    if found:
        shown = "\n  ".join(found[:40])
        more = f"\n  ... and {len(found) - 40} more" if len(found) > 40 else ""
        pytest.fail(
            f"tests wrote into the user's real home (tests must keep to their own"
            f" temporary folders):\n  {shown}{more}",
            pytrace=False,
        )
