"""Retriever types by name, resolved lazily (as the ``rerankers`` factory does).

A type name maps to a pydantic *spec* class, given as ``"module:Class"`` so that importing the
harness never imports torch or faiss; the module is imported when a config uses the type. Other
packages add types through the entry-point group ``retrieval_harness.retrievers``.

A spec class is a pydantic model with a ``type`` field, and:
- ``inputs() -> list[str]``: names of other retrievers in the config it builds on (default none);
- ``build(ctx: BuildContext) -> Retriever | Stage``.

Secrets: a spec field is secret when it is typed ``SecretStr`` or declared with
``Field(..., json_schema_extra={"secret": True})`` (``http``'s ``headers`` is). ``model_dump`` of a
spec is *redacted by default*: a secret field that was set reads ``"<set>"`` (a mapping keeps its
keys: ``{"Authorization": "<set>"}``), and a value that came from ``${ENV_VAR}`` in the config reads as
that template, so whatever records a spec (results.json, the manifest, a baseline) cannot leak one.
``spec.reveal()`` gives the real values, for ``build`` only. (A Python-mode dump masks the secret
fields only; a JSON-mode dump, what gets written, also shows ``${ENV_VAR}`` values as templates.)
"""

from __future__ import annotations

import math
import re
import types
import typing
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    SecretStr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from harness import defaults, extras, retriever_types
from harness.errors import InputError, register_secret, scrub, url_secrets
from harness.imports import NoAttribute, TargetNotFound, import_target, load_target

ENTRY_POINT_GROUP = "retrieval_harness.retrievers"

#: What a secret field that was set reads as in every dump.
SET = "<set>"

#: Strings a ``${ENV_VAR}`` expanded to -> the template as written (``"Bearer ${TOKEN}"``); dumps show
#: the template, never the value. Filled by :func:`harness.config.expand_env`.
ENV_TEMPLATES: dict[str, str] = {}

#: ``type:`` -> ``module:Class`` of the built-in specs (one record per type: :mod:`harness.retriever_types`)
BUILTIN: dict[str, str] = {name: t.spec for name, t in retriever_types.TYPES.items()}


class SpecBase(BaseModel):
    """Base for retriever specs: unknown keys are errors, and the spec names its inputs."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, protected_namespaces=())

    type: str

    @model_validator(mode="before")
    @classmethod
    def _strict(cls, data: Any) -> Any:
        """Booleans are not numbers and strings are not numbers (``depth: true``, ``k1: "1.2"``): pydantic's
        lax mode would take them as 1 and 1.2. (Configs get the same check, located, before this.)"""
        problem = strict_scalar_problem(cls, data)
        if problem is not None:
            raise ValueError(f"{'.'.join(map(str, problem[0]))}: {problem[1]}")
        return data

    def preflight(self, config_dir: Path) -> None:
        """Check what can be checked before any retriever runs (imports, files), raising ``InputError``
        with ``field`` set; called while the config is checked. Nothing here may be slow."""
        return None

    def model_post_init(self, __context: Any) -> None:
        for name in self.secret_fields():
            _register(getattr(self, name, None))
        for name in type(self).model_fields:  # credentials in a URL (a `url`, a proxy...) are secrets too
            value = getattr(self, name, None)
            if isinstance(value, str) and "://" in value:
                for secret in url_secrets(value):
                    register_secret(secret)

    @classmethod
    def secret_fields(cls) -> list[str]:
        """Names of the fields whose values are never written (``SecretStr`` or ``{"secret": True}``)."""
        return [n for n, f in cls.model_fields.items() if _is_secret(f)]

    @model_serializer(mode="wrap")
    def _redacted(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if info.context and info.context.get("reveal"):
            return _unwrap(data)
        if not isinstance(data, dict):  # pragma: no cover - a spec always dumps to a mapping
            return data
        for name in self.secret_fields():
            field = type(self).model_fields[name]
            for key in {name, field.alias or name}:
                if key in data:
                    data[key] = mask_secret(data[key])
        # a JSON dump is what gets written: env-expanded values as their templates, secrets scrubbed;
        # a Python dump is what adapters are built from, so other fields keep their real values
        return redact_value(data) if info.mode_is_json() else data

    def redacted(self) -> dict[str, Any]:
        """What may be written about this spec (``model_dump(mode="json")``, which is redacted)."""
        return self.model_dump(mode="json")

    def reveal(self, **kwargs: Any) -> dict[str, Any]:
        """``model_dump`` with the real secret values: for building the adapter, never for writing."""
        return self.model_dump(context={"reveal": True}, **kwargs)

    def inputs(self) -> list[str]:
        return []

    def build(self, ctx: BuildContext) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


def _scalar_kinds(annotation: Any) -> set[type]:
    """The plain scalar types an annotation admits (``int | None`` -> {int, NoneType})."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        out: set[type] = set()
        for arg in typing.get_args(annotation):
            out |= _scalar_kinds(arg)
        return out
    if origin is typing.Annotated:
        return _scalar_kinds(typing.get_args(annotation)[0])
    return {annotation} if isinstance(annotation, type) else set()


