"""Stale discovery files: what a server of ours removes at its start, and what it
leaves alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gemini_companion.discovery import IDE_NAME, remove_stale_files


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _write(folder: Path, name: str, ide: str = IDE_NAME) -> Path:
    path = folder / name
    path.write_text(json.dumps({"port": 1, "ideInfo": {"name": ide, "displayName": ide}}))
    return path


def test_files_of_dead_processes_go_the_agents_legacy_named_one_included(
    tmp_path: Path,
) -> None:
    dead, alive = _dead_pid(), os.getpid()
    ours_dead = _write(tmp_path, f"gemini-ide-server-{dead}-4000.json")
    agent_dead = _write(tmp_path, f"gemini-ide-server-{dead}.json")
    agent_alive = _write(tmp_path, f"gemini-ide-server-{alive}.json")
    foreign_dead = _write(tmp_path, f"gemini-ide-server-{dead}-4001.json", ide="vscode")
    other = _write(tmp_path, f"gemini-ide-server-{dead}.json.bak")

    removed = remove_stale_files(str(tmp_path), own_pid=_dead_pid() + 10**6)

    assert sorted(removed) == sorted([str(ours_dead), str(agent_dead)])
    assert not ours_dead.exists() and not agent_dead.exists()
    assert agent_alive.exists() and foreign_dead.exists() and other.exists()
