"""The path policy: which file paths the plugin may show, read or write for a
client (the CLI's ``openDiff``, the agent's file access, Neovim's tools).

Ground floor: imports nothing of the package. One set of rules for every caller:

- :func:`has_control`: a path (or any text that reaches a message or a log line)
  holding a control character is refused: a newline would split a message, an
  escape would reach the terminal.
- :class:`PathPolicy`: a file not loaded in Neovim is reached only under one of
  its roots (the workspace folders and ``diff.allowed_dirs``, links resolved).
- :func:`check_regular_or_absent` and :func:`open_regular`: on disk only regular
  files are read or written, or files that do not exist yet: reading a FIFO, a
  device or a socket would block (Neovim's main loop, or a worker thread) for
  ever, ``/dev/zero`` never ends.
- :func:`open_within` and :func:`create_within`: the policy checked and the
  file used in one step, on the open descriptor (a link swapped between a look
  and the open cannot lead out of the policy's folders).
- :func:`shown`: a path as a message shows it (quoted, escaped, cut).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass

# C0 controls, DEL and C1 controls: a newline or carriage return would split a
# message or a log line, an escape would reach the terminal.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def has_control(text: str) -> bool:
    """``text`` holds a control character (C0, DEL or C1)."""
    return _CONTROL.search(text) is not None


# Paths in error messages are cut to this many characters (a path can be any length).
MAX_PATH_SHOWN = 200


def shown(path: str) -> str:
    """``path`` for a message: quoted, control characters escaped, long ones cut."""
    if len(path) > MAX_PATH_SHOWN:
        path = path[:MAX_PATH_SHOWN] + "..."
    return repr(path)


@dataclass(frozen=True)
class PathPolicy:
    """Where files not loaded in Neovim may be reached: under one of ``roots`` (real
    paths: the workspace folders and the ``diff.allowed_dirs`` option; the agent
    adds its own workspace). Elsewhere only a file already loaded in a Neovim buffer
    is shown, read or written (the callers check that)."""

    roots: tuple[str, ...]

    @classmethod
    def of(cls, directories: Iterable[str]) -> PathPolicy:
        roots: dict[str, None] = {}
        for directory in directories:
            if directory and os.path.isabs(os.path.expanduser(directory)):
                roots.setdefault(os.path.realpath(os.path.expanduser(directory)), None)
        return cls(tuple(roots))

    def allows(self, path: str) -> bool:
        """``path``, links resolved, is under one of the roots."""
        return self.contains(os.path.realpath(path))

    def contains(self, real_path: str) -> bool:
        """``real_path``, taken as it is (no link resolved: the path of an open
        descriptor), is under one of the roots."""
        return any(
            real_path == root or real_path.startswith(root.rstrip("/") + "/") for root in self.roots
        )

    def with_roots(self, *directories: str) -> PathPolicy:
        """This policy with more roots."""
        return PathPolicy.of([*self.roots, *directories])

    def refusal(self, path: str) -> str:
        """Why ``path`` is refused, for the client and the user."""
        roots = ", ".join(self.roots) or "none"
        return f"{shown(path)} is outside the workspace folders ({roots})"


class NotRegularFileError(OSError):
    """A path that names something other than a regular file (a directory, a FIFO,
    a device, a socket, a file where a folder must be)."""


def check_regular_or_absent(path: str) -> str:
    """The real path of ``path`` if it is an existing regular file, or a file that
    does not exist yet, in folders that may not exist yet either (nothing is created
    here). Anything else raises :class:`NotRegularFileError` before anyone opens it;
    another failure to look (permissions) raises its :class:`OSError`."""
    try:
        st = os.stat(path)  # follows links: what a read would open
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise NotRegularFileError(f"{shown(path)} is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(
                f"{shown(path)} is not a regular file (a pipe, device or socket):"
                " only regular files are shown"
            )
    # A dangling link falls through: its target (checked below) would be created.
    parent = os.path.dirname(os.path.realpath(path))
    while not os.path.lexists(parent) and parent != os.path.dirname(parent):
        parent = os.path.dirname(parent)  # folders a write would create
    if not os.path.isdir(parent):
        raise NotRegularFileError(f"{shown(parent)} is not a directory")
    return os.path.realpath(path)


def check_regular(path: str, mode: int) -> None:
    """Raise :class:`NotRegularFileError` unless ``mode`` (of ``path``) is a regular file's."""
    if not stat.S_ISREG(mode):
        what = "a directory" if stat.S_ISDIR(mode) else "a pipe, device or socket"
        raise NotRegularFileError(f"{shown(path)} is not a regular file ({what})")


