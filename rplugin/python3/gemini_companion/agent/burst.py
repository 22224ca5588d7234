"""What one read of the agent's pipe sets going, done at the end of that read.

The agent's pipe is read in one callback of the session's loop, which takes every
whole ``session/update`` it holds at once (acp/wire.py). What those updates push to
the panel (agent/view.py) goes in one batch sent at the end of that callback
(:func:`defer`), rather than in a callback of its own on the loop's next turn: a
turn of the loop and a poll of the selector less per chunk (issue 25 item 3).
Outside a read, :func:`defer` says no and the caller schedules its own callback.

Per thread: a read runs on the loop's thread, and nothing else is deferred there
meanwhile.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

_local = threading.local()


def begin() -> None:
    """A read starts on this thread: :func:`defer` holds callbacks until :func:`end`."""
    _local.held = []


def end() -> None:
    """The read is over: run what was deferred, in order (each once)."""
    held: list[Callable[[], None]] | None = getattr(_local, "held", None)
    _local.held = None
    for callback in held or ():
        try:
            callback()
        except Exception:
            log.exception("a callback deferred to the end of a read failed")


def defer(callback: Callable[[], None]) -> bool:
    """Run ``callback`` at the end of the read under way on this thread, if one is:
    True; False when none is (the caller schedules it)."""
    held: list[Callable[[], None]] | None = getattr(_local, "held", None)
    if held is None:
        return False
    held.append(callback)
    return True
