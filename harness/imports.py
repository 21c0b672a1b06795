"""The one importer of ``"module:attr"`` targets (``attr`` may be dotted: ``module:Outer.Inner``).

Retriever types (:mod:`harness.registry`), the ``retrievers`` listing, ``python`` retrievers
(:mod:`retrievers.custom`, which adds the config's folder to the path and its own messages) and the
package's lazy exports all import through here. Standard library only: ``import harness`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any


class NoAttribute(AttributeError):
    """The module imported, but has no such attribute (an ``AttributeError`` raised while the module
    itself imports is not this)."""


def split_target(target: str) -> tuple[str, str]:
    """``"package.module:Name"`` -> ``("package.module", "Name")``; ValueError for any other shape,
    a file path included (``./judges:Good``: importlib takes module names, not paths)."""
    module, sep, attr = target.partition(":")
    module, attr = module.strip(), attr.strip()
    if not sep or not module or not attr:
        raise ValueError(f"{target!r} is not an import path of the form 'package.module:Name'")
    if not all(part.isidentifier() for part in module.split(".")):
        stem = module.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].removesuffix(".py")
        hint = f" (put its folder on PYTHONPATH and name the module: {stem}:{attr})" if stem.isidentifier() else ""
        raise ValueError(f"{module!r} is not a module name (dotted Python names, not a file path){hint}")
    if not all(part.isidentifier() for part in attr.split(".")):
        raise ValueError(f"{attr!r} in {target!r} is not a Python name (Name or Outer.Inner)")
    return module, attr


def import_target(target: str) -> Any:
    """Import ``module`` of ``module:attr`` and return ``attr``. Raises what the import raises
    (``ImportError``...) and :class:`NoAttribute` when the attribute is missing."""
    module_name, attr = split_target(target)
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise NoAttribute(f"{target} does not exist") from None
    return obj
