"""What serving and building cost, in dollars, from measured time and counted tokens.

- ``$/1M queries`` = ``usd_per_hour / 3600 / qps * 1e6``: a machine billed by the hour that answers
  ``qps`` queries per second (the level's measured throughput) costs that for a million of them.
  The machine is assumed to be the retriever's alone; at a level below capacity the figure is what
  the idle share costs too, which is why the best level is the one to read.
- ``$ index`` = ``index seconds / 3600 * usd_per_hour``: one index build on the same machine.
- ``$ embed`` = ``tokens / 1e6 * usd_per_1m_tokens``: embedding the corpus through a priced API,
  from the token count of the retriever's own tokenizer (each document cut at the model's maximum
  length, as it is embedded); absent for retrievers without one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.load.spec import CostSpec


def usd_per_million_queries(cost: CostSpec, qps: float | None) -> float | None:
    if qps is None or qps <= 0 or cost.usd_per_hour <= 0:
        return None
    return cost.usd_per_hour / 3600.0 / qps * 1e6


def usd_index(cost: CostSpec, index_seconds: float | None) -> float | None:
    if index_seconds is None or cost.usd_per_hour <= 0:
        return None
    return index_seconds / 3600.0 * cost.usd_per_hour


def usd_embed(cost: CostSpec, tokens: int | None) -> float | None:
    if tokens is None or cost.usd_per_1m_tokens <= 0:
        return None
    return tokens / 1e6 * cost.usd_per_1m_tokens


def count_tokens(obj: Any, texts: Iterable[str], batch: int = 1024) -> int | None:
    """Tokens the retriever's encoder embeds for ``texts`` (special tokens included, each text cut
    at the encoder's maximum length), or None when the retriever has no tokenizer to ask."""
    enc = getattr(obj, "encoder", None)
    if enc is None:
        return None
    try:
        tok = enc.model.tokenizer
        max_len = int(getattr(enc, "max_length", 0) or 0) or None
    except Exception:
        return None
    total = 0
    buf: list[str] = []

    def flush() -> int:
        ids = tok(buf, truncation=max_len is not None, max_length=max_len)["input_ids"]
        return sum(len(x) for x in ids)

    for t in texts:
        buf.append(t)
        if len(buf) >= batch:
            total += flush()
            buf = []
    if buf:
        total += flush()
    return total


def level_costs(cost: CostSpec | None, qps: float | None) -> dict[str, float | None]:
    return {"usd_per_1m_queries": usd_per_million_queries(cost, qps) if cost else None}
