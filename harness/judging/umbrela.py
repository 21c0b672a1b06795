"""UMBRELA's 0-3 relevance prompt and the strict reading of its ``##final score: N`` answer.

The prompt is UMBRELA's zero-shot "bing" prompt (Upadhyay et al., "UMBRELA: UMbrela is the
(Open-Source Reproduction of the) Bing RELevance Assessor", 2024; castorini/umbrela,
``prompts/qrel_zeroshot_bing.txt``, Apache-2.0), itself the prompt of Thomas et al. 2023 that TREC
RAG 2024 used for its automatic labels. It is kept word for word: a judge's agreement with people
is measured for a prompt, and a reworded one is a different judge (:data:`PROMPT_VERSION` is part
of every cache key and of the judge name recorded per grade).

:class:`UmbrelaJudge` asks it of an OpenAI-compatible endpoint (:class:`~harness.endpoint.client.ChatClient`):
the ``http`` judge of ``harness judge auto``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from harness.endpoint.client import Answer, ChatClient
from harness.errors import InputError
from harness.io.grades import final_score

#: names the prompt text below; change it whenever the text changes (cached replies then miss)
PROMPT_VERSION = "umbrela-zeroshot-bing-1"

PROMPT = (
    "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following "
    "meanings:\n"
    "0 = represent that the passage has nothing to do with the query, \n"
    "1 = represents that the passage seems related to the query but does not answer it, \n"
    "2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or "
    "hidden amongst extraneous information and \n"
    "3 = represents that the passage is dedicated to the query and contains the exact answer.\n"
    "\n"
    "Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not "
    "completely, category 2 if passage presents something very important related to the entire topic but also "
    "has some extra information and category 3 if the passage only and entirely refers to the topic. If none of "
    "the above satisfies give it category 0.\n"
    "\n"
    "Query: {query}\n"
    "Passage: {passage}\n"
    "\n"
    "Split this problem into steps:\n"
    "Consider the underlying intent of the search.\n"
    "Measure how well the content matches a likely intent of the query (M).\n"
    "Measure how trustworthy the passage is (T).\n"
    "Consider the aspects above and the relative importance of each, and decide on a final score (O). Final "
    "score must be an integer value only.\n"
    "Do not provide any code in result. Provide each score in the format of: ##final score: score without "
    "providing any reasoning."
)


def passage(title: str, text: str) -> str:
    """The passage a judge reads: the title on its own line when there is one, then the text."""
    return f"{title}\n{text}" if title.strip() else text


def prompt(query: str, title: str, text: str) -> str:
    """The user message for one (query, document) pair."""
    return PROMPT.replace("{query}", query).replace("{passage}", passage(title, text))


def parse(reply: str) -> int | None:
    """The grade of a reply: its one well-formed ``##final score: N`` line, N a grade in 0-3
    (:func:`harness.io.grades.final_score`, the rule every grade file is read by); None for anything
    else: no score line, two of them (even agreeing), ``2.5``, ``12``, ``0-3``, ``1e1``, ``2²``,
    another script's digits. None is asked again and then left ungraded, never read as 0."""
    return final_score(reply)


class UmbrelaJudge:
    """UMBRELA's prompt through an OpenAI-compatible endpoint, one pair per request, the client's
    ``concurrency`` at a time. Its name and cache identity hold everything beside the pair that
    decides a reply: model, prompt version, endpoint (no credentials), temperature, max_tokens."""

    batch_size = 1

    def __init__(self, client: ChatClient) -> None:
        self.client, self.concurrency = client, client.concurrency
        self.name = (
            f"llm:{client.model}:{PROMPT_VERSION}@{client.public};temperature={client.temperature:g};"
            f"max_tokens={client.max_tokens}"
        )

    @classmethod
    def from_options(cls, options: Any) -> UmbrelaJudge:
        """From ``judge auto``'s options (:class:`harness.judging.auto.AutoOptions`): the endpoint
        flags, checked, and ``--model``; an unset key variable is refused here, before any request."""
        if not options.model:
            raise InputError("--judge http needs --model (the model name to ask for)", field="--model")
        return cls(options.endpoint.check("--judge http").client(options.model))

    def cache_identity(self) -> list:
        return self.client.identity(PROMPT_VERSION)

    @property
    def requests_sent(self) -> int:
        return self.client.requests_sent

    def outcomes(self, pairs: Sequence[Any], stop: threading.Event | None = None) -> list[Answer]:
        """Each pair's grade (``Answer.value``) with what asking cost; raises
        :class:`~harness.endpoint.client.EndpointStopped` when the endpoint cannot answer anything."""
        return [self.client.ask(prompt(p.query, "", p.text), parse, stop)[0] for p in pairs]

    def grade(self, pairs: Sequence[Any]) -> list[int | None]:
        return [o.value for o in self.outcomes(pairs)]

    def close(self) -> None:
        self.client.close()
