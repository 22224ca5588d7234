"""What a prompt attaches, made safe to send (issue 29): every ``@path``,
``@path#L3-9``, ``#buffer``, ``#selection`` and ``#diagnostics`` the panel sends
(agent/context.lua) passes here before anything of the prompt goes out.

- A path with a control character is refused.
- Links are resolved: each attachment is sent, and shown in the transcript, under
  its real path (``@/real/path``), never under the link's name.
- The path policy of the agent's own reads holds (the workspace folders, the
  agent's workspace, ``diff.allowed_dirs``: paths.py's
  :class:`~gemini_companion.paths.PathPolicy`), a loaded buffer's text included. A
  path outside it is attached only once the user confirmed that real path for this
  prompt: :class:`ConsentNeededError` lists the ones still to confirm, and the
  panel asks (agent/prompt.lua) and sends the prompt again with them.
- Whatever is read on disk is read by reader.py, in a thread: regular files only
  (a FIFO never blocks), the policy checked on the descriptor, a size cap. That
  covers the lines ``@path#L3-9`` names of a file not loaded in Neovim, a whole
  file outside the policy (the agent could not read it itself: its text goes
  with the prompt) and the files A2A embeds (:func:`embedded_text`). A whole file
  the agent can read itself (ACP's resource link) is only checked.

The text of a loaded buffer (unsaved text, lines, a selection, diagnostics) comes
from the panel, which finds the buffer by its exact name (agent/files.lua).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Collection, Sequence

from ..paths import NotRegularFileError, OutsidePolicyError, PathPolicy, has_control, shown
from .model import Reference
from .reader import TooLargeError, check, read_text

# Lines of a file not loaded are read from a file of at most this size (the agent's
# own reads stop there too: files.py's MAX_READ_BYTES).
MAX_LINES_FILE = 20 * 1024 * 1024

# A whole file whose text goes with the prompt (A2A's, or one outside the policy) is
# sent up to this size; a larger one is named only (A2A) or refused.
MAX_EMBEDDED = 256 * 1024


class AttachError(ValueError):
    """An attachment that cannot be sent, with the reason the user reads."""


class ConsentNeededError(Exception):
    """Attachments outside the workspace the user has not confirmed for this prompt."""

    def __init__(self, paths: Sequence[str]) -> None:
        super().__init__(", ".join(paths))
        self.paths = tuple(paths)


async def prepare(
    refs: Sequence[Reference], policy: PathPolicy | None, confirmed: Collection[str] = ()
) -> tuple[Reference, ...]:
    """``refs`` as they may be sent: under their real paths, lines read, checked.
    ``confirmed``: real paths outside ``policy`` the user allowed for this prompt.
    Raises :class:`ConsentNeededError` (nothing read) or :class:`AttachError`."""
    for ref in refs:
        if has_control(ref.path) or not os.path.isabs(ref.path):
            raise AttachError(f"cannot attach {shown(ref.path)}: not a plain absolute path")
    reals = [await asyncio.to_thread(os.path.realpath, ref.path) for ref in refs]
    outside = [
        real
        for real in dict.fromkeys(reals)
        if policy is not None and not policy.contains(real) and real not in confirmed
    ]
    if outside:
        raise ConsentNeededError(outside)
    out = []
    for ref, real in zip(refs, reals, strict=True):
        inside = policy is None or policy.contains(real)
        # Outside: what is opened must be the very file the user confirmed.
        allowed = policy if inside else PathPolicy((real,))
        out.append(await asyncio.to_thread(_prepared, ref, real, allowed, inside))
    return tuple(out)


def _prepared(ref: Reference, real: str, policy: PathPolicy | None, inside: bool) -> Reference:
    """``ref`` under ``real``, its lines or (outside the workspace) its text read."""
    if ref.text is not None:  # a buffer's text, from the panel: nothing to read
        return Reference(real, ref.start_line, ref.end_line, ref.text, ref.kind)
    if ref.kind != "file":
        raise AttachError(f"nothing to attach for {shown(ref.path)}")
    if ref.start_line is not None:
        first = max(ref.start_line, 1)
        last = ref.end_line if ref.end_line is not None else first
        text = _read(ref.path, real, policy, MAX_LINES_FILE)
        lines = text.splitlines()[first - 1 : last]
        if not lines:
            raise AttachError(f"{shown(ref.path)} has no line {first}")
        return Reference(real, first, last, "\n".join(lines), ref.kind)
    if not inside:
        # Outside the workspace (the user confirmed it): the agent cannot read it
        # itself, so its text goes with the prompt.
        return Reference(real, text=_read(ref.path, real, policy, MAX_EMBEDDED), kind=ref.kind)
    try:
        check(real, policy)
    except OSError as exc:
        raise AttachError(_why(ref.path, exc)) from None
    return Reference(real, kind=ref.kind)


def _read(shown_as: str, real: str, policy: PathPolicy | None, limit: int) -> str:
    try:
        return read_text(real, policy, limit)
    except OSError as exc:
        raise AttachError(_why(shown_as, exc)) from None


def _why(path: str, exc: OSError) -> str:
    if isinstance(exc, NotRegularFileError):
        return f"cannot attach {exc}"
    if isinstance(exc, OutsidePolicyError):
        return f"cannot attach {shown(path)}: it changed while it was read"
    if isinstance(exc, TooLargeError):
        return f"cannot attach {exc}"
    return f"cannot attach {shown(path)}: {exc.strerror or exc}"


def embedded_text(path: str, policy: PathPolicy | None) -> str | None:
    """The text of a whole file a transport embeds in the prompt (A2A), read by the
    same reader (in the caller's thread): None when too large or binary. Raises
    :class:`AttachError` when it cannot be read."""
    try:
        text = read_text(path, policy, MAX_EMBEDDED)
    except TooLargeError:
        return None
    except OSError as exc:
        raise AttachError(_why(path, exc)) from None
    return None if "\0" in text[:8192] else text
