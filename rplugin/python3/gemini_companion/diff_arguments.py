"""The arguments of ``openDiff`` and ``closeDiff`` (diff.py), checked before anything
is shown: each refusal is a :class:`BadRequestError` whose text is what the CLI
gets. Spec: ide-companion-spec.md section III."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .paths import NotRegularFileError, check_regular_or_absent, has_control, shown
from .text import InvalidTextError, check_text


class BadRequestError(ValueError):
    """A tool call the companion refuses, with the text the CLI gets."""


def _string_argument(tool: str, arguments: Mapping[str, Any], name: str) -> str:
    if name not in arguments:
        raise BadRequestError(f"{tool}: the argument '{name}' is missing")
    value = arguments[name]
    if not isinstance(value, str):
        raise BadRequestError(
            f"{tool}: the argument '{name}' must be a string, got {type(value).__name__}"
        )
    return value


def _file_path_argument(tool: str, arguments: Mapping[str, Any]) -> str:
    path = _string_argument(tool, arguments, "filePath")
    if "\0" in path:
        raise BadRequestError(f"{tool}: filePath contains a NUL character")
    if has_control(path):
        raise BadRequestError(
            f"{tool}: filePath contains a control character (newline, escape, ...): {shown(path)}"
        )
    if not os.path.isabs(path):
        raise BadRequestError(f"{tool}: filePath must be an absolute path, got {shown(path)}")
    return path


def check_target(path: str) -> str:
    """The real path of ``path`` if a diff may read it: an existing regular file, or a
    file that does not exist yet, in folders that may not exist yet either (the
    agent creating ``new_pkg/mod.py``: nothing is created here, the CLI does that
    after an accept). Anything else (a FIFO, a device, ``/dev/stdin``, a socket, a
    directory, a file where a folder must be) is refused before Neovim touches it:
    reading a FIFO or a pipe would block Neovim's main loop for ever (paths.py)."""
    try:
        return check_regular_or_absent(path)
    except NotRegularFileError as exc:
        raise BadRequestError(f"openDiff: {exc}") from None
    except OSError as exc:
        raise BadRequestError(f"openDiff: cannot use {shown(path)}: {exc.strerror}") from None


def validate_open(arguments: Any) -> tuple[str, str]:
    """``(filePath, newContent)`` of a valid ``openDiff`` call, else :class:`BadRequestError`."""
    if not isinstance(arguments, Mapping):
        raise BadRequestError("openDiff: the arguments must be an object {filePath, newContent}")
    path = _file_path_argument("openDiff", arguments)
    content = _string_argument("openDiff", arguments, "newContent")
    check_target(path)
    try:
        check_text(content)
    except InvalidTextError as exc:
        raise BadRequestError(f"openDiff: newContent cannot be shown as text: {exc}") from None
    return path, content


def validate_close(arguments: Any) -> str:
    if not isinstance(arguments, Mapping):
        raise BadRequestError("closeDiff: the arguments must be an object {filePath}")
    path = _file_path_argument("closeDiff", arguments)
    suppress = arguments.get("suppressNotification")
    if suppress is not None and not isinstance(suppress, bool):
        raise BadRequestError("closeDiff: suppressNotification must be a boolean")
    return path
