"""``harness retrievers``: the retriever types this installation knows, built in and from plugins.

A plugin is any installed package declaring an entry point in the group
``retrieval_harness.retrievers`` (``name = "package.module:SpecClass"``). Listing imports each
spec's module to read its docstring; a type whose module cannot be imported is listed with the
reason instead of breaking the command. Each built-in type says whether the extra it needs is
installed (``dense (installed)``, ``dense (missing: pip install ...)``, or ``core``: harness.extras).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from importlib.metadata import entry_points

from harness import extras
from harness.imports import NoAttribute, import_target
from harness.registry import BUILTIN, ENTRY_POINT_GROUP


@dataclass
class TypeInfo:
    name: str
    target: str
    source: str
    description: str
    ok: bool
    #: ``core``, ``dense (installed)`` or ``dense (missing: pip install ...)`` (harness.extras)
    extra: str


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "retrievers",
        help="list the retriever types you can use in a config",
        description=f"List retriever types: built in, and from installed plugins (entry-point group "
        f"{ENTRY_POINT_GROUP!r}).",
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=run)


def _plugins() -> dict[str, tuple[str, str]]:
    """Type name -> (module:Class, distribution), read fresh (a plugin installed a moment ago shows)."""
    found: dict[str, tuple[str, str]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        found[ep.name] = (ep.value, f"plugin {dist.name}" if dist is not None else "plugin")
    return found


def describe(target: str) -> tuple[str, bool]:
    """First line of the spec class's docstring, or why it cannot be loaded."""
    try:
        obj = import_target(target)
    except ImportError as e:
        return f"not available: {e}", False
    except (NoAttribute, ValueError):
        return f"not available: {target} does not exist", False
    except Exception as e:  # a broken plugin must not break the listing
        return f"not available: {type(e).__name__}: {e}", False
    # the spec's own docstring, else its module's (a spec without one is still described)
    doc = (obj.__doc__ or "").strip() or (sys.modules[obj.__module__].__doc__ or "").strip()
    return (doc.splitlines()[0].strip() if doc else ""), True


def plain_text(doc: str) -> str:
    """A docstring's line as a reader sees it: ``code`` and :role:`target` without their reST markup."""
    text = re.sub(r":[\w.:-]+:`~?([^`]*)`", r"\1", doc)
    return text.replace("``", "")


def list_types() -> list[TypeInfo]:
    types = _plugins()
    for name, target in BUILTIN.items():
        if name in types and types[name][0] != target:
            print(f"warning: plugin type {name!r} ({types[name][0]}) is shadowed by the built-in", file=sys.stderr)
        types[name] = (target, "built-in")
    out = []
    for name in sorted(types, key=lambda n: (types[n][1] != "built-in", n)):
        target, source = types[name]
        description, ok = describe(target)
        out.append(
            TypeInfo(name, target, source, description, ok, extras.status(name) if source == "built-in" else "plugin")
        )
    return out


def run(args: argparse.Namespace) -> int:
    infos = list_types()
    if args.format == "json":
        sys.stdout.write(json.dumps([asdict(i) for i in infos], indent=1) + "\n")
        return 0
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    # every cell folds onto more lines rather than being cut: a type's name and description read whole on
    # any terminal (the width is the terminal's, not a fixed 100)
    table = Table(title="retriever types", expand=True)
    for column, ratio in (("type", None), ("class", 2), ("from", None), ("extra", None), ("description", 3)):
        table.add_column(column, overflow="fold", ratio=ratio)
    missing: dict[str, None] = {}
    for i in infos:
        need = extras.type_extra(i.name) if i.source == "built-in" else None
        if need is not None and not extras.installed(need):
            missing[need] = None
            extra = f"[yellow]{need} (missing)[/yellow]"  # the whole command under the table: a cell would cut it
        else:
            extra = escape(i.extra)  # [dense] is not markup
        about = escape(plain_text(i.description))
        table.add_row(escape(i.name), escape(i.target), escape(i.source), extra,
                      about if i.ok else f"[yellow]{about}[/yellow]")  # fmt: skip
    Console().print(table)
    for need in missing:
        print(f"{need} (missing): {extras.install_command(need)}")
    return 0
