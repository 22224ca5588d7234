"""Canned model answers for the real ``gemini`` binary (``--fake-responses-non-strict``).

The model is the one part of the agent that cannot run here; the CLI itself reads
this JSON-lines file (client-behaviour.md, "Driving the real client in tests") and
answers each main-turn request with the next ``generateContentStream`` entry, and
its side requests (next-speaker checks, summaries) with ``generateContent`` ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Part = dict[str, Any]


def model_turn(parts: Sequence[Part]) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": list(parts)}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 5, "totalTokenCount": 10},
    }


def text(value: str) -> Part:
    return {"text": value}


def thought(subject: str, description: str) -> Part:
    return {"thought": True, "text": f"**{subject}** {description}"}


def call(name: str, **args: Any) -> Part:
    return {"functionCall": {"name": name, "args": args}}


def write_responses(path: Path, turns: Sequence[Sequence[Sequence[Part]]]) -> Path:
    """``turns``: the model's answers in order; each a stream of chunks, each chunk a
    list of parts. Spare side answers follow, whatever their number."""
    lines = [
        {"method": "generateContentStream", "response": [model_turn(chunk) for chunk in turn]}
        for turn in turns
    ]
    side = model_turn([text(json.dumps({"reasoning": "done", "next_speaker": "user"}))])
    lines += [{"method": "generateContent", "response": side}] * 20
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def gemini_home(root: Path, ide: bool | None = None) -> Path:
    """A private HOME for the CLI: API-key auth, no folder-trust prompt, no updates;
    with ``ide``, IDE mode on or off (its nudge seen)."""
    home = root / "home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "general": {"disableAutoUpdate": True},
    }
    if ide is not None:
        settings["ide"] = {"enabled": ide, "hasSeenNudge": True}
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return home
