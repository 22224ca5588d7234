"""Which encoding of the development-tool extension an agent speaks, from its agent
card: the extension's URI, the semantic version in it, and the dialect that follows
(a2a-development-tool-extension.md; client-behaviour.md, "The A2A server")."""

from __future__ import annotations

import re
from collections.abc import Sequence

EXTENSION_URI = (
    "https://github.com/google-gemini/gemini-cli/blob/main/docs/a2a/developer-profile/v0/spec.md"
)
EXTENSION_MARKERS = ("developer-profile", "development-tool")
SUPPORTED_MAJOR = 0

RFC = "rfc"
CODER_AGENT = "coder-agent"


class IncompatibleAgentError(ValueError):
    """The agent declares a version of the extension the plugin does not speak."""


# A version segment: ``v`` then a semantic version (Semantic Versioning 2.0.0: no
# leading zeros; pre-release and build after a full MAJOR.MINOR.PATCH), or its
# leading part alone (``v0``, ``v0.3``) as the RFC's URI has it.
_NUMBER = r"(?:0|[1-9][0-9]*)"
_IDENTIFIER = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_VERSION_SEGMENT = re.compile(
    rf"v({_NUMBER}(?:\.{_NUMBER}(?:\.{_NUMBER}"
    rf"(?:-{_IDENTIFIER}(?:\.{_IDENTIFIER})*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?)?)?)"
)


def _segments(uri: str) -> list[str]:
    from urllib.parse import urlsplit

    try:
        return urlsplit(uri).path.split("/")
    except ValueError:
        return []


def is_extension(uri: str) -> bool:
    """``uri`` names the development-tool extension: one of its path segments is the
    extension's name (``developer-profile`` in the RFC's URI, or ``development-tool``)."""
    return any(segment in EXTENSION_MARKERS for segment in _segments(uri))


def extension_version(uri: str) -> str | None:
    """The semantic version in the extension URI's version segment, the one right
    after the extension's name (``.../developer-profile/v0/spec.md`` -> ``0``); None
    when that segment is missing or not ``v`` + a semantic version."""
    segments = _segments(uri)
    for index in range(len(segments) - 1, -1, -1):
        if segments[index] in EXTENSION_MARKERS:
            following = segments[index + 1] if index + 1 < len(segments) else ""
            match = _VERSION_SEGMENT.fullmatch(following)
            return match.group(1) if match else None
    return None


def check_extension(uris: Sequence[str]) -> str:
    """The dialect for an agent card's extension URIs: ``rfc`` when it declares the
    extension in a version this plugin supports (semver: same major, 0), else
    :class:`IncompatibleAgentError`; ``coder-agent`` when it does not declare it
    (the real server 0.25.2)."""
    for uri in uris:
        if not is_extension(uri):
            continue
        version = extension_version(uri)
        if version is None:
            raise IncompatibleAgentError(
                f"the agent's extension {uri} names no semantic version after the"
                " extension's name (.../developer-profile/v<MAJOR>[.<MINOR>.<PATCH>]/...)"
            )
        major = int(re.split(r"[.+-]", version)[0])
        if major != SUPPORTED_MAJOR:
            raise IncompatibleAgentError(
                f"the agent speaks version {version} of the development-tool extension;"
                f" this plugin supports version {SUPPORTED_MAJOR}.x ({uri})"
            )
        return RFC
    return CODER_AGENT
