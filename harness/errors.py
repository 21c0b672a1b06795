"""Errors a user can act on.

Every problem with user input surfaces as an :class:`InputError` that names the file, line and
field, so the CLI can print one line and exit 2 instead of a traceback from deep inside numpy.
"""

from __future__ import annotations

import logging
import re
from os import PathLike


class HarnessError(Exception):
    """An error the user can fix; the CLI prints ``error: <message>`` and exits with ``exit_code``."""

    exit_code = 2

    def __str__(self) -> str:
        return scrub(super().__str__())


class InputError(HarnessError, ValueError):
    """Bad input, located as precisely as we can: ``FILE:LINE: field: what is wrong``."""

    def __init__(
        self,
        message: str,
        *,
        path: str | PathLike[str] | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path + (f":{self.line}" if self.line is not None else "") + ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        field = f"{self.field}: " if self.field else ""
        return scrub(f"{where}{field}{self.message}")


#: ``log.warning(..., extra=DATA_WARNING)``: a warning about the input data (judged documents missing
#: from the corpus, ...), which ``harness run --strict`` turns into an error before any work.
DATA_WARNING = {"data_warning": True}


def warn_ids(log: logging.Logger, path: object, what: str, ids: list[str]) -> None:
    """A data warning ``PATH: N WHAT``, where ``what`` ends in the first three ``ids`` (its ``%s``):
    the readers say "these ids of that file are not where they should be" in one way. Logged from
    the caller's line (``stacklevel``), as if it had called ``log.warning`` itself."""
    log.warning("%s: %d " + what, path, len(ids), ", ".join(ids[:3]), extra=DATA_WARNING, stacklevel=2)


def is_data_warning(record: logging.LogRecord) -> bool:
    """Whether ``record`` was logged with ``extra=DATA_WARNING``."""
    return bool(getattr(record, "data_warning", False))


class RetrieverError(HarnessError):
    """A retriever (ours or a team's) failed or returned something unusable."""

    exit_code = 1


# ---------------------------------------------------------------------------- secrets
#: Values that must never be written: header values and secret spec fields, and every value a
#: ``${ENV_VAR}`` in a config expanded to. Error messages are scrubbed of them (a service that echoes
#: the request, or a team's exception that quotes its API key, must not put it in results.json).
_SECRETS: set[str] = set()

#: Shorter values are not scrubbed from free text: replacing every "1" or "on" in a message would
#: garble it and protect nothing (a secret that short is not a secret).
MIN_SCRUB_CHARS = 8

REDACTED = "<redacted>"


#: a URL in free text: scheme, then the authority (userinfo ends at its last ``@``) and the rest
_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^\s/?#'\"<>]*)([^\s'\"<>]*)")
#: a query (or ``;`` path) parameter whose value is a credential (``api_key``, ``token``, ``password``,
#: ``X-Amz-Signature``, ``;jsessionid``...)
_SECRET_PARAM = re.compile(
    r"(?i)([?&;])([^=&#;\s]*(?:key|token|secret|passw|pwd|auth|sig|credential|session)[^=&#;\s]*)=([^&#;\s'\"<>]*)"
)
#: a count of tokens, not a credential: a judge's name ends in its settings,
#: ``.../chat/completions;temperature=0;max_tokens=512``, printed as they are
_TOKEN_COUNT = re.compile(r"(?i)(?:max|min|num|n|total|prompt|completion|output|input)?[_-]?(?:new_)?tokens")


def _param(q: re.Match[str]) -> str:
    """One credential-like parameter redacted; a token count kept, and what its value runs into past a
    ``?`` (a path's ``;max_tokens=5?api_key=...``) read again as parameters."""
    sep, name, value = q.group(1), q.group(2), q.group(3)
    if not value:
        return q.group(0)
    if _TOKEN_COUNT.fullmatch(name):
        head, mark, tail = value.partition("?")
        return f"{sep}{name}={head}" + (_SECRET_PARAM.sub(_param, mark + tail) if mark else "")
    return f"{sep}{name}={REDACTED}"


def _secret_values(rest: str) -> list[str]:
    """The values :func:`_param` redacts in ``rest``."""
    out = []
    for q in _SECRET_PARAM.finditer(rest):
        if not q.group(3):
            continue
        if not _TOKEN_COUNT.fullmatch(q.group(2)):
            out.append(q.group(3))
        elif "?" in q.group(3):
            out += _secret_values("?" + q.group(3).partition("?")[2])
    return out


def redact_urls(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced by ``<redacted>``: the userinfo
    (``user:password@``, or a token given as the user) and the values of query parameters named like a
    credential. The one URL redaction: :func:`scrub` applies it to everything it cleans, so a URL is
    redacted wherever a spec, an error or a log line is written or printed."""
    if "://" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        scheme, authority, rest = m.group(1), m.group(2), m.group(3)
        if "@" in authority:
            authority = f"{REDACTED}@{authority.rpartition('@')[2]}"
        rest = _SECRET_PARAM.sub(_param, rest)
        return scheme + authority + rest

    return _URL.sub(one, text)


def url_secrets(url: str) -> list[str]:
    """The credential values in ``url`` (its password or user token, credential-like query values),
    for :func:`register_secret`, so they are scrubbed also where a message quotes them without the URL."""
    out = []
    for m in _URL.finditer(url):
        authority, rest = m.group(2), m.group(3)
        if "@" in authority:
            out += [part for part in authority.rpartition("@")[0].split(":") if part]
        out += _secret_values(rest)
    return out


def register_secret(value: object) -> None:
    """Remember ``value`` as secret so :func:`scrub` removes it from any text."""
    if isinstance(value, str) and len(value) >= MIN_SCRUB_CHARS:
        _SECRETS.add(value)


def scrub(text: str) -> str:
    """``text`` with the credentials of every URL in it redacted (:func:`redact_urls`) and every
    registered secret replaced by ``<redacted>`` (longest first, so a secret that contains another is
    removed whole)."""
    if not text:
        return text
    text = redact_urls(text)
    if not _SECRETS:
        return text
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


class ScrubFilter(logging.Filter):
    """Scrubs registered secrets from log records (attach it to the handlers that write logs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True