#: a number in exponent form that YAML 1.1 (PyYAML's) reads as a string: no dot, or no sign in the exponent
_EXPONENT = re.compile(r"([+-]?)([0-9][0-9_]*)?(?:\.([0-9_]*))?[eE]([+-]?)([0-9]+)")


def yaml11_float(text: str) -> str | None:
    """How to write ``text`` (a number with an exponent, ``1e9``, ``1.0e9``, ``2E-3``) so that YAML 1.1
    reads it as a float (``1.0e+9`` or, when it is a whole number, ``1000000000`` too); ``None`` when
    ``text`` is not such a number, or is one YAML already reads (then it was quoted)."""
    m = _EXPONENT.fullmatch(text.strip())
    if m is None or not (m.group(2) or m.group(3)):
        return None
    sign, whole, frac, esign, exp = m.groups()
    if frac is not None and esign:  # `1.0e+9`: a float to YAML 1.1, so it was quoted
        return None
    form = f"{sign}{whole or '0'}.{frac or '0'}e{esign or '+'}{exp}"
    try:
        v = float(text.replace("_", ""))
    except ValueError:
        return None
    if math.isfinite(v) and v == int(v) and abs(v) < 1e16:
        return f"{form} or {int(v)}"
    return form


def strict_scalar_problem(model: type[BaseModel], data: Any) -> tuple[tuple[str, ...], str] | None:
    """``(field path, what is wrong)`` for the first number field given a bool, a string or (for an int)
    a float, descending into nested models; ``None`` when every number is a real number."""
    if not isinstance(data, Mapping):
        return None
    by_key = {(f.alias or n): (n, f) for n, f in model.model_fields.items()}
    by_key.update({n: (n, f) for n, f in model.model_fields.items()})
    for key, value in data.items():
        if key not in by_key:
            continue
        _, field = by_key[key]
        kinds = _scalar_kinds(field.annotation)
        nested = [k for k in kinds if issubclass(k, BaseModel)]
        if nested and isinstance(value, Mapping):
            inner = strict_scalar_problem(nested[0], value)
            if inner is not None:
                return (str(key), *inner[0]), inner[1]
            continue
        if bool in kinds or not kinds & {int, float}:
            continue
        number = "an integer" if float not in kinds else "a number"
        if isinstance(value, bool):
            return (str(key),), f"must be {number}, not {str(value).lower()} (a boolean)"
        if isinstance(value, str) and str not in kinds:
            written = yaml11_float(value)
            if written is not None:  # unquoted, read as a string by YAML 1.1: say which form it reads
                return (str(key),), (
                    f"must be {number}; YAML reads {value!r:.40} as a string (an exponent needs a dot and a "
                    f"signed exponent there): write {written}"
                )
            return (str(key),), f"must be {number}, not the string {value!r:.40} (write it without quotes)"
        if isinstance(value, float) and float not in kinds:
            shown = repr(value) if math.isfinite(value) else str(value)
            return (str(key),), f"must be a plain integer, not {shown} (a float)"
    return None


def _is_secret(field: Any) -> bool:
    extra = field.json_schema_extra
    if isinstance(extra, dict) and extra.get("secret"):
        return True
    ann = field.annotation
    return ann is SecretStr or SecretStr in getattr(ann, "__args__", ())


