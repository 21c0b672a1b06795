"""What a judge is (:class:`Judge`: a ``name`` and ``grade(pairs)``) and which judges there are: the
built-ins by name, the installed plugins by entry point, any class by ``module:Class``.

A team's judge needs nothing from the harness: a class with a ``name`` (a str, written beside every
grade it gives: its provenance, and the identity its cached grades are kept under, so a changed
judge needs a changed name) and ``grade(pairs)`` (each pair has ``query_id``, ``query``, ``doc_id``
and ``text``, the document's title on its own line then its body; one grade per pair, 0-3, or None
for no grade). ``harness judge auto --judge module:Class`` builds it with the ``--judge-option
KEY=VALUE`` pairs as keyword arguments (strings); :func:`harness.judging.auto.fill` gives it the
cache, the resume, Ctrl-C and the provenance columns. Optional, for what a judge can do better:
``batch_size`` (pairs per ``grade`` call, default 32), ``concurrency`` (calls at a time, default 1:
a team's class need not be thread-safe), ``close()``, ``probabilities(pairs)`` (one ``[p_0, p_1,
p_2, p_3]`` per pair, summing to 1: how sure it is, for ``judge auto --probabilities`` and
``judge sample --active``; :mod:`harness.judging.probabilities` checks it).

Plugins register a class under a name in the entry-point group ``retrieval_harness.judges``
(``[project.entry-points."retrieval_harness.judges"] mine = "my_pkg.judges:MyJudge"``).
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

import numpy as np

from harness.engine.schedule import describe
from harness.errors import InputError
from harness.imports import NoAttribute, TargetNotFound, import_target, load_target

ENTRY_POINT_GROUP = "retrieval_harness.judges"

#: the built-in judges: name -> ``module:Class`` (imported only when chosen: the cross-encoder needs torch)
BUILTIN: dict[str, str] = {
    "http": "harness.judging.umbrela:UmbrelaJudge",
    "cross-encoder": "harness.judging.crossenc:CrossEncoderJudge",
}
#: the ``judge`` cell a grade made on the ``judge serve`` page carries (a person's: never overwritten)
PERSON = "person"
#: how the ``judge`` cell of a grade a built-in judge gave starts
BUILTIN_PREFIXES = ("llm:", "cross-encoder:")


@dataclass(frozen=True)
class Pair:
    """One (query, document) pair to grade; ``text`` is the passage a judge reads (the title on its
    own line when there is one, then the body)."""

    query_id: str
    query: str
    doc_id: str
    text: str


@runtime_checkable
class Judge(Protocol):
    """Grades (query, document) pairs 0-3; ``name`` is written beside each grade (its provenance)."""

    name: str

    def grade(self, pairs: Sequence[Pair]) -> Sequence[int | None]: ...


@cache
def _plugins() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def judge_names() -> list[str]:
    """The judges ``--judge`` takes by name: the built-ins, then the installed plugins."""
    return [*BUILTIN, *sorted(set(_plugins()) - set(BUILTIN))]


def judge_class(choice: str) -> Any:
    """The class ``--judge`` names: a built-in or plugin name, or ``module:Class``. One line naming
    ``--judge`` (exit 2, nothing read) for an unknown name, a module that does not import or a
    missing attribute."""
    target = BUILTIN.get(choice) or _plugins().get(choice) or (choice if ":" in choice else None)
    if target is None:
        known = ", ".join(judge_names())
        raise InputError(f"unknown judge {choice!r}; known: {known}, or module:Class", field="--judge")
    try:
        # a built-in is the harness's own code; a plugin or module:Class is found by the one rule for code a
        # user names: the working folder first, then PYTHONPATH (harness.imports)
        return import_target(target) if choice in BUILTIN else load_target(target)
    except TargetNotFound as e:
        raise InputError(f"judge {choice!r}: cannot import {target!r}: {e}", field="--judge") from None
    except ImportError as e:
        raise InputError(f"judge {choice!r}: cannot import {e.name or target!r} ({e})", field="--judge") from None
    except (NoAttribute, ValueError) as e:
        raise InputError(f"judge {choice!r}: {e}", field="--judge") from None
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # the module's own code failed while importing (SystemExit included)
        what = describe(e, "the module")
        raise InputError(f"judge {choice!r}: importing it raised {what}", field="--judge") from None


def make_judge(choice: str, options: Mapping[str, str]) -> Judge:
    """``choice``'s class built with ``options`` as keyword arguments, checked to be a :class:`Judge`
    (a ``name`` that is a non-empty str, a callable ``grade``) before any pair is read."""
    cls = judge_class(choice)
    try:
        inspect.signature(cls).bind(**options)
    except TypeError as e:
        raise InputError(f"judge {choice!r} does not take these options: {e}", field="--judge-option") from None
    except ValueError:  # no signature to inspect (a builtin): the call below says what is wrong
        pass
    try:
        judge = cls(**options)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # the team's constructor: one line naming the judge and the call
        raise InputError(f"judge {choice!r}: __init__() raised {describe(e, 'the judge')}", field="--judge") from None
    judge = check_judge(judge, choice)
    reserved = judge.name == PERSON or judge.name.startswith(BUILTIN_PREFIXES)
    if reserved and choice not in BUILTIN:
        raise InputError(
            f"judge {choice!r}: its name {judge.name!r} is one the `judge serve` page ({PERSON!r}: a person's grade) "
            f"or a built-in judge ({', '.join(p + '...' for p in BUILTIN_PREFIXES)}) writes beside its grades; a "
            "team's judge needs a name of its own, or its grades would pass for theirs",
            field="--judge",
        )
    return judge


def parse_options(items: Sequence[str]) -> dict[str, str]:
    """``--judge-option KEY=VALUE`` (repeatable) as keyword arguments; one line for a malformed or
    repeated one."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise InputError(f"expected KEY=VALUE with KEY a Python name, got {item!r}", field="--judge-option")
        if key in out:
            raise InputError(f"{key!r} given twice", field="--judge-option")
        out[key] = value
    return out


def check_judge(judge: Any, choice: str) -> Judge:
    """``judge`` when it satisfies :class:`Judge`; one line naming ``--judge`` otherwise."""
    if not isinstance(judge, Judge) or not callable(judge.grade):
        raise InputError(
            f"{choice!r} is not a judge: it needs a `name` (str) and a `grade(pairs)` method", field="--judge"
        )
    if not isinstance(judge.name, str) or not judge.name.strip():
        raise InputError(f"{choice!r}: its `name` must be a non-empty str, not {judge.name!r}", field="--judge")
    for attr in ("batch_size", "concurrency"):
        value = getattr(judge, attr, None)
        if value is not None and whole(value) is None:
            raise InputError(
                f"judge {judge.name!r}: its `{attr}` must be a whole number, not {value!r:.40} "
                f"({type(value).__name__})",
                field="--judge",
            )
    return judge


def whole(value: Any) -> int | None:
    """``value`` as an int when it is a whole number (an int, a numpy integer, a float such as 8.0);
    None otherwise (a bool, a string, NaN, 2.5)."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    return None
