"""The user's words in a message a resumed conversation replays.

Gemini CLI 0.61.0 replays its recorded history (``session/load``) with every
user-role message as a ``user_message_chunk``, its parts flattened to text. Some
of those messages are the CLI's own, not the user's: the editor context it adds
in IDE mode ("Here is the user's editor context as a JSON object. ...") and the
tool results it sends back (``[Function Response: write_file]``). And a prompt's
text is followed by what it attached: ``--- Content from referenced files ---``
or ``--- Content from referenced context ---``, then ``Content from @<path>:``
and the content, for each attachment; the mentions of the files attached as
links end the prompt's own text (`` @/abs/path``).

:func:`user_words` keeps the user's words and names the attachments, which the
transcript draws as the attachment lines (``@path``) of a live prompt.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

# The CLI's own messages (its getIdeContextParts and partListUnionToString).
_CLI_MESSAGES = (
    "Here is the user's editor context as a JSON object.",
    "Here is a summary of changes in the user's editor context, in JSON format.",
)
_TOOL_TRAFFIC = re.compile(r"^(?:\s*\[Function (?:Response|Call): [^\]\n]*\])+\s*$")
_ATTACHED = re.compile(r"\n?--- Content from referenced (?:files|context) ---")
_ATTACHMENT = re.compile(r"^Content from @(.+):$", re.MULTILINE)


def _mention(spec: str) -> str:
    """``@path`` as the live prompt shows it: a ``file://`` URI as its path, one
    line as ``#L3`` (the CLI says ``#L3-3``)."""
    if spec.startswith("file://"):
        parts = urlsplit(spec)
        path = unquote(parts.path)
        spec = f"{path}#{parts.fragment}" if parts.fragment else path
    return "@" + re.sub(r"#L(\d+)-\1$", r"#L\1", spec)


def user_words(text: str) -> tuple[str, list[str]] | None:
    """The user's words in a replayed message and its attachments (as ``@path``
    mentions), or None for a message the CLI wrote itself."""
    stripped = text.lstrip()
    if not stripped.strip() or stripped.startswith(_CLI_MESSAGES):
        return None
    if _TOOL_TRAFFIC.match(text):
        return None
    found = _ATTACHED.search(text)
    if found is None:
        return text, []
    words, attached = text[: found.start()], text[found.start() :]
    specs = list(dict.fromkeys(_ATTACHMENT.findall(attached)))
    mentions = list(dict.fromkeys(_mention(spec) for spec in specs))
    # The CLI's text of a prompt ends in the mentions of what the panel attached
    # (" @/abs/path", "@file:///abs/path#L1-1"): the attachment lines say them.
    # Listed in that order, as the live prompt lists them.
    ends = {f"@{spec}": _mention(spec) for spec in specs} | {m: m for m in mentions}
    words = words.rstrip()
    listed: list[str] = []
    trimmed = True
    while trimmed:
        trimmed = False
        for end, mention in ends.items():
            if words.endswith(end):
                words = words[: -len(end)].rstrip()
                if mention not in listed:
                    listed.insert(0, mention)
                trimmed = True
    return words, listed + [m for m in mentions if m not in listed]
