"""``agent.acp`` of the user's configuration, as the ACP transport reads it."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_CMD = ("gemini", "--acp")


@dataclass
class AcpOptions:
    """``agent.acp`` of the user's configuration (config.lua validates it)."""

    cmd: tuple[str, ...] = DEFAULT_CMD
    auth_method: str | None = None
    startup_timeout: float = 60.0
    cancel_timeout: float = 5.0
    sessions_file: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> AcpOptions:
        options = cls()
        cmd = raw.get("cmd")
        if isinstance(cmd, str):
            cmd = shlex.split(cmd)
        if isinstance(cmd, Sequence) and cmd and all(isinstance(c, str) for c in cmd):
            options.cmd = tuple(cmd)
        if isinstance(raw.get("auth_method"), str) and raw["auth_method"]:
            options.auth_method = raw["auth_method"]
        for name in ("startup_timeout", "cancel_timeout"):
            value = raw.get(name)
            if isinstance(value, (int, float)) and value > 0:
                setattr(options, name, float(value))
        if isinstance(raw.get("sessions_file"), str) and raw["sessions_file"]:
            options.sessions_file = raw["sessions_file"]
        env = raw.get("env")
        if isinstance(env, Mapping):
            options.env = {str(k): str(v) for k, v in env.items()}
        return options
