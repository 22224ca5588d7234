"""What an accept answers: the option the user named, or "allow once", never more.

One rule for every way to accept (the panel's ``:GeminiAccept`` and its key, the
diff tab's ``:w`` and ``:GeminiAccept``, a request from Lua): an accept that names
no option answers with the agent's ``allow_once`` option only. Without one it
answers nothing and says which options the agent offers; "always" is sent only
when the user names it. A request whose block does not show all of it (longer
than render.py draws) is not answered by a bare accept either. Lua's
``agent/answers.lua`` says the same before it sends, for a message at once.
"""

from __future__ import annotations

from typing import Any

from .model import REJECT_KINDS, Confirmation, Option
from .render import request_hidden


class RefusedError(ValueError):
    """An accept that must not be answered, with what the user can do instead."""


def _hint(option: Option) -> str:
    return f":GeminiAccept {option.id}"


def offers(conf: Confirmation) -> str:
    """The accepting options ``conf`` offers, as the user may name them."""
    allows = [o for o in conf.options if o.kind not in REJECT_KINDS]
    if allows and all(o.kind == "allow_always" for o in allows):
        return "this agent offers only 'always': " + ", ".join(map(_hint, allows))
    if not allows:
        return "this agent offers no way to accept it: :GeminiReject"
    named = ", ".join(f"{_hint(o)} ({o.name})" for o in allows)
    return f"this agent offers no 'allow once'; name one: {named}"


def accept_option(conf: Confirmation, wanted: str | None) -> Option:
    """The option an accept of ``conf`` answers with (``wanted``: what the user
    named, an id or a kind). Raises :class:`RefusedError` when there is none: a
    named option the agent does not offer, or a bare accept without an
    ``allow_once`` or of a request not drawn whole."""
    title = conf.title.split("\n", 1)[0][:60]
    if wanted:
        option = conf.option(wanted)
        if option is None:
            raise RefusedError(
                f"no option {wanted!r} for {title}: choose one of {conf.option_ids()}"
            )
        return option
    hidden = request_hidden(conf)
    if hidden:
        raise RefusedError(
            f"nothing answered: {title} is longer than the panel shows ({hidden} characters"
            " not shown). Read it whole in require('gemini_companion.agent').state().pending,"
            " then name an option to accept it, or :GeminiReject"
        )
    option = conf.option(None)
    if option is None:
        raise RefusedError(f"nothing answered for {title}: {offers(conf)}")
    return option


def refused(conf: Confirmation, wanted: str | None) -> str | None:
    """Why an accept of ``conf`` naming ``wanted`` answers nothing, or None."""
    try:
        accept_option(conf, wanted)
    except RefusedError as exc:
        return str(exc)
    return None


def pending_entry(call_id: str, conf: Confirmation) -> dict[str, Any]:
    """A waiting confirmation as ``state().pending`` lists it: what it asks, whole
    (``input``: the tool's arguments its title does not show; ``hidden``: the
    characters its block does not show, when some are not)."""
    entry: dict[str, Any] = {
        "id": call_id,
        "kind": conf.kind,
        "title": conf.title,
        "options": [{"id": o.id, "name": o.name, "kind": o.kind} for o in conf.options],
    }
    for name in ("file_path", "command", "directory", "server", "tool", "description"):
        value = getattr(conf, name)
        if value:
            entry[name] = value
    if conf.inputs:
        entry["input"] = [{"name": name, "value": value} for name, value in conf.inputs]
    hidden = request_hidden(conf)
    if hidden:
        entry["hidden"] = hidden
    return entry
