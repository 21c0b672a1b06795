"""The OpenAI-compatible endpoint flags and client, one reading for every command that asks one
(``judge auto --judge http``, ``synth generate --generator http``): the same words, the same checks,
the key read from the environment variable and handed only to the client."""

from __future__ import annotations

import argparse
import os
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


def check_endpoint_arguments(args: argparse.Namespace, flag: str) -> None:
    """Refuse what no request could use, before anything is read; ``flag`` names the choice that
    asked for an endpoint (``--judge http``)."""
    from harness.errors import InputError

    if not args.url:
        raise InputError(f"{flag} needs --url (the OpenAI-compatible endpoint)", field="--url")
    if not 1 <= args.concurrency <= 256:
        raise InputError("must be 1..256", field="--concurrency")
    from harness.judging.llm import check_timeout

    check_timeout(args.timeout)  # nan, inf, 0, absurd: one line naming --timeout
    if not 0 <= args.retries <= 100:
        raise InputError("must be 0..100", field="--retries")
    if args.max_tokens < 1:
        raise InputError("must be at least 1", field="--max-tokens")


def endpoint_client(args: argparse.Namespace, model: str) -> Any:
    """The :class:`~harness.judging.llm.HttpJudge` the flags describe; the key comes from the
    environment variable ``--api-key-env`` names (refused when unset or empty) and is never stored."""
    from harness.errors import InputError
    from harness.judging.llm import HttpJudge

    key = None
    if args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            raise InputError(f"environment variable {args.api_key_env} is not set or empty", field="--api-key-env")
    return HttpJudge(
        args.url, model, api_key=key, temperature=args.temperature, max_tokens=args.max_tokens,
        timeout=args.timeout, retries=args.retries, concurrency=args.concurrency,
    )  # fmt: skip
