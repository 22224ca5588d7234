"""The A2A server's private Gemini home (agent/a2a/gemini_home.py): the user's
``.gemini`` seen through links, Neovim's tools added as an extension, nothing
written into the user's home, everything gone on removal. The end-to-end proof
(the real server calling Neovim's tools) is in test_agent_a2a.py."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from gemini_companion.agent.a2a.gemini_home import EXTENSION_NAME, PrivateHome, remove_stale
from gemini_companion.agent.mcp_servers import settings_mcp_server

TOOLS = {
    "type": "http",
    "name": "nvim",
    "url": "http://127.0.0.1:4321/tools",
    "headers": [{"name": "Authorization", "value": "Bearer secret"}],
}


def user_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    gemini = home / ".gemini"
    (gemini / "extensions" / "theirs").mkdir(parents=True)
    (gemini / "extensions" / EXTENSION_NAME).mkdir()  # a `gemini extensions link` of ours
    (gemini / "settings.json").write_text('{"mcpServers": {"db": {"command": "db-mcp"}}}')
    (gemini / "oauth_creds.json").write_text("{}")
    (home / ".env").write_text("GEMINI_API_KEY=x\n")
    return home


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): (p.read_text() if p.is_file() else "")
        for p in sorted(root.rglob("*"))
    }


def test_the_private_home_links_the_users_and_adds_neovims_tools(tmp_path: Path) -> None:
    home = user_home(tmp_path)
    before = snapshot(home)
    private = PrivateHome.create({"HOME": str(home)}, [TOOLS], "1.2.3")
    root = Path(private.path)
    try:
        assert stat.S_IMODE(root.stat().st_mode) == 0o700
        gemini = root / ".gemini"
        for name in ("settings.json", "oauth_creds.json"):
            assert os.readlink(gemini / name) == str(home / ".gemini" / name)
        assert os.readlink(root / ".env") == str(home / ".env")
        assert os.readlink(gemini / "extensions" / "theirs") == str(
            home / ".gemini" / "extensions" / "theirs"
        )
        ours = gemini / "extensions" / EXTENSION_NAME
        assert not ours.is_symlink()  # the link-installed one is replaced (0.25.2 cannot read it)
        manifest_path = ours / "gemini-extension.json"
        assert stat.S_IMODE(manifest_path.stat().st_mode) == 0o600  # it holds the token
        manifest = json.loads(manifest_path.read_text())
        assert manifest["name"] == EXTENSION_NAME and manifest["version"] == "1.2.3"
        entry = manifest["mcpServers"]["nvim"]
        assert entry["httpUrl"] == TOOLS["url"]
        assert entry["headers"] == {"Authorization": "Bearer secret"}
        assert "trust" not in entry  # the server asks before each call
    finally:
        private.remove()
    assert not root.exists()
    assert snapshot(home) == before  # nothing of the user's written or removed


def test_gemini_cli_home_names_the_users_home_and_no_tools_add_no_extension(
    tmp_path: Path,
) -> None:
    home = user_home(tmp_path)
    private = PrivateHome.create({"HOME": "/nonexistent", "GEMINI_CLI_HOME": str(home)}, [], "1")
    try:
        gemini = Path(private.path) / ".gemini"
        assert (gemini / "settings.json").is_symlink()
        assert sorted(os.listdir(gemini / "extensions")) == ["theirs"]
    finally:
        private.remove()


def test_a_missing_user_home_gives_an_empty_one(tmp_path: Path) -> None:
    private = PrivateHome.create({"HOME": str(tmp_path / "nobody")}, [TOOLS], "1")
    try:
        gemini = Path(private.path) / ".gemini"
        assert sorted(os.listdir(gemini)) == ["extensions"]
        assert (gemini / "extensions" / EXTENSION_NAME / "gemini-extension.json").is_file()
    finally:
        private.remove()


def test_mcp_servers_in_acp_and_settings_shapes() -> None:
    assert settings_mcp_server(TOOLS) == (
        "nvim",
        {"httpUrl": TOOLS["url"], "headers": {"Authorization": "Bearer secret"}},
    )
    assert settings_mcp_server({"name": "s", "type": "sse", "url": "http://x/sse"}) == (
        "s",
        {"url": "http://x/sse", "headers": {}},
    )
    assert settings_mcp_server(
        {"name": "c", "command": "run", "args": [1], "env": [{"name": "A", "value": "b"}]}
    ) == ("c", {"command": "run", "args": ["1"], "env": {"A": "b"}})
    assert settings_mcp_server({"name": "", "command": "x"}) is None
    assert settings_mcp_server({"name": "n"}) is None


def test_only_homes_whose_owner_is_gone_are_removed_as_stale(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    home = user_home(tmp_path)
    env = {"HOME": str(home), "TMPDIR": str(tmp)}
    import tempfile

    before = tempfile.tempdir
    tempfile.tempdir = str(tmp)
    try:
        live = PrivateHome.create(env, [TOOLS], "1")
        left = PrivateHome.create(env, [TOOLS], "1")
    finally:
        tempfile.tempdir = before
    # The process that made ``left`` died: its lock went with it (the descriptor).
    assert left._lock is not None
    os.close(left._lock)
    left._lock = None
    unlocked = tmp / "gemini-companion-a2a-made-by-someone-else"
    unlocked.mkdir()
    (tmp / "gemini-companion-a2a-a-link").symlink_to(home)
    try:
        assert remove_stale(str(tmp)) == [left.path]
        assert not Path(left.path).exists()
        assert Path(live.path, ".gemini", "settings.json").is_symlink()  # in use: kept
        assert unlocked.is_dir() and (tmp / "gemini-companion-a2a-a-link").is_symlink()
        assert (home / ".gemini" / "settings.json").exists()  # links are not followed
    finally:
        live.remove()
    assert not Path(live.path).exists()
