"""glibc's allocator, tuned for big request bodies (bodies.py): blocks from
:data:`~gemini_companion.security.BIG_BODY_BYTES` on get pages of their own, given
back to the system when freed, and after a big request what is left free in the
heaps goes back too, so the host returns near its size before the request."""

from __future__ import annotations

import contextlib
from typing import Any

from .security import BIG_BODY_BYTES


class Allocator:
    """glibc's allocator, where there is one (else every call does nothing)."""

    # mallopt parameters: allocations from this size on get pages of their own; the
    # number of heaps (arenas) threads allocate from.
    M_MMAP_THRESHOLD = -3
    M_ARENA_MAX = -8

    def __init__(self) -> None:
        self._libc: Any = None
        self._loaded = False
        self.tuned = False

    def _load(self) -> Any:
        if not self._loaded:
            self._loaded = True
            import ctypes

            with contextlib.suppress(OSError, AttributeError):
                # not ctypes.util.find_library: it runs ldconfig in a subprocess
                libc = ctypes.CDLL("libc.so.6")
                libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
                libc.malloc_trim.argtypes = [ctypes.c_size_t]
                self._libc = libc
        return self._libc

    def tune(self, threshold: int = BIG_BODY_BYTES) -> None:
        """Blocks of ``threshold`` bytes and more are mapped on their own, and given
        back to the system as soon as they are freed. By default glibc raises that
        threshold to the size of the biggest block freed so far (up to 32 MiB), so
        after one big request the next ones land in its heaps, whose free top it
        keeps (up to 64 MiB per thread): the host stayed ~60 MiB above its size at
        rest after each big closeDiff."""
        libc = self._load()
        if libc is not None and not self.tuned:
            self.tuned = bool(libc.mallopt(self.M_MMAP_THRESHOLD, threshold))

    def one_heap(self) -> None:
        """Every thread allocates from the main heap, as the host's threads take turns
        (one runs Python at a time) and only the server's loop works for long. By
        default each new thread that allocates gets a heap of its own (up to 8 per
        core), and each keeps the free pages its thread left: 1 MiB of the host with
        the agent panel open (issue 25 item 4). Call before starting any thread: one
        holds the heap it was given."""
        libc = self._load()
        if libc is not None:
            libc.mallopt(self.M_ARENA_MAX, 1)

    def trim(self) -> None:
        """Give free heap pages back to the system."""
        libc = self._load()
        if libc is not None:
            libc.malloc_trim(0)


allocator = Allocator()


def release_memory() -> None:
    """After a big request: what its smaller pieces left free in the heaps goes back
    to the system (the big blocks went already, see :meth:`Allocator.tune`)."""
    allocator.trim()