def _register(value: Any) -> None:
    if isinstance(value, SecretStr):
        register_secret(value.get_secret_value())
    elif isinstance(value, str):
        register_secret(value)
    elif isinstance(value, dict):
        for v in value.values():
            _register(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _register(v)


def mask_secret(value: Any) -> Any:
    """``"<set>"`` for a value that was given; a mapping keeps its keys, so results say *which* header
    was sent. (The one secret mask: spec dumps and raw config mappings, :func:`mask_raw_spec`.)"""
    if value is None or value == "" or value == {} or value == []:
        return value
    if isinstance(value, dict):
        return {k: mask_secret(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_secret(v) for v in value]
    return SET


def _unwrap(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


def redact_value(value: Any) -> Any:
    """``value`` (a dump: dicts, lists, scalars) with every string that came from ``${ENV_VAR}`` shown as
    its template and every registered secret scrubbed out of the rest."""
    if isinstance(value, str):
        template = ENV_TEMPLATES.get(value)
        return template if template is not None else scrub(value)
    if isinstance(value, SecretStr):
        return SET
    if isinstance(value, dict):
        return {(redact_value(k) if isinstance(k, str) else k): redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value


def mask_raw_spec(raw: Any) -> Any:
    """A raw retriever mapping (as a config holds it) with its type's secret fields masked; an unknown
    type's mapping as given."""
    if not isinstance(raw, dict):
        return raw
    try:
        cls = spec_class(str(raw.get("type")))
    except InputError:
        return raw
    out = dict(raw)
    for name in cls.secret_fields():
        field = cls.model_fields[name]
        for key in {name, field.alias or name}:
            if key in out:
                out[key] = mask_secret(out[key])
    return out


class CycleError(InputError):
    """Retrievers that build on each other in a cycle; ``node`` is where the walk closed it."""

    def __init__(self, message: str, node: str) -> None:
        super().__init__(message, field="retrievers")
        self.node = node


def build_order(inputs: Mapping[str, Sequence[str]], *, external: Collection[str] = ()) -> list[str]:
    """Names with every one after what it builds on (depth-first, otherwise in the given order): the
    one cycle check, for configs and graphs alike. ``external`` names may be built on (Python
    objects outside ``inputs``, which build on nothing). Raises :class:`CycleError` for a cycle and
    ``InputError`` for an input that is not there."""
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(n: str, path: tuple[str, ...]) -> None:
        if state.get(n) == 2 or (n in external and n not in inputs):
            return
        if state.get(n) == 1:
            cycle = " -> ".join((*path[path.index(n) :], n))
            raise CycleError(f"retrievers build on each other in a cycle: {cycle}", n)
        if n not in inputs:
            known = ", ".join(inputs)
            raise InputError(
                f"{path[-1]!r} builds on {n!r}, which is not a retriever here ({known})", field="retrievers"
            )
        state[n] = 1
        for d in inputs[n]:
            visit(d, (*path, n))
        state[n] = 2
        order.append(n)

    for n in inputs:
        visit(n, ())
    return order


@dataclass
class BuildContext:
    """What a spec may need to build its adapter."""

    cache_dir: Path
    config_dir: Path = field(default_factory=Path.cwd)
    seed: int = defaults.SEED
    depth: int = defaults.DEPTH
    show_progress: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def resolve_path(self, value: str | Path) -> Path:
        """Relative paths in a config are relative to the config file's folder."""
        p = Path(value).expanduser()
        return p if p.is_absolute() else (self.config_dir / p)


@cache
def _entry_points() -> dict[str, str]:
    found: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found[ep.name] = ep.value
    return found


def available_types() -> dict[str, str]:
    """Type name -> ``module:Class`` for built-ins and installed plugins (built-ins win)."""
    return {**_entry_points(), **BUILTIN}


def spec_class(type_name: str) -> type[SpecBase]:
    types = available_types()
    target = types.get(type_name)
    if target is None:
        raise InputError(f"unknown retriever type {type_name!r}; known types: {', '.join(sorted(types))}", field="type")
    module_name = target.partition(":")[0]
    try:
        # a built-in type is the harness's own code; a plugin's is found by the one rule for code a user names
        # (the working folder first: harness.imports)
        cls = import_target(target) if type_name in BUILTIN else load_target(target)
    except (ModuleNotFoundError, TargetNotFound) as e:  # the module named is not there (the type's or one it imports)
        raise InputError(
            f"retriever type {type_name!r} needs {e.name or module_name!r}, which is not installed "
            f"(pip install it, or check the plugin that registers {type_name!r})",
            field="type",
        ) from None
    except ImportError as e:  # there, but failing (a name it imports, a native library): the real error
        why = extras.import_failure(e, module_name)
        raise InputError(f"retriever type {type_name!r}: {why}", field="type") from None
    except (NoAttribute, ValueError):
        raise InputError(f"retriever type {type_name!r}: {target} does not exist", field="type") from None
    return cls
