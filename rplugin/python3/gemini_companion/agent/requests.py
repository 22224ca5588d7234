"""The panel's requests (host.lua's ``agent`` notifications): their arguments
read and checked, each handed to the session, its failure shown.

A request runs in a task of its own on the server loop; one that cannot be
carried out gets a clear message (:class:`BadRequestError`) and changes nothing.
Nothing here knows the session's insides: it sees the :class:`Session` it serves.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextvars
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, Protocol

from .image import ImageSource
from .model import Prompt, Reference
from .transport import TransportError

log = logging.getLogger(__name__)

_MESSAGE_FITS = 50
"""Characters of a refusal that fit in the message area beside its prefix."""

# How many starts a request's task had seen when the request arrived (in the task's
# context): a start that failed after that is its answer too (session.py).
STARTS_SEEN: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "gemini_companion_starts_seen", default=None
)


class BadRequestError(ValueError):
    """A request from the panel that cannot be carried out, with the reason."""


class ShownStartFailureError(TransportError):
    """The start this request waited for failed, and its failure is shown already."""


class Session(Protocol):
    """What the requests call (session.py's :class:`~.session.AgentSession`)."""

    starts: int

    def notice(self, text: str, level: str) -> None: ...
    def notify(self, text: str, level: str) -> None: ...
    def spawn(self, coro: Coroutine[Any, Any, None]) -> None: ...
    async def ensure_started(self) -> None: ...
    async def prompt(self, prompt: Prompt) -> None: ...
    async def prompt_request(
        self,
        text: str,
        refs: tuple[Reference, ...],
        args: Mapping[str, Any],
        images: tuple[ImageSource, ...] = (),
    ) -> None: ...
    async def answer_pending(
        self, call_id: str | None, option: str | None, reject: bool
    ) -> None: ...
    async def cancel(self) -> None: ...
    async def command(self, name: str, args: str) -> None: ...
    async def set_mode(self, mode: str) -> None: ...
    async def set_model(self, model: str) -> None: ...
    async def list_sessions(self) -> None: ...
    async def resume(self, session_id: str) -> None: ...


def text_arg(args: Mapping[str, Any], name: str, *, optional: bool = False) -> str | None:
    value = args.get(name)
    if value is None or value == "":
        if optional:
            return None
        raise BadRequestError(f"'{name}' is missing")
    if not isinstance(value, str):
        raise BadRequestError(f"'{name}' must be a string")
    return value


def _text(args: Mapping[str, Any], name: str) -> str:
    value = text_arg(args, name)
    assert value is not None
    return value


def references(raw: Any) -> tuple[Reference, ...]:
    if not raw:
        return ()
    if not isinstance(raw, list):
        raise BadRequestError("'references' must be a list")
    refs = []
    for item in raw:
        if not isinstance(item, Mapping) or not isinstance(item.get("path"), str):
            raise BadRequestError("each reference needs a 'path'")
        start, end = item.get("start_line"), item.get("end_line")
        kind = item.get("kind") or "file"
        if kind not in ("file", "diagnostics"):
            raise BadRequestError(f"unknown reference kind {kind!r}")
        refs.append(
            Reference(
                str(item["path"]),
                int(start) if start is not None else None,
                int(end) if end is not None else None,
                item.get("text") if isinstance(item.get("text"), str) else None,
                kind,
            )
        )
    return tuple(refs)


def images(raw: Any) -> tuple[ImageSource, ...]:
    """The images a prompt attaches (agent/images.lua): ``{path}`` of a file, or
    ``{name, data}``, the clipboard's image in base64."""
    if not raw:
        return ()
    if not isinstance(raw, list):
        raise BadRequestError("'images' must be a list")
    out = []
    for item in raw:
        if isinstance(item, Mapping) and isinstance(item.get("path"), str):
            out.append(ImageSource(path=item["path"]))
        elif isinstance(item, Mapping) and isinstance(item.get("data"), str):
            try:
                data = base64.b64decode(item["data"], validate=True)
            except binascii.Error:
                raise BadRequestError("an image's 'data' is not base64") from None
            out.append(ImageSource(name=str(item.get("name") or "clipboard"), data=data))
        else:
            raise BadRequestError("each image needs a 'path' or 'data'")
    return tuple(out)


Handler = Callable[[Session, Mapping[str, Any]], Awaitable[None]]


async def _prompt(session: Session, args: Mapping[str, Any]) -> None:
    await session.prompt_request(
        _text(args, "text"), references(args.get("references")), args, images(args.get("images"))
    )


async def _answer(session: Session, args: Mapping[str, Any]) -> None:
    call_id, option = (
        text_arg(args, "call_id", optional=True),
        text_arg(args, "option", optional=True),
    )
    await session.answer_pending(call_id, option, False)


async def _reject(session: Session, args: Mapping[str, Any]) -> None:
    call_id, option = (
        text_arg(args, "call_id", optional=True),
        text_arg(args, "option", optional=True),
    )
    await session.answer_pending(call_id, option, True)


async def _command(session: Session, args: Mapping[str, Any]) -> None:
    name = _text(args, "name").lstrip("/").strip()
    await session.command(name, text_arg(args, "args", optional=True) or "")


HANDLERS: Mapping[str, Handler] = {
    "prompt": _prompt,
    "answer": _answer,
    "reject": _reject,
    "cancel": lambda session, args: session.cancel(),
    "command": _command,
    "connect": lambda session, args: session.ensure_started(),
    "mode": lambda session, args: session.set_mode(_text(args, "mode")),
    "model": lambda session, args: session.set_model(_text(args, "model")),
    "sessions": lambda session, args: session.list_sessions(),
    "resume": lambda session, args: session.resume(_text(args, "session_id")),
}


def dispatch(session: Session, action: str, args: Mapping[str, Any]) -> None:
    """Run the request in the background (a task of the session's), its errors shown."""
    handler = HANDLERS.get(action)
    if handler is None:
        session.notice(f"unknown agent request {action!r}", "error")
        return
    STARTS_SEEN.set(session.starts)  # this callback's own context: the task's copy
    session.spawn(_guarded(session, handler, args))


async def _guarded(session: Session, handler: Handler, args: Mapping[str, Any]) -> None:
    try:
        await handler(session, args)
    except asyncio.CancelledError:
        raise
    except BadRequestError as exc:
        # The message area shows one line of an 80-column screen: a refusal too
        # long for it is in the transcript in full too; a short one stays out.
        if len(str(exc)) > _MESSAGE_FITS:
            session.notice(str(exc), "warning")
        session.notify(f"Gemini agent: {exc}", "warning")
    except ShownStartFailureError:
        pass  # the request that made the start shows why it failed
    except TransportError as exc:
        session.notice(str(exc), "error")
    except Exception as exc:
        log.exception("agent request failed")
        session.notice(f"{type(exc).__name__}: {exc}", "error")
