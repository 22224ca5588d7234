"""Images in the prompt (issue 30, requirement 5): ``:GeminiAgentImage [path]``
attaches a PNG, JPEG, GIF or WebP file, or the clipboard's image, to the next
prompt. Over ACP it goes as an ``image`` content block when the agent declares
``promptCapabilities.image``; over A2A as a file part. The transcript shows
``[image: name, WxH]`` (with the sign of times); a file that is not an image,
or over 5 MiB, is refused and the prompt kept.

Real parts: a headless Neovim with the plugin and its Python host; the scripted
ACP agent (tests/agent_fakes/acp_agent.py, ``--image`` for the capability, logging
the blocks it receives), the scripted A2A agent in the real server's dialect
(tests/agent_fakes/coder_agent.py, recording the file parts), and the real
``gemini --acp`` 0.61.0 against the fake Gemini API on loopback, whose request log
is what the model was sent. The test images are written here, byte by byte.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from agent_fakes.coder_agent import CoderAgent, coder_agent
from agent_setup import (
    GEMINI_JS,
    panel_window,
    status_row,
    transcript,
    wait_agent,
    wait_transcript,
)
from fake_gemini import FakeGemini, text_turn
from fake_model import gemini_home
from gemini_companion.agent.image import NotAnImageError, header, read_image
from harness import Nvim, wait_for
from test_agent_attach import acp_prompts, answer_select, asked, prompt_text, submit

FAKE_ACP = Path(__file__).parent / "agent_fakes" / "acp_agent.py"
WAIT = 60
LIMIT = 5 * 1024 * 1024
X = "\u00d7"  # the sign of times, between the width and the height


# -- the test images ------------------------------------------------------------------


def png(width: int, height: int) -> bytes:
    """A whole valid PNG: white, 8-bit grey."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + b"\xff" * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def jpeg(width: int, height: int) -> bytes:
    """A JPEG's header: an APP0 (JFIF) segment, a fill byte, then the frame (SOF0)."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    """A whole valid GIF: one pixel drawn."""
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    frame = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x44\x01\x00"
    return b"GIF89a" + screen + frame + b"\x3b"


def _riff(chunk: bytes, body: bytes) -> bytes:
    inner = b"WEBP" + chunk + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", len(inner)) + inner


def webp_lossy(width: int, height: int) -> bytes:
    frame = b"\x30\x01\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 8
    return _riff(b"VP8 ", frame)


def webp_lossless(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    return _riff(b"VP8L", b"\x2f" + struct.pack("<I", bits) + b"\x00" * 4)


def webp_extended(width: int, height: int) -> bytes:
    canvas = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return _riff(b"VP8X", b"\x00\x00\x00\x00" + canvas)


# -- the header, read without Neovim ----------------------------------------------------


@pytest.mark.parametrize(
    ("make", "mime"),
    [
        (png, "image/png"),
        (jpeg, "image/jpeg"),
        (gif, "image/gif"),
        (webp_lossy, "image/webp"),
        (webp_lossless, "image/webp"),
        (webp_extended, "image/webp"),
    ],
)
def test_each_kind_of_image_has_its_type_and_size_read_from_its_header(
    make: Callable[[int, int], bytes], mime: str
) -> None:
    assert header(make(3, 2)) == (mime, 3, 2)
    assert header(make(1000, 700)) == (mime, 1000, 700)
    assert read_image("x", make(16, 9)).label() == f"[image: x, 16{X}9]"


def test_bytes_that_are_not_an_image_or_a_header_cut_short_are_refused() -> None:
    for data in (b"", b"hello, world\n", b"%PDF-1.7\n", png(3, 2)[:20], jpeg(3, 2)[:8]):
        with pytest.raises(NotAnImageError, match="not a PNG, JPEG, GIF or WebP image"):
            read_image("x", data)


# -- over ACP --------------------------------------------------------------------------


def acp_nvim(
    nvim_factory: Callable[..., Nvim], workspace: Path, tmp_path: Path, *flags: str
) -> Nvim:
    cmd = [sys.executable, str(FAKE_ACP), *flags]
    nvim = nvim_factory(
        cwd=workspace,
        setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}},
        env={"FAKE_ACP_PROMPTS": str(tmp_path / "acp-prompts.jsonl")},
    )
    nvim.wait_running()
    # Every message on its own (not folded into the next), recorded.
    nvim.lua(
        "require('gemini_companion.agent.messages').INTERVAL = 0;"
        " _G.told = {}; vim.notify = function(msg) table.insert(_G.told, msg) end"
    )
    return nvim


def told(nvim: Nvim) -> list[str]:
    return list(nvim.lua("return _G.told"))


def pending(nvim: Nvim) -> list[str]:
    return list(nvim.lua("return require('gemini_companion.agent.images').pending()"))


def blocks(tmp_path: Path) -> list[list[dict[str, str]]]:
    """The content blocks of each prompt, as the agent's SDK read them (its field
    names: an image block's ``mimeType`` is its required ``mime_type``)."""
    return [json.loads(p) for p in acp_prompts(tmp_path)]


