"""The discovery file through which Gemini CLI finds the companion server.

Spec: ide-companion-spec.md section I.2; client-behaviour.md "IDE mode: discovery".
The CLI scans ``<os.tmpdir()>/gemini/ide/`` for ``gemini-ide-server-<PID>-<PORT>.json``
files owned by its own uid, so this module follows Node's tmpdir rule rather than
Python's, writes atomically with mode 0600, and never writes through a symlink.
The folder is shared by every user under a shared tmpdir (see
:func:`ensure_discovery_dir`).

Imported before the discovery file is written at start (early.py), so it imports
only C modules and ``os`` at load time: ``pathlib``, ``json``, ``re``, ``typing``
and ``contextlib`` cost 15-20 ms together there. Paths are strings.

The files this process has published and not removed are kept here, whichever
thread wrote them: as the process ends (Neovim quits, even right after a restart
whose server thread has not started yet), :func:`remove_published` removes them and
no file is written after it. A file removed once is never written again by the
same :class:`DiscoveryFile` (a workspace change racing a stop cannot bring it back).
"""

from __future__ import annotations

import _thread
import errno
import os
import stat
from _json import encode_basestring_ascii

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

IDE_NAME = "neovim"
IDE_DISPLAY_NAME = "Neovim"

_FILE_PREFIX, _FILE_SUFFIX = "gemini-ide-server-", ".json"


class DiscoveryError(Exception):
    """The discovery file could not be written safely; the message says why."""


def node_tmpdir(env: Mapping[str, str] | None = None) -> str:
    """Return what Node's ``os.tmpdir()`` returns on POSIX for ``env``.

    ``$TMPDIR``, else ``$TMP``, else ``$TEMP``, else ``/tmp``; a trailing ``/`` is
    removed unless the path is ``/`` itself.
    """
    env = os.environ if env is None else env
    path = env.get("TMPDIR") or env.get("TMP") or env.get("TEMP") or "/tmp"
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return path


def discovery_dir(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(node_tmpdir(env), "gemini", "ide")


def workspace_path_value(directories: Iterable[str]) -> str:
    """Join the real paths of ``directories`` with ``:``, keeping first-seen order.

    A directory whose real path contains ``:`` cannot be expressed in the
    ``:``-separated list the CLI splits, so it is left out.
    """
    seen: dict[str, None] = {}
    for directory in directories:
        if not directory:
            continue
        real = os.path.realpath(directory)
        if ":" in real or not os.path.isabs(real):
            continue
        seen.setdefault(real, None)
    return ":".join(seen)


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def tmpdir_is_shared(tmpdir: str) -> bool:
    """Whether other users may create entries in ``tmpdir`` (``/tmp``), as opposed to
    a per-user ``$TMPDIR`` that only its owner can write to."""
    st = os.stat(tmpdir)
    return st.st_uid != os.getuid() or bool(st.st_mode & 0o022)


def _prepare_dir(directory: str, mode: int) -> None:
    """Create ``directory`` with ``mode``, or make an existing one safe to use.

    An own folder gets ``mode`` (an old or careless one at 0777 is fixed). Another
    user's folder is used only when it is sticky, like ``/tmp`` (nobody else can
    remove or replace our file in it) and we may write to it; a symlink never.
    """
    try:
        os.mkdir(directory, mode)
    except FileExistsError:
        pass
    else:
        os.chmod(directory, mode)  # mkdir's mode is masked by the umask
        return
    st = os.lstat(directory)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise DiscoveryError(f"{directory} is not a directory (a symlink or a file): remove it")
    if st.st_uid == os.getuid():
        if stat.S_IMODE(st.st_mode) != mode:
            os.chmod(directory, mode)
        return
    if not st.st_mode & stat.S_ISVTX or not os.access(directory, os.W_OK | os.X_OK):
        raise DiscoveryError(
            f"{directory} belongs to another user (uid {st.st_uid}) and is not shared"
            " (mode 1777): ask them or an administrator to remove it, or set TMPDIR to a"
            " folder of your own"
        )


def ensure_discovery_dir(directory: str) -> None:
    """Make ``<tmpdir>/gemini/ide`` ready for our discovery file.

    The CLI reads exactly this path, so under a shared tmpdir every user's Neovim
    writes to the same folders: they are made like ``/tmp`` (1777: everyone may add
    files, nobody may remove another's), and what is private is each user's file
    (0600, checked by the CLI to be its user's). Under a per-user tmpdir both
    folders are 0700.
    """
    parent = os.path.dirname(directory)
    tmpdir = os.path.dirname(parent)
    mode = 0o1777 if tmpdir_is_shared(tmpdir) else 0o700
    _prepare_dir(parent, mode)
    _prepare_dir(directory, mode)


# Serialises writes and removals of discovery files across threads, so that the
# removal at the end cannot miss a file being written.
_lock = _thread.allocate_lock()


class _Published:
    """The paths this process published and has not removed; ``ended`` once
    :func:`remove_published` ran (nothing is written any more)."""

    __slots__ = ("ended", "paths")

    def __init__(self) -> None:
        self.paths: dict[str, None] = {}
        self.ended = False


_published = _Published()


class DiscoveryFile:
    """One server's discovery file: ``gemini-ide-server-<pid>-<port>.json``.

    (A plain class, not a dataclass nor a NamedTuple: this module is imported before
    the discovery file is written at start (early.py), and ``dataclasses`` or
    ``typing`` cost milliseconds there.)"""

    __slots__ = ("_removed", "auth_token", "directory", "pid", "port")

    def __init__(self, directory: str, pid: int, port: int, auth_token: str) -> None:
        self.directory = directory
        self.pid = pid
        self.port = port
        self.auth_token = auth_token
        self._removed = False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DiscoveryFile) and (
            self.directory,
            self.pid,
            self.port,
            self.auth_token,
        ) == (other.directory, other.pid, other.port, other.auth_token)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"DiscoveryFile({self.path!r})"

    @property
    def path(self) -> str:
        return os.path.join(self.directory, f"{_FILE_PREFIX}{self.pid}-{self.port}{_FILE_SUFFIX}")

    def content(self, workspace_path: str) -> dict[str, object]:
        return {
            "port": self.port,
            "workspacePath": workspace_path,
            "authToken": self.auth_token,
            "ideInfo": {"name": IDE_NAME, "displayName": IDE_DISPLAY_NAME},
        }

    def encoded(self, workspace_path: str) -> bytes:
        """:meth:`content` as ``json.dumps`` writes it, without importing ``json``."""
        return (
            f'{{"port": {int(self.port)}, "workspacePath": '
            f"{encode_basestring_ascii(workspace_path)}, "
            f'"authToken": {encode_basestring_ascii(self.auth_token)}, '
            f'"ideInfo": {{"name": {encode_basestring_ascii(IDE_NAME)}, '
            f'"displayName": {encode_basestring_ascii(IDE_DISPLAY_NAME)}}}}}'
        ).encode("ascii")

    def write(self, workspace_path: str) -> bool:
        """Write (or rewrite) the file atomically: a private temporary file, then rename.

        ``rename`` replaces a symlink planted at the target instead of following it,
        and the temporary file is created with ``O_EXCL`` and mode 0600. False, and
        nothing written, once this file was removed or the process is ending.
        """
        with _lock:
            if self._removed or _published.ended:
                return False
            ensure_discovery_dir(self.directory)
            data = self.encoded(workspace_path)
            fd, tmp = _private_temp_file(self.directory)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.chmod(tmp, 0o600)
                os.replace(tmp, self.path)
            except BaseException:
                try:  # noqa: SIM105 (contextlib costs an import here; see the docstring)
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            _published.paths[self.path] = None
            return True

    def remove(self) -> None:
        """Remove the file, for good: this object never writes it again."""
        with _lock:
            self._removed = True
            _published.paths.pop(self.path, None)
            _unlink(self.path)


