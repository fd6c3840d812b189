"""A space's own functions ("path/to/file.py:function" or "package.module:function"), found in any process."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

from trainables.foundation.errors import UsageError

FORM = "'path/to/file.py:function' or 'package.module:function'"


def space_folder(space_ref: str) -> Path:
    """The folder of the space's module: a relative file in one of its references is read from there."""
    if not space_ref:
        return Path.cwd()
    if space_ref.endswith(".py") or "/" in space_ref:
        return Path(space_ref).expanduser().resolve().parent
    for name in (f"spaces.{space_ref}", space_ref):  # a built-in name, or a dotted module
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin:
            return Path(spec.origin).resolve().parent
    return Path.cwd()


def own_function(key: str, ref: str, space_ref: str = "") -> Callable:
    """The function `ref` names (`key`: the Space field, for the message); relative paths from the space's folder."""
    location, _, name = ref.rpartition(":")
    if not location or not name.isidentifier():
        raise UsageError(f"{key}={ref}: expected {FORM}")
    module = _module_of(key, ref, location, space_ref)
    function = getattr(module, name, None)
    if function is None:
        own = {n: v for n, v in vars(module).items() if getattr(v, "__module__", None) == module.__name__}
        defined = sorted(n for n, v in own.items() if callable(v) and not n.startswith("_"))
        raise UsageError(f"{key}={ref}: {location} defines no {name}; it defines {', '.join(defined) or 'nothing'}")
    if not callable(function):
        raise UsageError(f"{key}={ref}: {name} is a {type(function).__name__}, not a function")
    return function


_MODULES: dict[str, object] = {}  # a file imported once per process, however many references name it


def _module_of(key: str, ref: str, location: str, space_ref: str):
    if not location.endswith(".py"):
        try:
            return importlib.import_module(location)
        except Exception as exc:  # the user's module: say what broke, in one line
            raise UsageError(f"{key}={ref}: cannot import {location} ({type(exc).__name__}: {exc})") from None
    path = Path(location).expanduser()
    path = (path if path.is_absolute() else space_folder(space_ref) / path).resolve()
    if not path.is_file():
        raise UsageError(f"{key}={ref}: no such file {path}")
    if str(path) not in _MODULES:
        name = f"own_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # what the file defines pickles by this name (a Dataset class, for DataLoaders)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the user's module: say what broke, in one line
            del sys.modules[name]
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise UsageError(f"{key}={ref}: the module failed to load: {type(exc).__name__}: {first}") from None
        _MODULES[str(path)] = module
    return _MODULES[str(path)]