def test_images_reach_the_acp_agent_as_image_blocks_and_the_transcript_shows_their_sizes(
    nvim_factory: Callable[..., Nvim], workspace: Path, tmp_path: Path
) -> None:
    nvim = acp_nvim(nvim_factory, workspace, tmp_path, "--image")
    images = {
        "cat.png": png(3, 2),
        "photo.jpg": jpeg(640, 480),
        "anim.gif": gif(5, 4),
        "lossy.webp": webp_lossy(320, 200),
        "lossless.webp": webp_lossless(17, 33),
        "wide.webp": webp_extended(4000, 10),
    }
    nvim.lua("require('gemini_companion.agent').open()")
    for name, data in images.items():
        (workspace / name).write_bytes(data)
        nvim.api.command(f"GeminiAgentImage {name}")
    assert pending(nvim) == list(images)
    # The prompt window's status line names them until they are sent.
    nvim.lua("vim.api.nvim_set_current_win(...)", panel_window(nvim, 2))
    nvim.api.command("only")  # the whole width for the status line
    assert status_row(nvim, panel_window(nvim, 2)).startswith(" images: cat.png, photo.jpg, ")
    submit(nvim, "describe them")
    wait_transcript(nvim, "echo: describe them")
    received = blocks(tmp_path)
    assert received == [
        [
            {"type": "text", "text": "describe them"},
            *[
                {
                    "type": "image",
                    "mime_type": mime,
                    "data": base64.b64encode(data).decode(),
                }
                for data, mime in zip(
                    images.values(),
                    ["image/png", "image/jpeg", "image/gif", *["image/webp"] * 3],
                    strict=True,
                )
            ],
        ]
    ]
    lines = transcript(nvim).splitlines()
    for label in (
        f"[image: cat.png, 3{X}2]",
        f"[image: photo.jpg, 640{X}480]",
        f"[image: anim.gif, 5{X}4]",
        f"[image: lossy.webp, 320{X}200]",
        f"[image: lossless.webp, 17{X}33]",
        f"[image: wide.webp, 4000{X}10]",
    ):
        assert f"  {label}" in lines
    # Sent: none waits for the next prompt (the next prompt goes once the turn is
    # over: the answer is drawn before the agent ends its turn).
    wait_agent(nvim, "the turn to end", lambda s: s["state"] == "idle")
    assert pending(nvim) == []
    assert "images:" not in status_row(nvim, panel_window(nvim, 2))
    submit(nvim, "and now")
    wait_transcript(nvim, "echo: and now")
    assert blocks(tmp_path)[1] == [{"type": "text", "text": "and now"}]


