"""Importing only the parts of an SDK the plugin uses.

``import mcp.server.lowlevel`` first runs ``mcp/__init__.py`` and
``mcp/server/__init__.py``, which import the SDK's client (an HTTP client, a TLS
and cryptography stack) and its high-level server framework: none of which this
server runs, and 12 MiB of the host's resident memory for ever (issue 25 item 4).
``acp/__init__.py`` imports the whole ACP schema (half a second of pydantic models)
before ``acp.connection``, which needs none of it: the agent panel connects
to its agent while the schema loads (issue 25 item 1).
:func:`skip_package_inits` registers such packages as bare modules with their
search path, so their submodules import as usual and their ``__init__`` never runs.
Nothing in the plugin imports a name from those ``__init__`` files.

:func:`defer_wire_models`: the mcp SDK validates each message against the models of
its protocol version's schema, and ``mcp_types`` builds those of both versions it
knows (hundreds of pydantic models) as it is imported, of which this server uses a
handful; deferred, each is built the first time it validates (the warm-up session
builds those of a connect, server.py): 2.9 MiB and a quarter of the server stack's
import time less.

:func:`stand_in`: ``sse_starlette`` imports ``uvicorn.main`` (Uvicorn's command
line: click, the reloader's multiprocessing) for its ``Server`` class alone, which
is ``uvicorn.server.Server``; a stand-in holding that class gives it the same
object, and 1.6 MiB less.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any


def skip_package_inits(*names: str) -> None:
    """Register each of ``names`` (outermost first), not yet imported, as a bare
    package: its submodules import, its ``__init__`` does not run."""
    for name in names:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            return  # not installed, or not a package: the usual import says so
        module = importlib.util.module_from_spec(spec)
        # module_from_spec does not execute the module: its __init__ never runs.
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)


def stand_in(name: str, **names: Any) -> None:
    """Register a module ``name`` holding only ``names``, unless it is imported
    already: for a library that imports a module of another only for a few names,
    when importing that module would load what the plugin never runs."""
    if name in sys.modules:
        return
    module = types.ModuleType(name, "A stand-in (gemini_companion.sdk.stand_in).")
    vars(module).update(names)
    sys.modules[name] = module


def defer_wire_models() -> None:
    """Have the models of ``mcp_types``' per-version schemas (its ``_v*`` packages,
    not yet imported) built when first used rather than when defined: pydantic's
    ``defer_build``, set on the base class they inherit their configuration from
    (the pinned SDK's ``mcp_types._wire_base.WireModel``). Another layout: nothing
    is changed, and the models build as they are defined."""
    try:
        from mcp_types._wire_base import WireModel
    except ImportError:
        return
    config = getattr(WireModel, "model_config", None)
    if isinstance(config, dict):
        config["defer_build"] = True
