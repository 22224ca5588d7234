"""How both dialects' JSON values are read: a field under either proto3 JSON
spelling, and a value the panel shows as text."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any


def get(data: Mapping[str, Any] | None, name: str, default: Any = None) -> Any:
    """``data[name]`` under either proto3 JSON spelling (``tool_call_id``/``toolCallId``)."""
    if not isinstance(data, Mapping):
        return default
    if name in data:
        return data[name]
    camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)
    return data.get(camel, default)


def text_of(value: Any) -> str | None:
    """``value`` as the panel shows it: a string as it is, anything else as JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1)