def test_a_file_that_is_not_an_image_or_too_big_is_refused_and_the_prompt_kept(
    nvim_factory: Callable[..., Nvim], workspace: Path, tmp_path: Path
) -> None:
    nvim = acp_nvim(nvim_factory, workspace, tmp_path, "--image")
    (workspace / "notes.png").write_text("# not an image, whatever its name\n")
    (workspace / "good.gif").write_bytes(gif(2, 2))
    nvim.api.command("GeminiAgentImage good.gif")
    nvim.api.command("GeminiAgentImage notes.png")
    submit(nvim, "look at these")
    refusal = "cannot attach 'notes.png': not a PNG, JPEG, GIF or WebP image"
    wait_for(lambda: any(refusal in m for m in told(nvim)), WAIT, "the refusal")
    assert told(nvim)[-1] == f"{refusal}: nothing sent (your text is back in the prompt)"
    wait_for(lambda: prompt_text(nvim) == ["look at these"], WAIT, "the text back")
    assert pending(nvim) == ["good.gif"]  # the refused one is dropped, the other kept

    # Over the limit, though its header is a PNG's.
    (workspace / "big.png").write_bytes(png(8, 8) + b"\x00" * LIMIT)
    nvim.api.command("GeminiAgentImage big.png")
    submit(nvim, "and this")
    too_big = "cannot attach the image 'big.png': it is larger than 5 MiB, the limit for an image"
    wait_for(lambda: any(too_big in m for m in told(nvim)), WAIT, "the refusal")
    wait_for(lambda: prompt_text(nvim) == ["and this"], WAIT, "the text back")
    assert pending(nvim) == ["good.gif"]
    assert blocks(tmp_path) == []  # nothing reached the agent

    submit(nvim, "just the gif")
    wait_transcript(nvim, "echo: just the gif")
    assert [b["type"] for b in blocks(tmp_path)[0]] == ["text", "image"]
    assert blocks(tmp_path)[0][1]["mime_type"] == "image/gif"


def test_an_agent_that_takes_no_images_gets_a_clear_error_and_the_prompt_is_kept(
    nvim_factory: Callable[..., Nvim], workspace: Path, tmp_path: Path
) -> None:
    nvim = acp_nvim(nvim_factory, workspace, tmp_path)  # no --image
    (workspace / "cat.png").write_bytes(png(3, 2))
    nvim.api.command("GeminiAgentImage cat.png")
    submit(nvim, "describe the cat")
    message = (
        "the agent takes no images (its initialize declares no promptCapabilities.image):"
        " the images are dropped: nothing sent (your text is back in the prompt)"
    )
    wait_for(lambda: message in told(nvim), WAIT, "the refusal")
    wait_for(lambda: prompt_text(nvim) == ["describe the cat"], WAIT, "the text back")
    assert blocks(tmp_path) == []
    assert "describe the cat" not in transcript(nvim)
    assert pending(nvim) == []
    submit(nvim, "describe the cat")  # again, without the image: it goes
    wait_transcript(nvim, "echo: describe the cat")


def test_the_clipboard_image_is_read_by_the_platform_s_reader(
    nvim_factory: Callable[..., Nvim], workspace: Path, tmp_path: Path
) -> None:
    nvim = acp_nvim(nvim_factory, workspace, tmp_path, "--image")
    image = png(7, 5)
    (tmp_path / "clip.png").write_bytes(image)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    reader = bin_dir / "wl-paste"
    reader.write_text(
        f'#!/bin/sh\necho "$@" > {tmp_path / "args"}\nexec cat {tmp_path / "clip.png"}\n'
    )
    reader.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    nvim.lua("vim.env.PATH = ...; vim.env.WAYLAND_DISPLAY = 'wayland-test'", path)
    nvim.api.command("GeminiAgentImage")
    wait_for(lambda: pending(nvim) == ["clipboard.png"], WAIT, "the clipboard's image")
    assert (tmp_path / "args").read_text().split() == ["--no-newline", "--type", "image/png"]
    submit(nvim, "what is this")
    wait_transcript(nvim, "echo: what is this")
    assert blocks(tmp_path)[0][1] == {
        "type": "image",
        "mime_type": "image/png",
        "data": base64.b64encode(image).decode(),
    }
    assert f"  [image: clipboard.png, 7{X}5]" in transcript(nvim).splitlines()

    # No reader on this system: one clear line, nothing attached.
    empty = tmp_path / "empty"
    empty.mkdir()
    nvim.lua("vim.env.PATH = ...; vim.env.WAYLAND_DISPLAY = nil; vim.env.DISPLAY = nil", str(empty))
    nvim.api.command("GeminiAgentImage")
    assert told(nvim)[-1] == (
        "no clipboard image reader: install wl-paste (Wayland), xclip (X11) or pngpaste"
        " (macOS), or give a path"
    )
    assert pending(nvim) == []

    # A file attached by mistake: the bang detaches what is attached.
    nvim.api.command(f"GeminiAgentImage {tmp_path / 'clip.png'}")
    assert pending(nvim) == ["clip.png"]
    nvim.api.command("GeminiAgentImage!")
    assert pending(nvim) == []
    assert told(nvim)[-1] == "1 image(s) dropped from the next prompt"


