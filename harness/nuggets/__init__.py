"""Nuggets (castorini/nuggetizer's files) and their assignments to retrieved passages: the inputs of
the nugget metrics (:mod:`harness.metrics.nuggets`). ``files``: nuggetizer's two JSONL files, read and
written byte for byte as nuggetizer does; ``judgments``: the two laid over a run."""

from harness.nuggets.files import Assignment, Nugget, NuggetRecord, read_assignments, read_nuggets
from harness.nuggets.judgments import NuggetJudgments

__all__ = ["Assignment", "Nugget", "NuggetJudgments", "NuggetRecord", "read_assignments", "read_nuggets"]
