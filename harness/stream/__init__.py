"""``harness stream``: retrieval quality while the index changes (docs/streaming.md).

A runbook of inserts, deletes and updates (:mod:`.runbook`) is played against each retriever through
the mutable protocol (:class:`harness.protocol.Mutable`, :mod:`.engines`; a composed row through its
parts, its stages applied at every search: :mod:`.composed`); at every checkpoint the
retriever is scored on the documents visible then, beside an exact index of the same documents, and
probed for how soon writes reach search (:mod:`.probes`). The folder (:mod:`.folder`) holds the
runbook, every checkpoint's rankings and ``stream.json`` (typed: :mod:`.results`); :mod:`.render` prints it.
"""

from harness.stream.core import StreamOptions, failures, load_stream_config, run_stream, visible_qrels
from harness.stream.folder import is_stream_folder, read_stream
from harness.stream.render import to_text
from harness.stream.results import Checkpoint, StreamResults
from harness.stream.runbook import Op, Visible, draw, format_runbook, read_runbook, version_of
from harness.stream.spec import StreamSpec

__all__ = [
    "Checkpoint",
    "Op",
    "StreamOptions",
    "StreamResults",
    "StreamSpec",
    "Visible",
    "draw",
    "failures",
    "format_runbook",
    "is_stream_folder",
    "load_stream_config",
    "read_runbook",
    "read_stream",
    "run_stream",
    "to_text",
    "version_of",
    "visible_qrels",
]
