"""The import graph: no cycle among the harness's and adapters' modules, imports inside functions
counted (grimp, the graph import-linter checks its layer contracts on; `lint-imports` runs in CI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")
REPO = Path(__file__).resolve().parent.parent


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_cycle_among_modules():
    graph = grimp.build_graph("harness", "retrievers", include_external_packages=False)
    # a package's __init__ re-exporting its own submodules is not a dependency between layers
    for pkg in [m for m in graph.modules if graph.find_children(m)]:
        for child in graph.find_children(pkg):
            if graph.direct_import_exists(importer=pkg, imported=child):
                graph.remove_import(importer=pkg, imported=child)
    cycles = _cycles(graph)
    assert not cycles, f"import cycles: {cycles}"


def test_layer_contracts_hold():
    # in a child process: import-linter configures logging with disable_existing_loggers, which
    # would silence the harness's loggers for every later test in this process
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename='pyproject.toml'))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))


def test_adapters_are_in_the_layers_contract_and_hold_only_adapters():
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    assert "retrievers" in layers
    assert not (REPO / "retrievers" / "reranker_training.py").exists()  # an application: harness/training/


def test_api_keeps_only_the_entry_points():
    assert len((REPO / "harness" / "api.py").read_text().splitlines()) <= 250


def test_every_cited_design_document_is_in_the_repository():
    import re

    cited = re.compile(r"\b(?:docs/[\w./-]+\.md|DESIGN(?:\.md)?)\b")
    files = [REPO / "pyproject.toml", REPO / "README.md"]
    files += [p for d in ("harness", "retrievers", "docs") for p in (REPO / d).rglob("*") if p.suffix in (".py", ".md")]
    missing = {
        (str(p.relative_to(REPO)), ref)
        for p in files
        for ref in cited.findall(p.read_text(encoding="utf-8"))
        if ref.startswith("DESIGN") or not (REPO / ref).exists()
    }
    assert not missing, sorted(missing)


def _nodes_outside(allowed: str):
    """``(path, AST node)`` of every module of harness/ and retrievers/ outside the folder ``allowed``."""
    import ast

    for p in sorted(p for root in ("harness", "retrievers") for p in (REPO / root).rglob("*.py")):
        rel = p.relative_to(REPO).as_posix()
        if not rel.startswith(allowed):
            yield from ((rel, node) for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))


def _named(node: object, name: str) -> bool:
    import ast

    return (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name)


def test_argparse_is_imported_only_by_the_command_line():
    """A library function takes typed options, never the parser's namespace: ``import argparse``
    lives in harness/cli/ alone (the commands parse flags into options at the door)."""
    import ast

    found = [
        f"{rel}:{node.lineno}"
        for rel, node in _nodes_outside("harness/cli/")
        if (isinstance(node, ast.Import) and "argparse" in [a.name for a in node.names])
        or (isinstance(node, ast.ImportFrom) and node.module == "argparse")
    ]
    assert not found, found


def test_manifest_is_read_only_through_its_type():
    """A result's manifest is read and written through :class:`harness.results.Manifest` (one rule
    per field, with its default); indexing the dict (``manifest[...]``, ``manifest.get(...)``) is for
    harness/results/manifest.py alone."""
    import ast

    found = [
        f"{rel}:{node.lineno}"
        for rel, node in _nodes_outside("harness/results/manifest.py")
        if (isinstance(node, ast.Subscript) and _named(node.value, "manifest"))
        or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and _named(node.func.value, "manifest")
        )
    ]
    assert not found, found


def _calls_outside(*allowed: str):
    """``(path, call node)`` of every call in harness/ and retrievers/ outside the files ``allowed``."""
    import ast

    for rel, node in _nodes_outside("\0"):
        if rel not in allowed and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            yield rel, node


def test_folders_are_renamed_only_by_the_staged_writer():
    """A folder the harness publishes is staged and renamed in one place (harness/io/staged.py; a file
    moved into place: harness/io/atomic.py): ``os.rename``, ``os.replace``, ``shutil.move`` and
    ``Path.rename`` nowhere else, so no command grows its own staging again (there were three)."""
    import ast

    found = [
        f"{rel}:{node.lineno}"
        for rel, node in _calls_outside("harness/io/staged.py", "harness/io/atomic.py")
        if node.func.attr in ("rename", "renames")
        or (node.func.attr in ("replace", "move") and isinstance(node.func.value, ast.Name)
            and node.func.value.id in ("os", "shutil"))
    ]  # fmt: skip
    assert not found, found


#: the modules that parse a whole JSON file themselves (outside harness/io/), each its file's one owner
#: reader, or a third party's file (a model's config.json); a new one fails: read a harness file through
#: :func:`harness.io.staged.open_envelope` and its owner's pydantic model
JSON_READERS = {
    "harness/chunking/store.py": "the chunk store's own metadata, beside its rows",
    "harness/engine/fingerprint.py": "the fingerprint memo of the dataset cache",
    "harness/export/command.py": "an export's own list of the files it wrote, and the benchmark file it wrote",
    "harness/gate/load.py": "load.json, the owner's reader (harness load)",
    "harness/judging/sample.py": "the sample's record, its owner",
    "harness/results/record.py": "RunRecord.read, the run record's one reader",
    "harness/results/suite.py": "suite.json, the suite's one reader",
    "retrievers/colbert.py": "the token store's store.json, its owner",
    "retrievers/encoder.py": "the encoder's memo of a model's dimension",
    "retrievers/learned.py": "a model folder's config.json (Hugging Face's file)",
    "retrievers/rerank.py": "a trained reranker's training.json and a model's config",
    "retrievers/sparse.py": "a model folder's config_sentence_transformers.json (Sentence Transformers' file)",
    "retrievers/vectordb/pg_lifecycle.py": "the private PostgreSQL's owner file",
}


def test_a_harness_json_file_is_parsed_whole_only_by_its_owner():
    """``json.load(fh)`` / ``json.loads(path.read_text())`` outside harness/io/ only in
    :data:`JSON_READERS`: stream.json, traces.json, synth.json, bias.json and results.json are read
    through io/ (bounded, envelope checked, typed), never as a dict read key by key."""
    import ast

    found = set()
    for rel, node in _calls_outside():
        f = node.func
        if rel.startswith("harness/io/") or f.attr not in ("load", "loads"):
            continue
        if not (isinstance(f.value, ast.Name) and f.value.id == "json"):
            continue
        arg = node.args[0] if node.args else None
        whole = f.attr == "load" or (
            isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute)
            and arg.func.attr in ("read_text", "read_bytes", "read")
        )  # fmt: skip
        if whole:
            found.add(rel)
    assert found <= set(JSON_READERS), sorted(found - set(JSON_READERS))
