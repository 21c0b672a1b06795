"""The OpenAI-compatible endpoint flags, the same words for every command that asks one (``judge
auto --judge http``, ``synth generate --generator http``), read into one
:class:`~harness.endpoint.settings.EndpointSettings` (its checks and its client live there)."""

from __future__ import annotations

import argparse
from typing import Any


def add_endpoint_arguments(p: argparse.ArgumentParser, unit: str) -> None:
    """``--url --api-key-env --concurrency --timeout --retries --temperature --max-tokens``;
    ``unit``: what one request is for (``pair``, ``document``), in the retries' help."""
    p.add_argument("--url", help="http: the OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1)")
    p.add_argument("--api-key-env", metavar="VAR", help="http: environment variable holding the API key")
    p.add_argument("--concurrency", type=int, default=4, help="http: requests at a time (default 4)")
    p.add_argument(
        "--timeout", type=float, default=60.0,
        help="http: the deadline of one request in seconds, connection, headers and body included (default 60)",
    )  # fmt: skip
    p.add_argument("--retries", type=int, default=3, help=f"http: retries per {unit} (default 3)")
    p.add_argument("--temperature", type=float, default=0.0, help="http: sampling temperature (default 0)")
    p.add_argument("--max-tokens", type=int, default=512, help="http: max_tokens per reply (default 512)")


def endpoint_settings(args: argparse.Namespace) -> Any:
    """The :class:`~harness.endpoint.settings.EndpointSettings` the flags give (checked where used)."""
    from harness.endpoint.settings import EndpointSettings

    return EndpointSettings(args.url, args.api_key_env, args.concurrency, args.timeout, args.retries,
                            args.temperature, args.max_tokens)  # fmt: skip
