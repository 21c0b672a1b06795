"""Killing an encode half-way keeps what was encoded: the re-run encodes only the rest.

A real subprocess encodes with the real packaged model, committing small chunks; the test
SIGKILLs it once some chunks are on disk, then a second process encodes the same texts and
reports how many texts the model actually saw.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

N_TEXTS = 128
CHUNK = 16

SCRIPT = textwrap.dedent(
    f"""
    import json, sys
    from retrievers.encoder import Encoder
    texts = [f"document number {{i}} about topic {{i % 7}} and more words" for i in range({N_TEXTS})]
    enc = Encoder(None, cache_dir=sys.argv[1], batch_size=8, chunk_rows={CHUNK}, show_progress=False, threads=1)
    emb = enc.encode(texts)
    print(json.dumps({{"encoded": enc.encoded, "rows": emb.shape[0], "finite": bool((emb == emb).all())}}))
    """
)


def _committed_rows(cache_dir: Path) -> int:
    return sum(len(f.read_text().split()) for f in cache_dir.glob("embeddings/*/*.keys"))


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": root, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def test_sigkill_mid_encode_then_rerun_encodes_only_the_rest(tmp_path):
    cache = tmp_path / "cache"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(cache)], env=_env(), stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 600
        while _committed_rows(cache) < 2 * CHUNK:
            assert proc.poll() is None, "the encode finished before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    cached = _committed_rows(cache)
    assert 0 < cached < N_TEXTS and cached % CHUNK == 0  # whole chunks only, no torn one counted
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(cache)], env=_env(), capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report == {"encoded": N_TEXTS - cached, "rows": N_TEXTS, "finite": True}
    assert _committed_rows(cache) == N_TEXTS
