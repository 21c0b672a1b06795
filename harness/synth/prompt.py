"""The versioned prompt that asks for questions, and the strict reading of its ``##query:`` lines.

The reply may say anything else (a preamble, reasoning); only lines that start ``##query:`` (after
leading spaces) are questions, the text after the marker with surrounding whitespace removed.
A reply with none is a failed reply: asked again, then left out and counted, never guessed from
the prose. Only what the model added is read: a model that echoes the prompt would otherwise
"answer" with the prompt's own example line, or with a ``##query:`` line a passage carries (text
written to steer the set). So the prompt is cut out of the reply first, and a question equal to the
example or to a line of the prompt (the passage's lines included), compared after
:func:`harness.inspect.text.normalize`, is not a question: a reply with nothing else is a failed
reply (:class:`Reader` says so; ``--max-failed`` counts it).

:data:`PROMPT_VERSION` names the text below and is part of every cache key and of ``synth.json``: a
reworded prompt is a different generator.
"""

from __future__ import annotations

import hashlib
import re

from harness.inspect.text import normalize

#: names the prompt texts below; change it whenever a text changes (cached replies then miss)
PROMPT_VERSION = "synth-queries-1"

#: the styles a question can be asked in; ``mixed`` cycles through them (seeded)
STYLES = ("question", "keyword", "paraphrase")

_STYLE_TEXT = {
    "question": "Write {k} question(s) a person might type into a search engine that this passage answers. "
    "Each question must make sense on its own, without the passage at hand.",
    "keyword": "Write {k} short keyword search(es), 2 to 6 words each, that a person looking for this passage "
    "would type. No full sentences.",
    "paraphrase": "Write {k} question(s) this passage answers, as a person who has never read it would ask: "
    "avoid the passage's own words and phrases wherever a synonym or a more general term exists, and never "
    "copy a phrase of three or more words from it.",
}

PROMPT = """\
You help build a test set for a search engine.

Passage:
{passage}

{instruction}
Put each one on a line of its own that starts with ##query: and nothing else on that line, for example
##query: {example}
Write nothing after the last ##query: line."""

_QUERY = re.compile(r"^[ \t]*##query:(.*)$", re.MULTILINE)
#: the example question of :data:`PROMPT`: a reply that gives it back asked nothing
EXAMPLE = "how do vaccines train the immune system"


def passage(title: str, text: str) -> str:
    """The passage the model reads: the title on its own line when there is one, then the text."""
    return f"{title}\n{text}" if title.strip() else text


def prompt(title: str, text: str, style: str, k: int = 1) -> str:
    """The user message asking for ``k`` questions about one document in ``style``."""
    if style not in _STYLE_TEXT:
        raise ValueError(f"unknown style {style!r}; expected one of {', '.join(STYLES)}")
    instruction = _STYLE_TEXT[style].replace("{k}", str(k))
    return (
        PROMPT.replace("{instruction}", instruction)
        .replace("{example}", EXAMPLE)
        .replace("{passage}", passage(title, text))
    )


def prompt_hash() -> str:
    """sha256 of every prompt text: ``synth.json`` records it beside the version."""
    texts = [PROMPT.replace("{example}", EXAMPLE), *(f"{s}\x00{_STYLE_TEXT[s]}" for s in STYLES)]
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()


def parse(reply: str, k: int = 1, asked: str | None = None) -> list[str] | None:
    """The first ``k`` non-empty ``##query:`` lines of a reply, each exactly as written after the
    marker (outer whitespace removed); None when there is none. With ``asked`` (the prompt sent),
    only what the model added (module docstring): echoed lines are not questions."""
    reply = reply.replace("\r\n", "\n")
    if asked:
        reply = reply.replace(asked, "")
    found = [q for q in (m.group(1).strip() for m in _QUERY.finditer(reply)) if q]
    if asked:
        echoed = echoed_lines(asked)
        found = [q for q in found if normalize(q) not in echoed]
    return found[:k] or None


def echoed_lines(asked: str) -> set[str]:
    """What a question must not be to count as the model's own: the example, and every line of the
    prompt (with and without a ``##query:`` marker), normalised."""
    lines = {normalize(EXAMPLE)}
    for line in asked.replace("\r\n", "\n").split("\n"):
        lines.add(normalize(line))
        m = _QUERY.match(line)
        if m:
            lines.add(normalize(m.group(1)))
    lines.discard("")
    return lines


class Reader:
    """:func:`parse` for one prompt, remembering whether a reply held ``##query:`` lines that were
    all echoes (``echoed``): such a reply failed, and says why."""

    #: the failure of a document whose every reply only echoed the prompt
    FAILURE = "failed: the reply only echoed the prompt (its example or a line of the passage)"

    def __init__(self, asked: str, k: int = 1) -> None:
        self.asked, self.k, self.echoed = asked, k, False

    def __call__(self, reply: str) -> list[str] | None:
        out = parse(reply, self.k, self.asked)
        if out is None and parse(reply, self.k) is not None:
            self.echoed = True
        return out


def reply_hash(reply: str) -> str:
    """sha256 of a raw reply (``synth.json`` keeps the hash, not the text)."""
    return hashlib.sha256(reply.encode("utf-8", "surrogatepass")).hexdigest()
