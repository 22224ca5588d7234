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
- An image (``:GeminiAgentImage``) is read the same way, whole, up to
  image.py's limit, and checked by its bytes (image.py); the clipboard's comes
  from the panel as bytes.

The text of a loaded buffer (unsaved text, lines, a selection, diagnostics) comes
from the panel, which finds the buffer by its exact name (agent/files.lua).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ..paths import NotRegularFileError, OutsidePolicyError, PathPolicy, has_control, shown
from .image import MAX_BYTES as MAX_IMAGE
from .image import Image, ImageSource, NotAnImageError, read_image
from .model import Reference
from .reader import TooLargeError, check, read_bytes, read_text

# Lines of a file not loaded are read from a file of at most this size (the agent's
# own reads stop there too: files.py's MAX_READ_BYTES).
MAX_LINES_FILE = 20 * 1024 * 1024

# A whole file whose text goes with the prompt (A2A's, or one outside the policy) is
# sent up to this size; a larger one is named only (A2A) or refused.
MAX_EMBEDDED = 256 * 1024


class AttachError(ValueError):
    """An attachment that cannot be sent, with the reason the user reads;
    ``image``: the index of the image it is about, if one."""

    image: int | None = None


class ConsentNeededError(Exception):
    """Attachments outside the workspace the user has not confirmed for this prompt."""

    def __init__(self, paths: Sequence[str]) -> None:
        super().__init__(", ".join(paths))
        self.paths = tuple(paths)


async def prepare(
    refs: Sequence[Reference],
    policy: PathPolicy | None,
    confirmed: Collection[str] = (),
    images: Sequence[ImageSource] = (),
) -> tuple[tuple[Reference, ...], tuple[Image, ...]]:
    """``refs`` as they may be sent: under their real paths, lines read, checked;
    and ``images`` read and checked (image.py: the type by its magic bytes, at
    most :data:`~.image.MAX_BYTES`). ``confirmed``: real paths outside ``policy``
    the user allowed for this prompt. Raises :class:`ConsentNeededError` (nothing
    read) or :class:`AttachError`."""
    files = [source.path for source in images if source.path is not None]
    for path in [*(ref.path for ref in refs), *files]:
        if has_control(path) or not os.path.isabs(path):
            raise AttachError(f"cannot attach {shown(path)}: not a plain absolute path")
    reals = [await asyncio.to_thread(os.path.realpath, ref.path) for ref in refs]
    image_reals = {path: await asyncio.to_thread(os.path.realpath, path) for path in files}
    outside = [
        real
        for real in dict.fromkeys([*reals, *image_reals.values()])
        if policy is not None and not policy.contains(real) and real not in confirmed
    ]
    if outside:
        raise ConsentNeededError(outside)
    out = []
    for ref, real in zip(refs, reals, strict=True):
        out.append(await asyncio.to_thread(_prepared, ref, real, *_allowed(policy, real)))
    read = []
    for index, source in enumerate(images):
        image_real = image_reals.get(source.path or "")
        try:
            read.append(await asyncio.to_thread(_image, source, image_real, policy))
        except AttachError as exc:
            exc.image = index
            raise
    return tuple(out), tuple(read)


def _allowed(policy: PathPolicy | None, real: str) -> tuple[PathPolicy | None, bool]:
    """The policy a read of ``real`` goes by, and whether ``real`` is inside
    ``policy``. Outside (the user confirmed it): what is opened must be the very
    file the user confirmed."""
    inside = policy is None or policy.contains(real)
    return (policy if inside else PathPolicy((real,))), inside


def _image(source: ImageSource, real: str | None, policy: PathPolicy | None) -> Image:
    """The image ``source`` names, read (a file: by the reader, within the policy)
    and checked."""
    if real is None:  # the clipboard's bytes, from the panel
        name, data = source.name or "clipboard", source.data or b""
        if len(data) > MAX_IMAGE:
            raise AttachError(f"cannot attach the image {shown(name)}: {_too_large()}")
    else:
        name = os.path.basename(real)
        try:
            data = read_bytes(real, _allowed(policy, real)[0], MAX_IMAGE)
        except TooLargeError:
            raise AttachError(f"cannot attach the image {shown(name)}: {_too_large()}") from None
        except OSError as exc:
            raise AttachError(_why(source.path or real, exc)) from None
    try:
        return read_image(name, data)
    except NotAnImageError as exc:
        raise AttachError(f"cannot attach {shown(name)}: {exc}") from None


def _too_large() -> str:
    return f"it is larger than {MAX_IMAGE // (1024 * 1024)} MiB, the limit for an image"


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


def without_images(args: Mapping[str, Any], dropped: Collection[int] | None) -> dict[str, Any]:
    """The request ``args`` given back to the panel without the images at the
    indexes ``dropped`` (those refused: the others stay attached to the prompt),
    or (None) without any."""
    out = {k: v for k, v in args.items() if k != "images"}
    kept = [
        image
        for i, image in enumerate(args.get("images") or ())
        if dropped is not None and i not in dropped
    ]
    if kept:
        out["images"] = kept
    return out
