"""The plugin's own virtual environment, made reachable from a shared Python host.

The build step (lua/gemini_companion/build.lua) installs the dependencies into a
virtual environment of the plugin's own. When Neovim's ``python3`` host runs
another interpreter (the user's ``g:python3_host_prog``, kept so that their other
remote plugins keep working), the venv's ``site-packages`` is appended to
``sys.path``: behind the host's own entries, so a package the user's other plugins
rely on is never replaced by ours. Only a venv of the host's own Python version is
used; packages built for another version could not be imported safely.

The Lua side passes the venv through ``$GEMINI_COMPANION_VENV`` (the host is a job
of Neovim and inherits its environment). Cheap by design: imported while Neovim
waits for the host to start.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableSequence
from pathlib import Path

ENV_VAR = "GEMINI_COMPANION_VENV"


def venv_site_packages(venv: str, version: tuple[int, int]) -> Path:
    if os.name == "nt":
        return Path(venv) / "Lib" / "site-packages"
    return Path(venv) / "lib" / f"python{version[0]}.{version[1]}" / "site-packages"


def add_venv(
    path: MutableSequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    version: tuple[int, int] | None = None,
) -> str:
    """Append the venv's site-packages to ``path``; return what was done, in words.

    One of ``"host"`` (the host runs the venv's own Python), ``"appended"``,
    ``"version mismatch"`` (the venv is for another Python), ``"missing"`` (no such
    venv) or ``"unset"`` (no venv given).
    """
    path = sys.path if path is None else path
    environ = os.environ if environ is None else environ
    version = version or (sys.version_info[0], sys.version_info[1])
    venv = environ.get(ENV_VAR, "")
    if not venv:
        return "unset"
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return "host"
    site = venv_site_packages(venv, version)
    if not site.is_dir():
        return "version mismatch" if Path(venv, "pyvenv.cfg").exists() else "missing"
    if str(site) not in path:
        path.append(str(site))
    return "appended"


# What the server thread imports; checked before a start, without importing them.
SERVER_PACKAGES = ("mcp", "starlette", "uvicorn", "anyio")


def missing_packages(names: tuple[str, ...] = SERVER_PACKAGES) -> list[str]:
    """The packages among ``names`` that this Python cannot import (found, not imported)."""
    from importlib.util import find_spec

    return [name for name in names if find_spec(name) is None]


def package_versions(names: list[str]) -> dict[str, str]:
    """Installed version of each distribution that is importable (absent ones omitted)."""
    from importlib import metadata

    versions: dict[str, str] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions
