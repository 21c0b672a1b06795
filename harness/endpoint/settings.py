"""The endpoint flags as one typed value (``--url --api-key-env --concurrency --timeout --retries
--temperature --max-tokens``), checked the same way for every command that asks an endpoint, and the
client they describe: the key read from the environment variable and handed only to the client."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from harness.endpoint.client import ChatClient, check_timeout
from harness.errors import InputError


def check_port(url: str) -> None:
    """The URL's port, when it has one, is a number 1..65535 (urllib raises on it later, and a
    message naming the URL would read the same bad port again); the URL itself is not printed (it
    may carry credentials)."""
    try:
        port = urlsplit(url).port
    except ValueError:
        port = 0
    if port == 0:
        raise InputError("the port of the URL is not a number in 1..65535", field="--url")


@dataclass(frozen=True)
class EndpointSettings:
    """How to ask: the base URL, where the key is, and the request settings (the flags' defaults)."""

    url: str | None = None
    api_key_env: str | None = None  # the name of the variable, never the key
    # how requests are sent
    concurrency: int = 4
    timeout: float = 60.0  # seconds, the whole exchange
    retries: int = 3
    # what is asked for
    temperature: float = 0.0
    max_tokens: int = 512

    def check(self, flag: str) -> EndpointSettings:
        """Refuse what no request could use, before anything is read; ``flag`` names the choice that
        asked for an endpoint (``--judge http``)."""
        if not self.url:
            raise InputError(f"{flag} needs --url (the OpenAI-compatible endpoint)", field="--url")
        check_port(self.url)
        if not 1 <= self.concurrency <= 256:
            raise InputError("must be 1..256", field="--concurrency")
        check_timeout(self.timeout)  # nan, inf, 0, absurd: one line naming --timeout
        if not 0 <= self.retries <= 100:
            raise InputError("must be 0..100", field="--retries")
        if self.max_tokens < 1:
            raise InputError("must be at least 1", field="--max-tokens")
        return self

    def client(self, model: str) -> ChatClient:
        """The client these settings describe; the key comes from the environment variable
        ``api_key_env`` names (refused when unset or empty) and is never stored."""
        key = None
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise InputError(f"environment variable {self.api_key_env} is not set or empty", field="--api-key-env")
        return ChatClient(
            self.url or "", model, api_key=key, temperature=self.temperature, max_tokens=self.max_tokens,
            timeout=self.timeout, retries=self.retries, concurrency=self.concurrency,
        )  # fmt: skip


@dataclass(kw_only=True)
class AskOptions:
    """What every command that asks a judge through this client takes beside its own flags (``judge
    auto``, ``nuggets assign``): the model, the endpoint, the prices a cost is counted at and a team
    class's constructor options. Keyword-only, so each command's own fields come first."""

    model: str | None = None
    endpoint: EndpointSettings = field(default_factory=EndpointSettings)
    price_in: float | None = None
    price_out: float | None = None
    judge_options: dict[str, str] = field(default_factory=dict)