def _unlink(path: str) -> None:
    try:  # noqa: SIM105 (as above)
        os.unlink(path)
    except FileNotFoundError:
        pass


def remove_published(timeout: float = 1.0) -> None:
    """The process ends: remove every discovery file it published and has not removed
    yet, and write none after this. Waits at most ``timeout`` seconds for a write in
    progress on another thread (a signal handler may call this while its own thread
    holds the lock: it then removes what it can without it)."""
    locked = _lock.acquire(True, timeout)
    try:
        _published.ended = True
        for path in list(_published.paths):
            _published.paths.pop(path, None)
            try:  # noqa: SIM105 (as above)
                _unlink(path)
            except OSError:
                pass
    finally:
        if locked:
            _lock.release()


def _private_temp_file(directory: str) -> tuple[int, str]:
    """A new file in ``directory`` with a random name, mode 0600, opened for writing
    (``tempfile.mkstemp``'s guarantees without importing ``tempfile``: see above)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        path = os.path.join(directory, f".gemini-ide-server-{os.urandom(6).hex()}.tmp")
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(directory))


def remove_stale_files(directory: str, own_pid: int, keep: str | None = None) -> list[str]:
    """Remove discovery files of Neovim processes that no longer run.

    Only files owned by this user, written by this plugin (``ideInfo.name`` is
    ``neovim``) and naming a dead PID (or this very PID, left by a server of ours
    that did not stop cleanly) are removed: another IDE's file is never touched,
    nor ``keep`` (the current server's own, written before this runs). The agent's
    own file has the legacy name ``gemini-ide-server-<hostpid>.json``
    (agent_ide.py): one left by a host that was killed goes too.
    """
    import json
    import re

    file_re = re.compile(r"^gemini-ide-server-(\d+)(?:-\d+)?\.json$")
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    uid = os.getuid()
    for entry in entries:
        match = file_re.match(entry.name)
        if match is None or (keep is not None and entry.path == str(keep)):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if st.st_uid != uid or not entry.is_file(follow_symlinks=False):
                continue
            pid = int(match.group(1))
            if pid != own_pid and pid_alive(pid):
                continue
            with open(entry.path, "rb") as fh:
                info = json.loads(fh.read(65536) or b"{}")
            if not isinstance(info, dict) or info.get("ideInfo", {}).get("name") != IDE_NAME:
                continue
            os.unlink(entry.path)
            removed.append(entry.path)
        except (OSError, ValueError, AttributeError) as exc:
            if isinstance(exc, OSError) and exc.errno not in (errno.ENOENT, errno.EACCES):
                raise
            continue
    return removed
