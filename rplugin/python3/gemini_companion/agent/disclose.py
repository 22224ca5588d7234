"""What a tool is really called with, when its title says something else.

A confirmation shows the agent's title for a tool call; what runs is the tool's
arguments (ACP ``rawInput``, A2A ``args`` / ``input_parameters``). A title ``ls``
over ``{"command": "rm -rf ~"}`` must not pass for ``ls``: each argument that
names a command, a path or a URL and appears nowhere else in what the
confirmation shows is added to it (:attr:`~.model.Confirmation.inputs`), drawn
in its block and listed in ``state().pending``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .model import Confirmation

KEYS = (
    "command",
    "file_path",
    "absolute_path",
    "path",
    "paths",
    "dir_path",
    "directory",
    "cwd",
    "url",
    "urls",
)
"""The arguments that say what a tool acts on (Gemini CLI's tools name them so)."""


def _values(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []


BOUNDS = frozenset(" \t\r\n\"'`()[]{}<>,;")
"""What may stand beside a value shown inside a longer text: a value that only
begins or ends another word (``/home/u/project`` inside ``/home/u/project/build``,
``https://a.co`` inside ``https://a.com``) is not shown."""

MAX_LOOKS = 64
"""Places a value is looked at in the text at most (then it counts as not shown)."""


def _shown(value: str, text: str) -> bool:
    """``value`` stands in ``text`` as a whole word, not as a piece of another."""
    at = text.find(value)
    for _ in range(MAX_LOOKS):
        if at < 0:
            return False
        end = at + len(value)
        if (at == 0 or text[at - 1] in BOUNDS) and (end == len(text) or text[end] in BOUNDS):
            return True
        at = text.find(value, at + 1)
    return False


def disclosed(conf: Confirmation, arguments: Mapping[str, Any] | None) -> Confirmation:
    """``conf`` with each argument of :data:`KEYS` that it does not show already."""
    if not isinstance(arguments, Mapping):
        return conf
    shown = [conf.title, conf.command, conf.directory, conf.file_path, conf.server, conf.tool]
    if conf.kind != "edit":  # an edit's description is its diff, in the diff tab
        shown.append(conf.description)
    text = "\n".join(s for s in shown if s)
    inputs = [
        (key, value)
        for key in KEYS
        for value in _values(arguments.get(key))
        if value and not _shown(value, text)
    ]
    if not inputs:
        return conf
    return dataclasses.replace(conf, inputs=tuple(inputs))
