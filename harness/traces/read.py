"""Span files to raw spans, streamed: one :class:`RawSpan` at a time, whatever the format.

Formats, told apart per file (protobuf) and per line (JSON):

- **OTLP JSON lines**, as the OpenTelemetry Collector's file exporter writes them: one
  ``ExportTraceServiceRequest`` per line (``resourceSpans[].scopeSpans[].spans[]``); the resource's
  ``service.name`` names the service.
- **Phoenix / OpenInference JSONL**: one span per line with its attributes flattened (``"attributes.
  input.value"``) or nested (``"attributes": {"input": {"value": ...}}``), ids under ``context.``.
- **OTLP protobuf** (``.pb``, ``.binpb``, ``.proto`` files; needs ``opentelemetry-proto``, the
  ``traces-proto`` extra): ``ExportTraceServiceRequest`` messages each preceded by its length as a
  4-byte big-endian integer (the Collector's ``format: proto``), or one bare message filling the
  file. Each message goes through the same path as a JSON line (protobuf's JSON mapping), so the
  two formats give the same folder.

A gzip-compressed file (told by its magic bytes, whatever its name: log shippers write
``spans.jsonl.gz``) is read as the JSON lines inside it; a cut or damaged one ends in one
``bad_gzip`` problem after the lines before the damage. A file compressed another way (zstd, bzip2,
xz, zip), or a compressed protobuf file, is refused before any work in one line.

Nothing is held beyond one line (or one message): a file of any length streams. A line that is not
JSON, a truncated last line, a line over :data:`MAX_LINE_BYTES`: each becomes a :class:`Problem`
(file, line, reason), counted, never an exception.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import os
import re
import struct
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness import extras
from harness.errors import InputError
from harness.io.lines import bounded_lines
from harness.traces.attributes import flatten, key_values

#: longest line read as a record (a 50 MB documents string fits; a runaway file does not fill memory)
MAX_LINE_BYTES = 128 * 1024 * 1024
#: longest protobuf message read
MAX_MESSAGE_BYTES = MAX_LINE_BYTES
PROTO_SUFFIXES = (".pb", ".binpb", ".proto")

_HEX = re.compile(r"[0-9a-fA-F]+")
GZIP_MAGIC = b"\x1f\x8b"
#: other compressions, told by their magic bytes: refused in one line (decompress first)
OTHER_COMPRESSION = {b"\x28\xb5\x2f\xfd": "zstd", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"PK\x03\x04": "zip"}


@dataclass(slots=True)
class RawSpan:
    """One span as read: where it was, its ids, start time, service and flat attributes."""

    path: str
    line: int
    trace_id: str
    span_id: str
    start_ns: int
    service: str
    attributes: dict[str, Any]


@dataclass(slots=True)
class Problem:
    """A line that gave no span: ``reason`` is the counted skip."""

    path: str
    line: int
    reason: str
    span_id: str = ""


def read_spans(paths: list[str]) -> Iterator[RawSpan | Problem]:
    """Every span of every file, in file order; unreadable lines as :class:`Problem`."""
    for p in paths:
        path = Path(p)
        if _is_proto(path):
            yield from _proto_file(path)
        else:
            yield from _json_file(path)


def _name(path: Path) -> str:
    """``path`` as written in traces.json's problems: a file name of bytes that are not UTF-8 (read by
    Python as lone surrogates) with those bytes as ``?``, so it cannot stop the import at its end."""
    return str(path).encode("utf-8", "replace").decode("utf-8")


def _is_proto(path: Path) -> bool:
    return path.suffix.lower() in PROTO_SUFFIXES


def _magic(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(8)


def check_paths(paths: list[str]) -> None:
    """Every SPANS file exists and is a file, and protobuf files have their package: before any work."""
    if not paths:
        raise InputError("no span files given", field="SPANS")
    for p in paths:
        if not Path(p).is_file():
            raise InputError("no such file", path=p, field="SPANS")
        head = _magic(Path(p))
        for magic, kind in OTHER_COMPRESSION.items():
            if head.startswith(magic):
                raise InputError(f"a {kind}-compressed file: decompress it first (gzip is read as it is)", path=p,
                                 field="SPANS")  # fmt: skip
        if _is_proto(Path(p)):
            if head.startswith(GZIP_MAGIC):
                raise InputError("a gzip-compressed protobuf file: gunzip it first", path=p, field="SPANS")
            _proto_request()


# ------------------------------------------------------------------------------------------- JSON
def _json_file(path: Path) -> Iterator[RawSpan | Problem]:
    name = _name(path)
    compressed = _magic(path).startswith(GZIP_MAGIC)
    with gzip.open(path, "rb") if compressed else path.open("rb") as fh:
        for lineno, raw in enumerate(_lines(fh, path, name), start=1):
            if isinstance(raw, Problem):
                raw.line = lineno
                yield raw
                return
            if raw is None:
                yield Problem(name, lineno, "line_too_long")
                continue
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):
                # no newline at the end and not JSON: the writer was cut off mid-line
                yield Problem(name, lineno, "truncated_line" if not raw.endswith(b"\n") else "not_json")
                continue
            if not isinstance(obj, dict):
                yield Problem(name, lineno, "not_a_span_record")
            elif "resourceSpans" in obj:
                yield from _otlp_request(obj, name, lineno)
            else:
                yield _phoenix_span(obj, name, lineno)


def _lines(fh: Any, path: Path, name: str) -> Iterator[bytes | Problem | None]:
    """:func:`bounded_lines` of ``fh``; a gzip stream that is cut or damaged ends in one ``bad_gzip``
    :class:`Problem` (what was read before the damage is kept)."""
    lines = bounded_lines(fh, path, limit=MAX_LINE_BYTES, skip_long=True)
    while True:
        try:
            raw = next(lines)
        except StopIteration:
            return
        except (EOFError, zlib.error, gzip.BadGzipFile):
            yield Problem(name, 0, "bad_gzip")
            return
        yield raw


def _maps(items: Any, path: str, line: int) -> Iterator[dict[str, Any] | Problem]:
    """Each map of a JSON list; ``bad_structure`` for anything else in it, and once for a value that is
    no list at all (an OTLP request nests lists of maps: resource spans, scope spans, spans)."""
    if not isinstance(items, list):
        yield Problem(path, line, "bad_structure")
        return
    for x in items:
        yield x if isinstance(x, dict) else Problem(path, line, "bad_structure")


def _otlp_request(obj: Mapping[str, Any], path: str, line: int) -> Iterator[RawSpan | Problem]:
    """The spans of one ``ExportTraceServiceRequest`` in the protobuf JSON mapping."""
    for rs in _maps(obj.get("resourceSpans"), path, line):
        if isinstance(rs, Problem):
            yield rs
            continue
        resource = rs.get("resource")
        rattrs = key_values(resource.get("attributes")) if isinstance(resource, dict) else {}
        service = rattrs.get("service.name")
        service = service if isinstance(service, str) else "unknown"
        scopes = rs.get("scopeSpans", rs.get("instrumentationLibrarySpans", []))
        for ss in scopes if isinstance(scopes, list) else [None]:
            for s in _maps(ss.get("spans") if isinstance(ss, dict) else None, path, line):
                if isinstance(s, Problem):
                    yield s
                    continue
                attrs = flatten(key_values(s.get("attributes")))
                yield RawSpan(
                    path, line, _id(s.get("traceId")), _id(s.get("spanId")), _nanos(s.get("startTimeUnixNano")),
                    service, attrs,
                )  # fmt: skip


def _phoenix_span(obj: Mapping[str, Any], path: str, line: int) -> RawSpan:
    """A Phoenix/OpenInference span record: flattened or nested attributes, ``context.*`` ids."""
    flat = flatten(obj)
    attrs = {k[len("attributes.") :]: v for k, v in flat.items() if k.startswith("attributes.")}
    kind = flat.get("span_kind")
    if "openinference.span.kind" not in attrs and isinstance(kind, str):
        attrs["openinference.span.kind"] = kind
    service = _first(flat, "resource.service.name", "resource.attributes.service.name", "service.name", "service_name")
    if service is None and isinstance(attrs.get("service.name"), str):
        service = attrs["service.name"]
    return RawSpan(
        path, line,
        _id(_first(flat, "context.trace_id", "trace_id", "traceId")),
        _id(_first(flat, "context.span_id", "span_id", "spanId")),
        _time(_first(flat, "start_time", "startTimeUnixNano", "start_time_unix_nano")),
        service if isinstance(service, str) else "unknown",
        attrs,
    )  # fmt: skip


def _first(m: Mapping[str, Any], *keys: str) -> Any:
    for k in keys:
        if m.get(k) is not None:
            return m[k]
    return None


def _id(raw: Any) -> str:
    """A trace or span id as lower-case hex: OTLP JSON writes hex, protobuf's JSON mapping base64."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return format(raw, "x")
    if not isinstance(raw, str) or len(raw) > 256:
        return ""
    if not raw.isascii():  # written in traces.json's problems: a lone surrogate must not stop the import
        raw = raw.encode("utf-8", "replace").decode("utf-8")
    if raw.startswith("0x"):
        raw = raw[2:]
    if len(raw) in (16, 32) and _HEX.fullmatch(raw):
        return raw.lower()
    if len(raw) in (12, 24):  # 8 or 16 bytes in base64
        try:
            return base64.b64decode(raw, validate=True).hex()
        except (binascii.Error, ValueError):
            pass
    return raw


