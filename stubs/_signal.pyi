# The C module behind ``signal`` (early.py uses it: ``signal`` imports ``enum``,
# which costs milliseconds before the discovery file). Only what is used.
from collections.abc import Callable, Iterable
from types import FrameType

SIGTERM: int
SIG_BLOCK: int
SIG_UNBLOCK: int

def signal(
    signalnum: int, handler: Callable[[int, FrameType | None], object] | int
) -> object: ...
def pthread_sigmask(how: int, mask: Iterable[int]) -> set[int]: ...
