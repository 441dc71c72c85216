"""sqlite-utils' `Database`, imported without numpy and pandas: sqlite-utils imports them when
installed, for type mappings of values Paperboy never stores, and they slow every start."""

from __future__ import annotations

import logging
import sys

log = logging.getLogger(__name__)

# digests/semantic.py imports numpy itself when it needs it.
_HIDDEN = [name for name in ("numpy", "pandas") if name not in sys.modules]
for _name in _HIDDEN:
    sys.modules[_name] = None  # type: ignore[assignment]  # an import of it raises ImportError
try:
    from sqlite_utils import Database
finally:
    for _name in _HIDDEN:
        if sys.modules.get(_name, False) is None:
            del sys.modules[_name]

# sqlite-utils looks for its plugins (setuptools entry points, through importlib.metadata)
# when a process opens its first Database, a noticeable part of a quick command's start,
# for plugins Paperboy does not use. Paperboy's connections never run them.
PLUGINS = False

__all__ = ["PLUGINS", "Database"]
