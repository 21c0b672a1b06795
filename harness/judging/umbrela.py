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

import math
import threading
from collections.abc import Sequence
from typing import Any

from harness.endpoint.client import Answer, ChatClient, _content
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


#: how many alternatives per token the endpoint is asked for (OpenAI's ``top_logprobs`` allows up to 20)
TOP_LOGPROBS = 10


def grade_probabilities(reply: object) -> tuple[int, tuple[float, ...]] | None:
    """The grade of a chat-completions reply and ``p_0..p_3`` from its token log-probabilities:
    at the last token of the reply that is a grade digit (the ``N`` of ``##final score: N``), each
    alternative among ``top_logprobs`` whose text is a grade adds ``exp(logprob)`` to that grade,
    normalised over the grades. None when the reply has no grade or no log-probabilities there."""
    grade = parse(_content(reply))
    if grade is None:
        return None
    try:
        tokens = reply["choices"][0]["logprobs"]["content"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(tokens, list):
        return None
    grades = {str(g): g for g in range(4)}
    for tok in reversed(tokens):
        if not isinstance(tok, dict) or str(tok.get("token", "")).strip() != str(grade):
            continue
        mass = [0.0] * 4
        seen: set[str] = set()
        for alt in [tok, *(tok.get("top_logprobs") or [])]:
            if not isinstance(alt, dict):
                continue
            t, lp = str(alt.get("token", "")), alt.get("logprob")
            g = grades.get(t.strip())
            if g is None or t in seen or isinstance(lp, bool) or not isinstance(lp, (int, float)):
                continue
            seen.add(t)
            if math.isfinite(lp) and lp <= 0:
                mass[g] += math.exp(lp)
        total = math.fsum(mass)
        return (grade, tuple(m / total for m in mass)) if total > 0 else None
    return None


#: a reply with a grade but no log-probabilities for it
NO_LOGPROBS = ("no-logprobs",)


def _with_probabilities(reply: object) -> tuple | None:
    """:func:`grade_probabilities`, or :data:`NO_LOGPROBS` for a graded reply without them (asked
    no more: the endpoint does not give them), or None (no grade: asked again)."""
    got = grade_probabilities(reply)
    if got is not None:
        return got
    return NO_LOGPROBS if parse(_content(reply)) is not None else None


class UmbrelaJudge:
    """UMBRELA's prompt through an OpenAI-compatible endpoint, one pair per request, the client's
    ``concurrency`` at a time. Its name and cache identity hold everything beside the pair that
    decides a reply: model, prompt version, endpoint (no credentials), temperature, max_tokens."""

    batch_size = 1

    def __init__(self, client: ChatClient, votes: int | None = None) -> None:
        self.client, self.concurrency, self.votes = client, client.concurrency, votes
        self.name = (
            f"llm:{client.model}:{PROMPT_VERSION}@{client.public};temperature={client.temperature:g};"
            f"max_tokens={client.max_tokens}"
        )
        #: grades read from the replies that gave the probabilities: the fill asks nothing again
        self._graded: dict[tuple[str, str, str], int] = {}
        self._lock = threading.Lock()
        #: what asking for the probabilities cost (requests, tokens): added to the summary line's tally
        self.probability_usage = Answer()

    @classmethod
    def from_options(cls, options: Any) -> UmbrelaJudge:
        """From ``judge auto``'s options (:class:`harness.judging.auto.AutoOptions`): the endpoint
        flags, checked, and ``--model``; an unset key variable is refused here, before any request."""
        if not options.model:
            raise InputError("--judge http needs --model (the model name to ask for)", field="--model")
        votes = getattr(options, "votes", None)
        if votes is not None and (votes < 2 or not getattr(options, "probabilities", False)):
            raise InputError("must be at least 2, with --probabilities", field="--votes")
        return cls(options.endpoint.check("--judge http").client(options.model), votes)

    @property
    def probability_source(self) -> str:
        """How the probabilities are had: the grade token's ``logprobs``, or the vote shares of K replies."""
        return "logprobs" if self.votes is None else f"votes={self.votes}"

    def probabilities(self, pairs: Sequence[Any]) -> list[list[float]]:
        """``p_0..p_3`` per pair: from the log-probabilities of the grade token (one request), or with
        ``votes`` the shares of K replies' grades (K requests, at the configured temperature). The
        grade the fill then writes is the reply's (the most common vote), asked nothing again. An
        endpoint that returns no log-probabilities is one line naming ``--votes``."""
        out = []
        for p in pairs:
            text = prompt(p.query, "", p.text)
            if self.votes is None:
                o, _ = self.client.ask(text, parse, extra_body={"logprobs": True, "top_logprobs": TOP_LOGPROBS},
                                       parse_reply=_with_probabilities)  # fmt: skip
                self._spent(o)
                if o.value is None:
                    raise InputError(f"no grade from the endpoint for query {p.query_id!r}, doc {p.doc_id!r} "
                                     f"({o.failure}): no probabilities", field="--probabilities")  # fmt: skip
                if o.value == NO_LOGPROBS:
                    raise InputError("the endpoint returned no logprobs for the grade token: use --votes K (the "
                                     "vote shares of K replies)", field="--probabilities")  # fmt: skip
                grade, probs = o.value
            else:
                asked = [self.client.ask(text, parse)[0] for _ in range(self.votes)]
                for o in asked:
                    self._spent(o)
                votes = [o.value for o in asked]
                got = [v for v in votes if v is not None]
                if not got:
                    raise InputError(f"no grade in {self.votes} replies for query {p.query_id!r}, doc {p.doc_id!r}",
                                     field="--probabilities")  # fmt: skip
                probs = tuple(got.count(g) / len(got) for g in range(4))
                grade = max(range(4), key=lambda g: (got.count(g), -got.index(g) if g in got else 0))
            with self._lock:
                self._graded[p.query_id, p.doc_id, p.text] = grade
            out.append(list(probs))
        return out

    def cache_identity(self) -> list:
        return self.client.identity(PROMPT_VERSION)

    @property
    def requests_sent(self) -> int:
        return self.client.requests_sent

    def _spent(self, o: Answer) -> None:
        with self._lock:
            u = self.probability_usage
            u.requests += o.requests
            u.tokens_in += o.tokens_in
            u.tokens_out += o.tokens_out
            u.usage_refused += o.usage_refused

    def outcomes(self, pairs: Sequence[Any], stop: threading.Event | None = None) -> list[Answer]:
        """Each pair's grade (``Answer.value``) with what asking cost; raises
        :class:`~harness.endpoint.client.EndpointStopped` when the endpoint cannot answer anything."""
        out = []
        for p in pairs:
            with self._lock:
                known = self._graded.get((p.query_id, p.doc_id, p.text))
            out.append(Answer(known) if known is not None else self.client.ask(prompt(p.query, "", p.text), parse,
                                                                                   stop)[0])  # fmt: skip
        return out

    def grade(self, pairs: Sequence[Any]) -> list[int | None]:
        return [o.value for o in self.outcomes(pairs)]

    def close(self) -> None:
        self.client.close()
