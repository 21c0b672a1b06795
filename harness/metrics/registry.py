"""The metric registry: every metric is declared once, next to the one function that computes it.

A declaration (:func:`register`, used as a decorator on the compute function) holds the canonical
name, its aliases, the cutoff rule (``required``: ``precision@k``; ``optional``: ``ndcg`` or
``ndcg@10``; ``none``: ``r_precision``), what it is computed from (``judgments`` or
``embeddings``), and what extra inputs it needs (the ideal grades, the judged-at-all matrix). The
formula lives in the compute function's docstring. Everything else is derived from here: name
parsing and the list of valid names (:func:`parse_metric`, :func:`valid_names`), the dispatch in
:func:`harness.metrics.core.compute`, how many ideal grades to build, and which metrics
``harness run`` computes from embeddings instead of judgments. Adding a metric is one function
plus its ``@register`` line; nothing else changes.

Compute functions take the context of their family and the cutoff: judgment metrics
``fn(ranked: core.Ranked, k: int | None) -> np.ndarray`` (one value per query of the block),
embedding metrics ``fn(embeddings_topk: np.ndarray) -> float`` (one query's top-k rows).

The registry is complete once :mod:`harness.metrics` is imported (its ``__init__`` imports every
module that registers), which any import of a ``harness.metrics`` submodule does first.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.errors import InputError

Cutoff = Literal["required", "optional", "none"]
Source = Literal["judgments", "embeddings", "context", "nuggets"]

_NAME = re.compile(r"[a-z][a-z0-9_-]*\Z")
#: A cutoff is plain ASCII digits: ``str.isdigit`` would also take ``٣`` or ``²``.
_ASCII_DIGITS = re.compile(r"[0-9]+\Z")
#: a cutoff with a unit: ``recall@512tok``
_UNIT = re.compile(r"([a-z][a-z0-9_-]*)@([0-9]+)([a-z]+)\Z")


@dataclass(frozen=True)
class MetricSpec:
    """One registered metric: how its name is written and what computing it takes."""

    kind: str
    compute: Callable[..., Any]
    cutoff: Cutoff
    source: Source = "judgments"
    aliases: tuple[str, ...] = ()
    #: needs the ideal ranking's grades (nDCG): how many is derived by ``core.ideal_length``
    ideal: bool = False
    #: needs to know which ranked documents carry any judgment (grade 0 and negatives included)
    judged: bool = False
    #: written after the cutoff: ``recall@512tok`` is kind ``recall_tok`` (unit ``tok``), cutoff 512
    unit: str = ""
    #: the values the formula can give, ``(low, high)`` (None: not declared, only finiteness is checked);
    #: a results file holding a value outside is an edited one, refused on load
    bounds: tuple[float, float] | None = None

    @property
    def needs_embeddings(self) -> bool:
        return self.source == "embeddings"

    @property
    def needs_context(self) -> bool:
        """Computed from ranked chunks' token counts and what each covers (RAG context metrics)."""
        return self.source == "context"

    @property
    def needs_nuggets(self) -> bool:
        """Computed from nuggets and their per-passage assignments (:mod:`harness.metrics.nuggets`)."""
        return self.source == "nuggets"

    @property
    def written(self) -> str:
        """The name as written before the ``@``: ``recall`` for ``recall_tok``."""
        return self.kind.removesuffix(f"_{self.unit}") if self.unit else self.kind

    @property
    def formula(self) -> str:
        """The compute function's docstring: the definition, written once."""
        return inspect.cleandoc(self.compute.__doc__ or "")

    @property
    def description(self) -> str:
        """The docstring's first line."""
        return self.formula.split("\n", 1)[0]

    @property
    def pattern(self) -> str:
        """How the name is written: ``precision@k``, ``ndcg[@k]``, ``r_precision``."""
        if self.unit:
            return f"{self.written}@N{self.unit}"
        return {"required": f"{self.kind}@k", "optional": f"{self.kind}[@k]", "none": self.kind}[self.cutoff]


_SPECS: dict[str, MetricSpec] = {}
_ALIASES: dict[str, str] = {}


