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
"""

from __future__ import annotations

import importlib.util
import sys


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
