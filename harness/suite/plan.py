"""A suite config as one config per dataset: the config with ``dataset:`` set to that dataset.

Each per-dataset config is exactly the config a one-dataset run of the same retrievers would
have, so the suite's per-dataset numbers equal a single run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.config import RunConfig
from harness.errors import InputError


def plan_suite(config: RunConfig, only: Sequence[str] | None = None) -> dict[str, RunConfig]:
    """``{dataset name: its one-dataset config}`` in the config's order; ``only`` picks a subset
    (``--datasets a,b``), each name checked against the config's."""
    if not config.datasets:
        raise InputError("this config has no datasets: (a suite); --datasets picks from a suite's", field="--datasets")
    names = list(config.datasets)
    if only is not None:
        unknown = [n for n in only if n not in config.datasets]
        if unknown:
            raise InputError(
                f"not a dataset of this suite: {', '.join(unknown)} (the suite has: {', '.join(names)})",
                field="--datasets",
            )
        if not only:
            raise InputError("--datasets names no dataset", field="--datasets")
        names = [n for n in names if n in set(only)]
    return {n: config.model_copy(update={"dataset": config.datasets[n], "datasets": None}) for n in names}


def preflight(plan: dict[str, RunConfig], config_dir: Path) -> None:
    """A dataset path that does not exist fails here, naming the dataset, before the first dataset
    runs (not after hours of work on the others). Loading stays with the run itself."""
    for name, cfg in plan.items():
        d = cfg.dataset
        for key in ("corpus", "golden") if (d.corpus or d.golden) else ("path",):
            value = getattr(d, key)
            if value is None or value == "demo" or str(value).startswith(("irds:", "ir_datasets:")):
                continue
            p = Path(str(value)).expanduser()
            p = p if p.is_absolute() else config_dir / p
            if not p.exists():
                raise InputError(f"dataset {name}: {key} not found: {p}", field=f"datasets.{name}.{key}")
