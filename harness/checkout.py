"""Keep a checkout's data folders from passing for the packages they are named after.

A checkout keeps its demo data in ``datasets/`` at the top level (the card's layout). Whenever the checkout's
root is on ``sys.path`` (``python -m harness`` from the root, ``PYTHONPATH=.``, pytest's rootdir insertion, an
editable install that adds the root through a ``.pth``), Python makes that folder a *namespace package* named
``datasets`` on a machine where Hugging Face ``datasets`` is not installed. Libraries that probe for the real
one (``find_spec("datasets")``) then import it, and the next ``from datasets import Dataset`` fails: LanceDB
reported itself "not installed" that way.

:func:`install` adds a path hook that gives the checkout's root, as a ``sys.path`` entry, the usual finder
less the namespace portions of the :data:`SHADOWED` folders: ``find_spec("datasets")`` is then ``None`` where
the package is not installed, and the real package where it is (a regular package anywhere on the path wins
over a namespace portion anyway). Standard library only: ``import harness`` stays cheap.
"""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

#: Top-level folders of the checkout that are data, not code, and share a name with a package people install.
SHADOWED = ("datasets",)

#: The checkout's root: the folder holding the ``harness`` package (site-packages for a wheel install, where
#: no folder of ours lies beside it).
ROOT = Path(__file__).resolve().parents[1]


class _CheckoutEntry:
    """The finder for the checkout's root as a ``sys.path`` entry: the usual one, less the portions of a
    namespace package a :data:`SHADOWED` folder would give. Nothing else changes: the packages beside it
    (``harness``, ``retrievers``, ``tests``) resolve as before."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def find_spec(self, fullname: str, target: Any = None) -> ModuleSpec | None:
        spec = self._inner.find_spec(fullname, target)
        if spec is not None and fullname in SHADOWED and spec.loader is None:
            return None  # a bare folder (a namespace portion): data, not the package
        return spec

    def invalidate_caches(self) -> None:
        invalidate = getattr(self._inner, "invalidate_caches", None)
        if invalidate is not None:
            invalidate()

    def __getattr__(self, name: str) -> Any:  # iter_modules and friends see the usual finder
        return getattr(self._inner, name)


def _hook(entry: str) -> _CheckoutEntry:
    """A ``sys.path_hooks`` entry: the checkout's root gets :class:`_CheckoutEntry`, any other path the
    hooks after this one (ImportError is how a hook says "not mine")."""
    if not _is_root(entry):
        raise ImportError("not the checkout's root")
    for hook in sys.path_hooks:
        if hook is _hook:
            continue
        try:
            return _CheckoutEntry(hook(entry))
        except ImportError:
            continue
    raise ImportError("no finder for the checkout's root")


def _is_root(entry: Any) -> bool:
    try:
        return isinstance(entry, str) and Path(entry or ".").resolve() == ROOT
    except (OSError, ValueError):
        return False


def _inside_checkout(spec: ModuleSpec) -> bool:
    """A namespace package (no loader of its own file) whose every portion lies in the checkout."""
    if spec.origin not in (None, "namespace") or spec.submodule_search_locations is None:
        return False
    locations = [Path(p).resolve() for p in spec.submodule_search_locations]
    return bool(locations) and all(p.parent == ROOT for p in locations)


def install() -> None:
    """Put the hook first on ``sys.path_hooks`` (once), forget the finder already cached for the root, and
    drop a shadowing module already imported."""
    if _hook in sys.path_hooks:
        return
    sys.path_hooks.insert(0, _hook)
    for entry in [e for e in sys.path_importer_cache if _is_root(e)]:
        del sys.path_importer_cache[entry]
    for name in SHADOWED:
        module = sys.modules.get(name)
        spec = getattr(module, "__spec__", None)
        if module is not None and spec is not None and _inside_checkout(spec):
            del sys.modules[name]