def _nanos(raw: Any) -> int:
    """``startTimeUnixNano`` (a JSON string or number) as an int, 0 when absent or malformed."""
    if isinstance(raw, bool):
        return 0
    if isinstance(raw, int):
        return max(raw, 0)
    if isinstance(raw, str) and raw.isdigit() and len(raw) <= 20:
        return int(raw)
    if isinstance(raw, float) and raw == raw and 0 <= raw < 1e20:
        return int(raw)
    return 0


def _time(raw: Any) -> int:
    """A Phoenix start time: ISO 8601 text, or epoch seconds/ms/us/ns as a number (told by size)."""
    if isinstance(raw, str) and not raw.isdigit():
        return iso_nanos(raw) or 0
    n = _nanos(raw)
    for scale, bound in ((10**9, 10**11), (10**6, 10**14), (10**3, 10**17)):
        if 0 < n < bound:
            return n * scale
    return n


def iso_nanos(text: str) -> int | None:
    """ISO 8601 text as nanoseconds since the epoch (UTC when no offset is given), None if unreadable."""
    if len(text) > 64:
        return None
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    delta = dt - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000


# --------------------------------------------------------------------------------------- protobuf
def _proto_request() -> Any:
    module = "opentelemetry.proto.collector.trace.v1.trace_service_pb2"
    try:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError as e:
        hint = (
            "OTLP protobuf input needs opentelemetry-proto: pip install 'retrieval-harness[traces-proto]' "
            "(or export OTLP JSON)"
        )
        raise InputError(extras.import_problem(e, module, hint), field="SPANS") from None
    return ExportTraceServiceRequest


