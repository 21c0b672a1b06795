"""The one importer of ``"module:attr"`` targets (``attr`` may be dotted: ``module:Outer.Inner``).

Retriever types (:mod:`harness.registry`), the ``retrievers`` listing, ``python`` retrievers
(:mod:`retrievers.custom`, which adds its own messages), judges (:mod:`harness.judging.judge`) and the
package's lazy exports all import through here. Standard library only: ``import harness`` stays cheap.

One rule for the code a user names (``--judge my_judges:KeywordJudge``, ``type: python`` with ``class:`` or
``function:``, a plugin's entry point): :func:`load_target` looks in the config's folder first (where there is
a config), then the working folder, then the usual ``sys.path`` (``PYTHONPATH``, the installed packages).
The console script does not put the working folder on the path by itself, and ``python -m`` does: without
this rule the same command worked one way and not the other. The folders are on the path while the module
imports and are taken off after (nothing leaks into later imports), and a module that is found nowhere is
one error naming every folder looked in. The harness's own modules import as usual.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any


class TargetNotFound(ImportError):
    """The module of a ``module:attr`` is in none of the folders looked in (the message names them)."""


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


def search_folders(config_dir: str | os.PathLike[str] | None = None) -> tuple[Path, ...]:
    """The folders a named ``module:attr`` is looked for in before ``sys.path``: the config's folder (where
    there is one), then the working folder; each once, resolved."""
    folders: list[Path] = []
    for folder in (config_dir, Path.cwd()):
        if folder is None:
            continue
        path = Path(folder).resolve()
        if path not in folders:
            folders.append(path)
    return tuple(folders)


@contextmanager
def first_on_path(folders: Sequence[Path]) -> Iterator[None]:
    """``folders`` first on ``sys.path``, in order, while the body runs; then taken off again."""
    entries = [str(f) for f in folders]
    sys.path[:0] = entries
    try:
        yield
    finally:
        for entry in entries:
            with suppress(ValueError):  # the imported code may have changed sys.path itself
                sys.path.remove(entry)


def where_looked(folders: Sequence[Path], config_dir: str | os.PathLike[str] | None = None) -> str:
    """``the config's folder (/a), the working folder (/b) or on PYTHONPATH``: the folders in the order
    they were searched, each named for what it is."""
    named: list[str] = []
    config = Path(config_dir).resolve() if config_dir is not None else None
    cwd = Path.cwd().resolve()
    for folder in folders:
        roles = [r for r, p in (("the config's folder", config), ("the working folder", cwd)) if p == folder]
        named.append(f"{' and '.join(roles) or 'the folder'} ({folder})")
    return ", ".join(named) + " or on PYTHONPATH and the installed packages"


def load_target(target: str, config_dir: str | os.PathLike[str] | None = None) -> Any:
    """:func:`import_target` under the one rule for code a user names (the module docstring). Raises
    :class:`TargetNotFound` (naming the folders looked in) when the module itself is found nowhere, and
    otherwise what :func:`import_target` raises: a module that imports but lacks a package it needs raises
    that ``ModuleNotFoundError``."""
    module_name, _ = split_target(target)
    folders = search_folders(config_dir)
    with first_on_path(folders):
        try:
            return import_target(target)
        except ModuleNotFoundError as e:
            missing = e.name or module_name
            if module_name != missing and not module_name.startswith(missing + "."):
                raise
            raise TargetNotFound(
                f"no module named {missing!r} in {where_looked(folders, config_dir)}", name=missing
            ) from None


def find_target(target: str, config_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether the module of ``target`` can be found under the rule, without running it (a parent package's
    ``__init__`` does run). ``False`` when it is found nowhere."""
    import importlib.util

    module_name, _ = split_target(target)
    with first_on_path(search_folders(config_dir)):
        try:
            return importlib.util.find_spec(module_name) is not None
        except (ImportError, ValueError):
            return False
