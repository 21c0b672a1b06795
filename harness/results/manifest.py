"""The manifest of a result, typed: what produced it (dataset, config, statistics settings, seed,
commit, time), read and written in one place.

``results.json`` keeps its manifest as the JSON object it always was (scripts read it); a
:class:`Manifest` is a view over that very dict, so its key order and any key this version does
not know stay as they are, and a folder written again is byte-identical. Every reader outside this
package asks the view (``Manifest.of(results).seed``), never the dict: one rule per field, with its
default, instead of a ``.get`` chain in each module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import defaults
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.model import GoldenDataset

#: the statistics settings a config records (``stats:``), each read back only when it was recorded
STATS_KEYS = ("bootstrap", "permutations", "alpha")
#: StatsConfig's defaults, for results whose manifest records no ``config.stats`` (the results layer
#: sits below the config and does not import it)
STATS_DEFAULTS: dict[str, Any] = {
    "bootstrap": defaults.BOOTSTRAP,
    "permutations": defaults.PERMUTATIONS,
    "alpha": defaults.ALPHA,
    "correction": "all",
}


@dataclass(frozen=True)
class DatasetRef:
    """The dataset a result names: ``name``, ``split``, its folder (``source``) and fingerprint."""

    data: Mapping[str, Any]

    @property
    def name(self) -> str | None:
        return self.data.get("name")

    @property
    def split(self) -> str:
        return self.data.get("split") or defaults.SPLIT

    @property
    def source(self) -> str | None:
        return self.data.get("source")

    @property
    def fingerprint(self) -> str | None:
        return self.data.get("fingerprint")

    def where(self) -> tuple[str | None, str]:
        """Where the dataset is now: its folder when it still exists, else the packaged demo when it
        was the demo; else None and why not (the sentence a report shows)."""
        from harness.datasets import DEMO

        source, name = self.source, self.name
        if source and Path(source).is_dir():
            return source, ""
        if name == DEMO or source == DEMO:
            return DEMO, ""
        return None, f"dataset folder {source} not found" if source else "results.json names no dataset folder"

    def load(self, split: str | None = None) -> GoldenDataset:
        """The dataset, loaded again from :meth:`where` (a :class:`HarnessError` when it is gone)."""
        from harness.datasets import load_dataset
        from harness.errors import InputError

        where, why = self.where()
        if where is None:
            raise InputError(why)
        return load_dataset(where, split or self.split, name=self.name)


class _Section:
    """A key of the manifest that holds an object, read as a copy of it (empty when absent or not one)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    def __get__(self, obj: Manifest | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return obj._mapping(self.key)


class Manifest:
    """A view over a result's manifest dict (``results.manifest``): typed reads, a few writers."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self.data: dict[str, Any] = data if data is not None else {}

    @classmethod
    def of(cls, results: Any) -> Manifest:
        """The manifest of ``results`` (a :class:`~harness.results.Results`, or anything holding a
        ``manifest`` dict); writes through the view land in that dict."""
        return cls(results.manifest)

    # ------------------------------------------------------------------ reads
    def _mapping(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        return dict(value) if isinstance(value, Mapping) else {}

    @property
    def dataset(self) -> DatasetRef:
        return DatasetRef(self._mapping("dataset"))

    #: the resolved config the run recorded; the commit it ran from; per retriever its spec, inputs,
    #: params and config hash as run (each a copy, empty when none was recorded)
    config = _Section()
    git = _Section()
    retrievers = _Section()
    #: the library versions the run used; what a re-score was made against (``qrels``), when it was one
    versions = _Section()
    rescored = _Section()
    #: the machine the run had (``harness export --to ir-metadata``)
    machine = _Section()

    @property
    def nugget_files(self) -> tuple[str | None, str | None]:
        """The nuggets and assignments files the run's config named (``dataset: {nuggets, assignments}``),
        each None when it named none."""
        ds = self.config.get("dataset")
        if not isinstance(ds, Mapping):
            return None, None
        n, a = ds.get("nuggets"), ds.get("assignments")
        return (str(n) if n else None), (str(a) if a else None)

    @property
    def command(self) -> list[str]:
        """The command line that produced the result (empty when none was recorded)."""
        value = self.data.get("command")
        return [str(x) for x in value] if isinstance(value, list) else []

    @property
    def baseline(self) -> str | None:
        return self.config.get("baseline")

    @property
    def stats(self) -> dict[str, Any]:
        """The statistics settings the config recorded (``bootstrap``, ``permutations``, ``alpha``):
        only those it holds, so whoever re-computes applies the same defaults as the run did."""
        recorded = self.config.get("stats")
        recorded = recorded if isinstance(recorded, Mapping) else {}
        return {k: recorded[k] for k in STATS_KEYS if recorded.get(k) is not None}

    def stats_settings(self) -> dict[str, Any]:
        """Every statistics setting the results were computed with: :data:`STATS_DEFAULTS` under
        whatever the config recorded (the legend of a table says these)."""
        recorded = self.config.get("stats")
        recorded = recorded if isinstance(recorded, Mapping) else {}
        return {**STATS_DEFAULTS, **{k: v for k, v in recorded.items() if v is not None}}

    @property
    def alpha(self) -> float:
        """The significance level the run used: the recorded one when it is a level, else the default."""
        a = self.stats.get("alpha")
        return float(a) if isinstance(a, (int, float)) and not isinstance(a, bool) and 0 < a < 1 else defaults.ALPHA

    @property
    def seed(self) -> int:
        """The seed the run used: the config's ``seed``, else the manifest's own, when it is an
        integer; else the default (the one rule for every reader: letters, slices, re-scoring)."""
        for seed in (self.config.get("seed"), self.data.get("seed")):
            if isinstance(seed, int) and not isinstance(seed, bool):
                return seed
        return defaults.SEED

    @property
    def created(self) -> str | None:
        return self.data.get("created")

    # ------------------------------------------------------------------ writes
    def set(self, key: str, value: Any) -> Manifest:
        """``key`` set in place (a key present keeps its position; a new one goes last)."""
        self.data[key] = value
        return self

    def update_config(self, **values: Any) -> Manifest:
        return self.set("config", {**self.config, **values})

    def update_dataset(self, **values: Any) -> Manifest:
        return self.set("dataset", {**self._mapping("dataset"), **values})

    def copy(self) -> Manifest:
        """A new manifest with the same keys, in the same order (a shallow copy)."""
        return Manifest(dict(self.data))


def dataset_texts(results: Any) -> tuple[GoldenDataset | None, str | None]:
    """The dataset a result names, loaded for its query and document texts, and a note when that is
    not possible (then None) or the dataset changed since the run."""
    held = getattr(results, "dataset", None)
    if held is not None:  # the run's own dataset, still in memory: never read the corpus a second time
        return held, None
    ref = Manifest.of(results).dataset
    where, why = ref.where()
    if where is None:
        return None, f"query and document text unavailable ({why}); showing ids only"
    try:
        dataset = ref.load()
    except (HarnessError, OSError) as e:
        return None, f"query and document text unavailable (loading {where} failed: {e}); showing ids only"
    note = None
    if ref.fingerprint and dataset.fingerprint != ref.fingerprint:
        note = f"the dataset at {where} changed since this run (fingerprint differs): texts may not match"
    return dataset, note