def open_regular(path: str, flags: int) -> int:
    """A descriptor of ``path`` (links followed) if it is a regular file. Opened
    without blocking and checked on the descriptor: a FIFO never holds the thread and
    nothing can be swapped in between the check and the use. Raises
    :class:`NotRegularFileError` for anything else."""
    with contextlib.suppress(FileNotFoundError):
        check_regular(path, os.stat(path).st_mode)  # a FIFO with no reader: say what
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    try:
        check_regular(path, os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


# -- the check and the use in one step: by descriptor --------------------------------


class OutsidePolicyError(PermissionError):
    """What was opened lies outside the policy's folders (a link swapped, or
    pointing out of them)."""


def descriptor_path(fd: int) -> str | None:
    """The path of what ``fd`` has open, as the system names it now (Linux's
    ``/proc/self/fd``, macOS's ``F_GETPATH``); None where neither answers."""
    with contextlib.suppress(OSError):
        return os.readlink(f"/proc/self/fd/{fd}")
    import fcntl

    getpath = getattr(fcntl, "F_GETPATH", None)
    if getpath is not None:
        with contextlib.suppress(OSError):
            raw = fcntl.fcntl(fd, getpath, bytes(1024))
            return os.fsdecode(raw.split(b"\0", 1)[0])
    return None


def _check_within(fd: int, path: str, policy: PathPolicy) -> None:
    real = descriptor_path(fd)
    if real is None:  # no name for the descriptor: the same file as the resolved path
        real = os.path.realpath(path)
        st, opened = os.stat(real), os.fstat(fd)
        if (st.st_dev, st.st_ino) != (opened.st_dev, opened.st_ino):
            raise OutsidePolicyError(f"{shown(path)} changed while it was opened")
    if not policy.contains(real):
        raise OutsidePolicyError(policy.refusal(path))


def open_within(path: str, flags: int, policy: PathPolicy | None) -> int:
    """:func:`open_regular` (no ``O_CREAT``: see :func:`create_within`), and the
    policy checked on the descriptor itself: what was opened is under the policy's
    folders, whatever a link named when someone looked before. Raises
    :class:`OutsidePolicyError` (closing it) when not."""
    fd = open_regular(path, flags & ~os.O_CREAT)
    if policy is not None:
        try:
            _check_within(fd, path, policy)
        except BaseException:
            os.close(fd)
            raise
    return fd


def create_within(path: str, flags: int, policy: PathPolicy | None) -> int:
    """A descriptor of the new file ``path``: its missing folders are made one at a
    time from the nearest existing one, which is checked on its descriptor, each
    opened without following a link, and the file is created there exclusively,
    its name not followed either. :class:`FileExistsError` when something (a file,
    a link) is there already."""
    folder, name = os.path.split(path)
    missing: list[str] = []
    while True:
        try:
            dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            break
        except FileNotFoundError:
            parent, part = os.path.split(folder)
            if parent == folder:
                raise
            missing.append(part)
            folder = parent
    try:
        if policy is not None:
            _check_within(dir_fd, folder, policy)
        nofollow = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        for part in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=dir_fd)
            next_fd = os.open(part, nofollow, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        create = os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        return os.open(name, flags | create, 0o666, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