# -- over A2A --------------------------------------------------------------------------


@pytest.fixture
def coder() -> Iterator[tuple[str, CoderAgent]]:
    with coder_agent() as served:
        yield served


def test_an_image_goes_to_the_a2a_agent_as_a_file_part_and_one_outside_is_asked_about(
    nvim_factory: Callable[..., Nvim],
    coder: tuple[str, CoderAgent],
    workspace: Path,
    tmp_path: Path,
) -> None:
    url, agent = coder
    nvim = nvim_factory(cwd=workspace, setup={"agent": {"protocol": "a2a", "a2a": {"url": url}}})
    nvim.wait_running()
    answer_select(nvim, {"outside.jpg": 1})
    inside, outside = webp_lossless(9, 9), jpeg(30, 20)
    (workspace / "inside.webp").write_bytes(inside)
    (tmp_path / "outside.jpg").write_bytes(outside)
    nvim.api.command("GeminiAgentImage inside.webp")
    nvim.api.command(f"GeminiAgentImage {tmp_path / 'outside.jpg'}")
    submit(nvim, "compare")
    wait_for(lambda: len(agent.prompts) == 1, WAIT, "the prompt to reach the agent")
    assert asked(nvim) == [f"@{tmp_path / 'outside.jpg'} is outside the workspace: attach it?"]
    assert agent.prompts[0] == ["compare"]
    assert agent.files[0] == [
        ("inside.webp", "image/webp", inside),
        ("outside.jpg", "image/jpeg", outside),
    ]
    wait_transcript(nvim, f"[image: outside.jpg, 30{X}20]")
    assert f"  [image: inside.webp, 9{X}9]" in transcript(nvim).splitlines()


# -- the real gemini --acp ---------------------------------------------------------------


@pytest.mark.usefixtures("interop")
def test_the_real_gemini_acp_takes_the_image_block_and_gives_it_to_the_model(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, workspace: Path, tmp_path: Path
) -> None:
    fake.add(text_turn("A white square."))
    nvim = nvim_factory(
        cwd=workspace,
        setup={"agent": {"protocol": "acp", "acp": {"cmd": ["node", str(GEMINI_JS), "--acp"]}}},
        env={
            "HOME": str(gemini_home(tmp_path, ide=False)),
            "GEMINI_API_KEY": "offline-test-key",
            "GOOGLE_GEMINI_BASE_URL": fake.url,
        },
    )
    nvim.wait_running()
    image = png(4, 4)
    (workspace / "square.png").write_bytes(image)
    nvim.api.command("GeminiAgentImage square.png")
    nvim.api.command("GeminiAgent what is in the picture?")
    wait_transcript(nvim, "A white square.", 180)
    parts = [
        part
        for request in fake.stream_requests()
        for content in request["body"].get("contents", [])
        if content.get("role") == "user"
        for part in content.get("parts", [])
    ]
    inline = {"mimeType": "image/png", "data": base64.b64encode(image).decode()}
    assert {"inlineData": inline} in parts
    assert f"  [image: square.png, 4{X}4]" in transcript(nvim).splitlines()
