"""An HTTP body's ``Content-Encoding`` undone in bounded steps: a reply is read as the server meant it,
and a small compressed body that inflates to gigabytes (a decompression bomb) is cut at the cap.

Only what a client may honestly ask for with ``Accept-Encoding: gzip, deflate`` is decoded: ``gzip``
(``x-gzip``), ``deflate`` (zlib-wrapped as RFC 9110 says, or raw, as some servers send it) and
``identity``. Anything else is refused by name rather than read as text.
"""

from __future__ import annotations

import zlib

#: what a client using this module may send as ``Accept-Encoding``
ACCEPT_ENCODING = "gzip, deflate"
#: most bytes one decompress call may produce: the cap is checked between steps
_STEP = 1 << 16


class BodyError(ValueError):
    """The body cannot be decoded (unknown encoding, corrupt data) or is over the cap."""


class Inflater:
    """Feed the body's chunks as received (:meth:`feed`), then :meth:`finish`; the decoded bytes are
    kept in :attr:`data`, never more than ``cap`` of them (:class:`BodyError` past it)."""

    def __init__(self, encoding: str | None, cap: int) -> None:
        enc = (encoding or "identity").strip().lower()
        if enc in ("gzip", "x-gzip"):
            self._z: zlib._Decompress | None = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self._z = None  # zlib-wrapped or raw: decided on the first bytes
        elif enc in ("identity", ""):
            self._z = None
        else:
            raise BodyError(f"Content-Encoding {enc!r} (only gzip and deflate are asked for)")
        self.encoding, self.cap = enc, cap
        self.data = bytearray()
        self._head = b""  # deflate: the first bytes, until the wrapping is known

    def _over(self, what: str) -> BodyError:
        return BodyError(f"reply over {self.cap} bytes ({what})")

    def feed(self, chunk: bytes) -> None:
        if self.encoding in ("identity", ""):
            self.data += chunk
            if len(self.data) > self.cap:
                raise self._over("cut")
            return
        if self._z is None:  # deflate: a zlib header (method 8, a checksum of 31) or raw data
            chunk, self._head = self._head + chunk, b""
            if len(chunk) < 2:
                self._head = chunk
                return
            wrapped = chunk[0] & 0x0F == 8 and (chunk[0] << 8 | chunk[1]) % 31 == 0
            self._z = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        data = chunk
        try:
            while data:
                self.data += self._z.decompress(data, min(self.cap + 1 - len(self.data), _STEP) or 1)
                if len(self.data) > self.cap:
                    raise self._over(f"after {self.encoding} decoding")
                data = self._z.unconsumed_tail
        except zlib.error as e:
            raise BodyError(f"a {self.encoding} body that does not decompress ({e})") from None

    def finish(self) -> bytes:
        if self._head:  # a deflate body of one byte: raw, and surely corrupt
            self._z, head, self._head = zlib.decompressobj(-zlib.MAX_WBITS), self._head, b""
            self.feed(head)
        if self._z is not None:
            try:
                self.data += self._z.flush()
            except zlib.error as e:
                raise BodyError(f"a {self.encoding} body that does not decompress ({e})") from None
            if len(self.data) > self.cap:
                raise self._over(f"after {self.encoding} decoding")
        return bytes(self.data)