def register(
    kind: str,
    *,
    cutoff: Cutoff,
    source: Source = "judgments",
    aliases: Iterable[str] = (),
    ideal: bool = False,
    judged: bool = False,
    unit: str = "",
    bounds: tuple[float, float] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare the decorated function as the compute function of metric ``kind``.

    Names are lower case (parsing is case-insensitive); a name or alias may be declared once.
    The function must carry its formula as a docstring.
    """
    if cutoff not in ("required", "optional", "none"):
        raise ValueError(f"cutoff must be 'required', 'optional' or 'none', not {cutoff!r}")
    if source not in ("judgments", "embeddings", "context", "nuggets"):
        raise ValueError(f"source must be 'judgments', 'embeddings', 'context' or 'nuggets', not {source!r}")
    names = (kind, *aliases)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        for n in names:
            if not _NAME.match(n):
                raise ValueError(f"metric name {n!r}: lower-case letters, digits, '_' or '-', starting with a letter")
            if n in _SPECS or n in _ALIASES:
                raise ValueError(f"metric name {n!r} is registered twice")
        if not (fn.__doc__ or "").strip():
            raise ValueError(f"metric {kind!r}: its compute function needs the formula as a docstring")
        _SPECS[kind] = MetricSpec(kind, fn, cutoff, source, tuple(aliases), ideal, judged, unit, bounds)
        for a in aliases:
            _ALIASES[a] = kind
        return fn

    return decorate


#: the bounds of a share (most metrics)
UNIT = (0.0, 1.0)


def bounds_of(name: str) -> tuple[float, float] | None:
    """The declared range of the values of metric ``name`` (``ndcg@10``); None for a name this
    registry does not know (a metric of a plugin not loaded) or a metric that declares none."""
    try:
        return parse_metric(name).spec.bounds
    except (ValueError, KeyError):
        return None


def specs() -> Mapping[str, MetricSpec]:
    """Every registered metric, in registration order (a read-only view)."""
    return _ReadOnly(_SPECS)


def spec(kind: str) -> MetricSpec:
    """The registration of a canonical kind (``KeyError`` if none)."""
    return _SPECS[kind]


def aliases() -> Mapping[str, str]:
    """alias -> canonical kind."""
    return _ReadOnly(_ALIASES)


class _ReadOnly(Mapping):
    def __init__(self, data: Mapping) -> None:
        self._data = data

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


@dataclass(frozen=True, order=True)
class Metric:
    """A parsed metric name: ``ndcg@10`` is ``Metric("ndcg", 10)``; ``k=None`` means the whole ranking."""

    kind: str
    k: int | None = None

    @property
    def name(self) -> str:
        s = _SPECS.get(self.kind)
        if s is not None and s.unit and self.k is not None:
            return f"{s.written}@{self.k}{s.unit}"
        return self.kind if self.k is None else f"{self.kind}@{self.k}"

    @property
    def spec(self) -> MetricSpec:
        return _SPECS[self.kind]

    @property
    def needs_embeddings(self) -> bool:
        return self.spec.needs_embeddings

    @property
    def needs_context(self) -> bool:
        return self.spec.needs_context

    @property
    def needs_nuggets(self) -> bool:
        return self.spec.needs_nuggets

    def __str__(self) -> str:
        return self.name


def valid_names() -> str:
    """``hit_rate[@k], mrr[@k], precision@k, ...``: for error messages and help texts."""
    return ", ".join(s.pattern for s in _SPECS.values())


def parse_metric(name: str | Metric) -> Metric:
    """Parse ``ndcg@10``, ``nDCG@10``, ``P@5``, ``recall_100`` (trec style), ``map``...

    The cutoff follows the last ``@``, ``.`` or ``_`` and is plain ASCII digits. Errors are
    :class:`InputError` with ``field="metrics"``; the message does not repeat the field name.
    """
    if isinstance(name, Metric):
        if name.kind not in _SPECS:
            raise InputError(f"unknown metric kind {name.kind!r}; valid metrics: {valid_names()}", field="metrics")
        return name
    raw = str(name).strip()
    text = raw.lower()
    kind, k = text, None
    unit = _UNIT.match(text)
    if unit and f"{unit[1]}_{unit[3]}" in _SPECS:  # recall@512tok -> recall_tok, 512
        text = f"{unit[1]}_{unit[3]}@{unit[2]}"
    for sep in ("@", ".", "_"):
        if sep in text:
            head, _, tail = text.rpartition(sep)
            if _ASCII_DIGITS.match(tail):
                if len(tail.lstrip("0")) > 12:  # also keeps int() below Python's digit limit
                    raise InputError(f"metric {raw[:40]!r}...: the cutoff is too large", field="metrics")
                kind, k = head, int(tail)
                break
            if tail.isdigit() or tail.isdecimal() or tail.isnumeric():  # '٣', '²', '三': digits, not ASCII
                raise InputError(f"metric {raw!r}: the cutoff must be written in ASCII digits 0-9", field="metrics")
    kind = _ALIASES.get(kind, kind)
    s = _SPECS.get(kind)
    if s is None:
        raise InputError(f"unknown metric {raw!r}; valid metrics: {valid_names()}", field="metrics")
    if k is not None and k < 1:
        raise InputError(f"metric {raw!r}: the cutoff must be >= 1", field="metrics")
    if k is None and s.cutoff == "required":
        raise InputError(f"metric {raw!r} needs a cutoff, e.g. {kind}@10", field="metrics")
    if k is not None and s.cutoff == "none":
        raise InputError(f"metric {raw!r} takes no cutoff", field="metrics")
    return Metric(kind, k)


def parse_metrics(names: Iterable[str | Metric] | str) -> list[Metric]:
    """Parse a list (or a comma-separated string), dropping repeats, keeping order."""
    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    out: list[Metric] = []
    for n in names:
        m = parse_metric(n)
        if m not in out:
            out.append(m)
    if not out:
        raise InputError("no metrics given", field="metrics")
    return out
