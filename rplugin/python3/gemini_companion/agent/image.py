"""An image the user attaches to a prompt (``:GeminiAgentImage``): a PNG, JPEG,
GIF or WebP file, or the clipboard's image, known by its bytes.

The type is read from the magic bytes, never from the name, and the width and
height from the header (no image library):

- PNG: the IHDR chunk, which must come first;
- JPEG: the first start-of-frame marker (SOF0-SOF15 but DHT, JPG and DAC);
- GIF: the logical screen descriptor;
- WebP: the first chunk, ``VP8`` (lossy), ``VP8L`` (lossless) or ``VP8X``
  (extended: the canvas).

Anything else, a header cut short or a size of 0 is :class:`NotAnImageError`.
Over ACP an image goes as an ``image`` content block (base64), over A2A as a
file part (its bytes); the transcript shows :meth:`Image.label`.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass

MAX_BYTES = 5 * 1024 * 1024
"""The largest image a prompt takes (5 MiB; ``:help :GeminiAgentImage`` says so)."""

KINDS = "PNG, JPEG, GIF or WebP"


class NotAnImageError(ValueError):
    """Bytes that are not a PNG, JPEG, GIF or WebP image this module can read."""


@dataclass(frozen=True)
class Image:
    name: str  # the file's name (no folder), or the clipboard's
    mime: str
    data: bytes = b""
    width: int = 0
    height: int = 0

    def label(self) -> str:
        """How the transcript shows it."""
        return f"[image: {self.name}, {self.width}\u00d7{self.height}]"  # the sign of times

    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def __repr__(self) -> str:  # never megabytes of bytes in a log
        return f"Image({self.label()}, {self.mime}, {len(self.data)} bytes)"


@dataclass(frozen=True)
class ImageSource:
    """An image the panel asks to attach: a file (``path``, absolute) or the
    clipboard's bytes (``data``, named ``name``)."""

    path: str | None = None
    name: str = ""
    data: bytes | None = None


def read_image(name: str, data: bytes) -> Image:
    """``data`` as an :class:`Image` named ``name``; raises :class:`NotAnImageError`."""
    try:
        mime, width, height = header(data)
    except (struct.error, IndexError):
        raise NotAnImageError(f"not a {KINDS} image (its header is cut short)") from None
    if width <= 0 or height <= 0:
        raise NotAnImageError(f"not a {KINDS} image (its header gives no size)")
    return Image(name, mime, data, width, height)


def header(data: bytes) -> tuple[str, int, int]:
    """The MIME type, width and height in ``data``'s header. Raises
    :class:`NotAnImageError`, or ``struct.error``/``IndexError`` when it is cut short."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return ("image/png", *_png(data))
    if data.startswith(b"\xff\xd8\xff"):
        return ("image/jpeg", *_jpeg(data))
    if data[:6] in (b"GIF87a", b"GIF89a"):
        width, height = struct.unpack_from("<HH", data, 6)
        return "image/gif", width, height
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ("image/webp", *_webp(data))
    raise NotAnImageError(f"not a {KINDS} image")


def _png(data: bytes) -> tuple[int, int]:
    if data[12:16] != b"IHDR":
        raise NotAnImageError("not a PNG image this reads (no IHDR chunk first)")
    width, height = struct.unpack_from(">II", data, 16)
    return width, height


# Start-of-frame markers: C0-CF but C4 (DHT), C8 (JPG) and CC (DAC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# Markers without a length: TEM, RST0-7 (and SOI).
_BARE = frozenset({0x01, 0xD8, *range(0xD0, 0xD8)})


def _jpeg(data: bytes) -> tuple[int, int]:
    pos = 2
    while True:
        if data[pos] != 0xFF:
            raise NotAnImageError("not a JPEG image this reads (a marker is missing)")
        while data[pos] == 0xFF:  # fill bytes
            pos += 1
        marker = data[pos]
        pos += 1
        if marker in _BARE:
            continue
        if marker in (0xD9, 0xDA):  # the end, or the scan, before any frame
            raise NotAnImageError("not a JPEG image this reads (no frame header)")
        (length,) = struct.unpack_from(">H", data, pos)
        if marker in _SOF:
            height, width = struct.unpack_from(">HH", data, pos + 3)
            return width, height
        if length < 2:
            raise NotAnImageError("not a JPEG image this reads (a segment is damaged)")
        pos += length


def _webp(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8 ":
        if data[23:26] != b"\x9d\x01\x2a":
            raise NotAnImageError("not a WebP image this reads (no VP8 start code)")
        width, height = struct.unpack_from("<HH", data, 26)
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":
        if data[20] != 0x2F:
            raise NotAnImageError("not a WebP image this reads (no VP8L signature)")
        (bits,) = struct.unpack_from("<I", data, 21)
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        if len(data) < 30:
            raise IndexError("cut short")
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    raise NotAnImageError("not a WebP image this reads (an unknown first chunk)")
