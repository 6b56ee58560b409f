"""Extensions from outside the package: modules that register benchmarks, backends, test kinds,
selectors or mutation engines in the registries when imported.

They are named by the ``codea1_eval.plugins`` entry-point group of installed distributions, and by
``CODEA1_PLUGINS`` (comma-separated module names, importable from ``sys.path``) for a module that is
not packaged. The CLI loads them once before any command runs.
"""

from __future__ import annotations

import importlib
import os
from importlib.metadata import entry_points

from codea1_eval.errors import UserError

ENTRY_POINT_GROUP = "codea1_eval.plugins"
ENVIRONMENT_VARIABLE = "CODEA1_PLUGINS"
_loaded: set[str] = set()


def load_plugins() -> list[str]:
    """Import every plugin module not imported yet; returns their names. A plugin that fails to import
    is a UserError naming it."""
    names = [name.strip() for name in os.environ.get(ENVIRONMENT_VARIABLE, "").split(",") if name.strip()]
    targets = [(name, name) for name in names]
    targets += [(point.name, point.value) for point in entry_points(group=ENTRY_POINT_GROUP)]
    loaded = []
    for name, target in targets:
        if target in _loaded:
            continue
        module_name, _, attribute = target.partition(":")
        try:
            module = importlib.import_module(module_name)
            if attribute:
                getattr(module, attribute)()
        except Exception as exc:  # a broken plugin: one line naming it, not a traceback
            raise UserError(f"plugin {name!r} ({target}) failed to load: {type(exc).__name__}: {exc}") from None
        _loaded.add(target)
        loaded.append(name)
    return loaded