def _proto_file(path: Path) -> Iterator[RawSpan | Problem]:
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError

    request = _proto_request()
    name = _name(path)
    size = os.path.getsize(path)
    with path.open("rb") as fh:
        framed = _framed(fh, size)
        fh.seek(0)
        if not framed:
            messages: Iterator[tuple[int, bytes | None]] = iter([(1, fh.read(MAX_MESSAGE_BYTES))])
        else:
            messages = _frames(fh)
        for number, data in messages:
            if data is None:
                yield Problem(name, number, "truncated_message")
                continue
            msg = request()
            try:
                msg.ParseFromString(data)
            except DecodeError:
                yield Problem(name, number, "not_protobuf")
                continue
            if framed and not data:
                continue  # an empty request (no spans serialises to 0 bytes): nothing to read, nothing wrong
            yield from _otlp_request(MessageToDict(msg), name, number)


def _framed(fh: Any, size: int) -> bool:
    """Whether the file is length-prefixed messages: the 4-byte lengths, read one after another (the
    messages between them skipped, not read), land exactly on the end of the file, or the last one
    runs past it (a writer cut off). A bare message cannot pass: it starts with the tag byte 0x0a,
    so its first four bytes read as a length of 160 MiB or more. An empty message (length 0) is a
    frame like any other."""
    pos = 0
    if size == 0:
        return False  # an empty file: no message at all, counted as one that is not a request
    while pos < size:
        fh.seek(pos)
        head = fh.read(4)
        if len(head) < 4:
            return pos > 0
        (n,) = struct.unpack(">I", head)
        if n > MAX_MESSAGE_BYTES or (pos == 0 and n > size - 4):
            return False
        pos += 4 + n
    return True


def _frames(fh: Any) -> Iterator[tuple[int, bytes | None]]:
    """``(message number, bytes)`` of a length-prefixed stream; None for a cut-off last message."""
    number = 0
    while True:
        head = fh.read(4)
        if not head:
            return
        number += 1
        if len(head) < 4:
            yield number, None
            return
        (n,) = struct.unpack(">I", head)
        if n > MAX_MESSAGE_BYTES:
            yield number, None
            return
        data = fh.read(n)
        yield number, data if len(data) == n else None
        if len(data) < n:
            return
