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
    """``"package.module:Name"`` -> ``("package.module", "Name")``; ValueError for any other shape."""
    module, sep, attr = target.partition(":")
    if not sep or not module.strip() or not attr.strip():
        raise ValueError(f"{target!r} is not an import path of the form 'package.module:Name'")
    return module.strip(), attr.strip()


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
