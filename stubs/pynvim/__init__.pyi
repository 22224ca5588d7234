# Type stubs for the part of pynvim this plugin uses (pynvim ships annotations
# but no py.typed marker, so mypy --strict would treat it as untyped).
import threading
from collections.abc import Callable
from typing import Any, TypeVar

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])

class _AsyncSession:
    def threadsafe_call(self, fn: Callable[[], Any]) -> None: ...
    def request(self, method: str, args: Any, response_cb: Callable[[Any, Any], None]) -> None: ...

class _Session:
    _async_session: _AsyncSession
    error_wrapper: Callable[[Any], Exception]
    _loop_thread: threading.Thread | None
    def threadsafe_call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None: ...

class Nvim:
    channel_id: int
    _session: _Session
    def exec_lua(self, code: str, *args: Any, async_: bool = ...) -> Any: ...
    def async_call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None: ...
    def command(self, string: str, async_: bool = ...) -> Any: ...

def plugin(cls: type[_T]) -> type[_T]: ...
def rpc_export(rpc_method_name: str, sync: bool = ...) -> Callable[[_F], _F]: ...
def function(
    name: str, range: bool | str | int = ..., eval: str | None = ..., sync: bool = ...,
    allow_nested: bool = ...,
) -> Callable[[_F], _F]: ...
def command(
    name: str, nargs: str | int = ..., complete: str | None = ..., range: bool | str | int | None = ...,
    count: int | None = ..., bang: bool = ..., register: bool = ..., sync: bool = ...,
    allow_nested: bool = ..., eval: str | None = ...,
) -> Callable[[_F], _F]: ...
def autocmd(
    name: str, pattern: str = ..., eval: str | None = ..., sync: bool = ..., allow_nested: bool = ...,
) -> Callable[[_F], _F]: ...
def shutdown_hook(f: _F) -> _F: ...
