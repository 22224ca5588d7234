"""``agent.acp`` of the user's configuration, as the ACP transport reads it."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass
class AcpOptions:
    """``agent.acp`` of the user's configuration as Lua sends it (agent/init.lua):
    merged over the option schema's defaults (lua/gemini_companion/options.lua) and
    validated by config.lua, so no option has a default here."""

    cmd: tuple[str, ...]
    env: dict[str, str]
    startup_timeout: float
    cancel_timeout: float
    auth_method: str | None = None  # unset in the schema: the panel names the methods
    sessions_file: str | None = None  # not an option: where agent/init.lua keeps them

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> AcpOptions:
        cmd = raw["cmd"]
        return cls(
            cmd=tuple(shlex.split(cmd) if isinstance(cmd, str) else (str(c) for c in cmd)),
            # An empty Lua table arrives as a list: dict() of it is empty too.
            env={str(k): str(v) for k, v in dict(raw["env"] or {}).items()},
            startup_timeout=float(raw["startup_timeout"]),
            cancel_timeout=float(raw["cancel_timeout"]),
            auth_method=raw.get("auth_method") or None,
            sessions_file=raw.get("sessions_file") or None,
        )
