"""``harness traces import --redact`` (harness.traces.redact) against the ways a recognisable email,
phone number, card number or key is written.

The property test generates personal data in every written position (query, document content,
document id, conversation id, data source, service) and every way of writing it (non-ASCII letters,
full-width forms, zero-width and format characters, any Unicode space, runs of spaces, dashes, dots
and ``" - "`` between digit groups, ``%40`` and ``&#64;`` for ``@``, upper case), imports it with
every kind redacted, and reads every file written back through its own canonical form (NFKC, every
Unicode format character removed, the escapes read, separators between digits dropped): none of
the generated values is found. It checks the values themselves, not the harness's patterns, so a
pattern that misses a form fails it. Besides: ids that differ only in an email stay distinct and
``--corpus`` checks them unredacted; redaction never splits one query in two."""

from __future__ import annotations

import json
import re
import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import InputError
from harness.traces import ImportOptions, import_traces
from harness.traces.redact import Redactor, canonical
from tests.test_traces_hostile import genai, load, request, s, span

pytestmark = pytest.mark.core

ALL = ["email", "phone", "card", "key"]
T0 = 1_780_000_000_000_000_000

#: between digit groups: none, a space, runs of spaces, Unicode spaces, dashes, dots, slashes,
#: underscores, middle dots, " - ", zero-width characters
SEPARATORS = ["", " ", "  ", "   ", "      ", "\u00a0", "\u2009", "\u202f", "\u3000", "\t", "\n", "-", "\u2013",
              "\u2212", " - ", "--", ".", "/", "_", "\u00b7", "\u200b", " \u200b ", "\u00a0-\u00a0"]  # fmt: skip
#: how each digit is written: ASCII, full width, mathematical bold, Arabic-Indic, a keycap, struck through
DIGIT_STYLES = {
    "ascii": lambda d: d,
    "full-width": lambda d: chr(0xFF10 + int(d)),
    "bold": lambda d: chr(0x1D7CE + int(d)),
    "arabic-indic": lambda d: chr(0x0660 + int(d)),
    "keycap": lambda d: d + "\ufe0f\u20e3",
    "struck": lambda d: d + "\u0335",
}
FULL_WIDTH = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)}
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e"]


def _digits(n: int) -> st.SearchStrategy[str]:
    return st.tuples(st.integers(1, 9), st.text("0123456789", min_size=n - 1, max_size=n - 1)).map(
        lambda t: f"{t[0]}{t[1]}"
    )


def _styled(digits: str, style: str) -> str:
    return "".join(DIGIT_STYLES[style](d) for d in digits)


STYLE = st.sampled_from(list(DIGIT_STYLES))


def _cards() -> st.SearchStrategy[tuple[str, str, str]]:
    return st.tuples(_digits(16), st.sampled_from(SEPARATORS), STYLE).map(
        lambda t: ("card", t[1].join(_styled(t[0][i : i + 4], t[2]) for i in range(0, 16, 4)), t[0])
    )


def _phones() -> st.SearchStrategy[tuple[str, str, str]]:
    def form(t):
        d, sep, style, digits = t
        a, b, c = (_styled(x, digits) for x in (d[:3], d[3:6], d[6:]))
        written = {"plain": f"{a}{sep}{b}{sep}{c}", "paren": f"({a}){sep or ' '}{b}{sep}{c}",
                   "country": f"+1{sep or ' '}{a}{sep}{b}{sep}{c}"}[style]  # fmt: skip
        return ("phone", written, d)

    styles = st.sampled_from(["plain", "paren", "country"])
    return st.tuples(_digits(10), st.sampled_from([x for x in SEPARATORS if x]), styles, STYLE).map(form)


LOCAL = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789._+-üéßøжя"), min_size=2, max_size=12).filter(
    lambda x: x[0] not in "._+-" and x[-1] not in "._+-" and ".." not in x
)
LABEL = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzüöжд"), min_size=2, max_size=10)
TLD = st.sampled_from(["com", "de", "io", "org", "рф", "museum"])


def _emails() -> st.SearchStrategy[tuple[str, str, str]]:
    def form(t):
        local, label, tld, style, zw = t
        core = f"{local}@{label}.{tld}"
        written = {
            "plain": core,
            "upper": core.upper(),
            "full-width": "".join(FULL_WIDTH.get(ch, ch) for ch in core),
            "zero-width": f"{local}{zw}@{label}{zw}.{tld}",
            "percent": f"{local}%40{label}.{tld}",
            "entity": f"{local}&#64;{label}.{tld}",
            "spaced": f"{local} @ {label}.{tld}",
        }[style]
        return ("email", written, core)

    styles = st.sampled_from(["plain", "upper", "full-width", "zero-width", "percent", "entity", "spaced"])
    return st.tuples(LOCAL, LABEL, TLD, styles, st.sampled_from(ZERO_WIDTH)).map(form)


def _keys() -> st.SearchStrategy[tuple[str, str, str]]:
    def form(t):
        prefix, body, at, zw = t
        core = prefix + body
        return ("key", core[:at] + zw + core[at:], core)

    alnum = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=16, max_size=16)
    return st.one_of(
        st.tuples(st.just("sk-"), alnum.map(str.lower), st.integers(0, 19), st.sampled_from(["", *ZERO_WIDTH])),
        st.tuples(st.just("AKIA"), alnum, st.integers(0, 20), st.sampled_from(["", *ZERO_WIDTH])),
        st.tuples(st.just("ghp_"), alnum.map(lambda x: x * 2), st.integers(0, 36), st.sampled_from(["", *ZERO_WIDTH])),
    ).map(form)


PII = st.one_of(_emails(), _phones(), _cards(), _keys())
POSITIONS = ["query", "content", "doc id", "conversation", "data source", "service"]
_SEP_CHARS = re.compile(r"[\s.()/_\-\u2010-\u2015\u2212\u00b7]+")


def _reader_form(text: str) -> str:
    """What a reader recognises, computed independently of the harness: every format character and
    combining mark removed, NFKC, every decimal digit as its ASCII one, the escapes of ``@`` read,
    case folded."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(str(unicodedata.decimal(ch)) if unicodedata.decimal(ch, None) is not None else ch
                   for ch in text if unicodedata.category(ch) not in ("Cf", "Mn", "Me"))  # fmt: skip
    return re.sub(r"%40|&#0*64;|&#x0*40;|&commat;", "@", text.casefold())


def _found(core: str, kind: str, reader: str, digits_only: str) -> bool:
    if kind in ("phone", "card"):
        return core in digits_only
    if kind == "email":
        local, domain = core.casefold().split("@")
        flat = reader.replace(" ", "")
        return f"@{domain}" in flat or f"{local}@" in flat
    return core.casefold() in reader


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(st.tuples(PII, st.sampled_from(POSITIONS)), min_size=1, max_size=5))
def test_no_generated_personal_data_in_any_file_written(tmp_path_factory, items):
    tmp = tmp_path_factory.mktemp("pii")
    lines = []
    for i, ((_, written, _), where) in enumerate(items):
        pre = f"ask {i} about "
        attrs = {}
        if where == "conversation":
            attrs["gen_ai__conversation__id"] = s(f"conv {written}")
        if where == "data source":
            attrs["gen_ai__data_source__id"] = s(f"src:{written}")
        doc = {"id": f"user:{written}" if where == "doc id" else f"d{i}", "score": 1.0,
               "content": f"profile of {written} here" if where == "content" else "plain"}  # fmt: skip
        query = f"{pre}{written}?" if where == "query" else f"question {i}"
        one = span(f"{i + 1:016x}", genai(s(query), s(json.dumps([doc])), **attrs), t=T0 + i)
        lines.append(request([one], service=f"svc {written}" if where == "service" else "svc"))
    f = tmp / "s.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp / "o"), redact=ALL))
    files = [p for p in (tmp / "o").rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"queries.jsonl", "corpus.jsonl", "production.trec", "traces.json"}
    for p in files:
        reader = _reader_form(p.read_text(encoding="utf-8"))
        digits_only = _SEP_CHARS.sub("", reader)
        for (kind, written, core), where in items:
            assert not _found(core, kind, reader, digits_only), (p.name, kind, where, written)


@pytest.mark.parametrize(
    "written",
    ["j\u00fcrgen@b\u00fccher.de", "".join(FULL_WIDTH[c] for c in "alice@example.com"),
     "carol\u200b@example.com", "dave%40example.com", "eve&#64;example.com", "FRANK@EXAMPLE.COM",
     "4111\u00a01111\u00a01111\u00a01111", "5500 - 0000 - 0000 - 0004", "4111\u20091111\u20091111\u20091111",
     "sk-\u200babcdefghijklmnop1234", "AKIA\u2060IOSFODNN7EXAMPLE", "555  123  4567", "555\u3000123\u30004567",
     "(555)\u00a0123\u2013" + "4567", "+44\u00a020\u00a07946\u00a00958"],
)  # fmt: skip
def test_each_variant_the_fault_pass_found_is_redacted(written):
    r = Redactor(ALL)
    out = r.text(f"text with {written} inside")
    assert re.fullmatch(r"text with \[(EMAIL|CARD|PHONE|KEY)\] inside", out), out


def test_a_phone_spelled_with_runs_of_spaces_is_one_query_with_the_plain_one(tmp_path):
    """The extra case: the same question with one space or two between the groups is one query
    (the normal form collapses them), redacted or not; redaction never splits it in two."""
    asked = ["call 555 123 4567 please", "Call 555  123   4567 please", "CALL 555\u00a0123\u00a04567 PLEASE",
             "call 555-123-4567 please", "call 555 123 4567\u200b please"]  # fmt: skip
    spans = [span(f"{i + 1:016x}", genai(s(q), s('[{"id": "d1", "score": 1}]')), t=T0 + i) for i, q in enumerate(asked)]
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps(request(spans)) + "\n")
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "plain")))
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "red"), redact=["phone"]))
    plain, _, _ = load(tmp_path / "plain")
    red, _, t = load(tmp_path / "red")
    assert len(red) <= len(plain)  # never split: queries that are one unredacted are one redacted
    assert [q["count"] for q in red] == [5] and "[PHONE]" in red[0]["text"] and t["redactions"]["phone"] == 5


def test_redaction_never_splits_what_the_normal_form_joins(tmp_path):
    """Any two spellings one query unredacted (case, spaces, full width) are one query redacted."""
    from harness.traces.aggregate import normalise

    r = Redactor(ALL)
    pairs = [("Mail ANN@X.ORG now", "mail ann@x.org now"), ("card 4111 1111 1111 1111", "CARD 4111  1111 1111  1111"),
             ("key AKIAIOSFODNN7EXAMPLE", "KEY akiaiosfodnn7example"),
             ("".join(FULL_WIDTH.get(c, c) for c in "call 555 123 4567"), "call 555 123 4567")]  # fmt: skip
    for a, b in pairs:
        assert normalise(a) == normalise(b)
        assert normalise(r.key(normalise(a))) == normalise(r.key(normalise(b))), (a, b)


def test_ids_that_differ_only_in_an_email_stay_distinct_and_the_corpus_is_checked_unredacted(tmp_path):
    docs = [{"id": "user:alice@example.com", "score": 0.9, "content": "alice profile"},
            {"id": "user:bob@example.com", "score": 0.8, "content": "bob profile"}]  # fmt: skip
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps(request([span("0000000000000001", genai(s("who is alice"), s(json.dumps(docs))))])) + "\n")
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "o"), redact=["email"]))
    _, run, t = load(tmp_path / "o")
    ids = [r[2] for r in run]
    assert len(set(ids)) == 2 and all(i.startswith("user:[EMAIL]#") for i in ids) and "rankings" in t
    corpus = [json.loads(x) for x in (tmp_path / "o" / "corpus.jsonl").read_text().splitlines()]
    assert {c["_id"]: c["text"] for c in corpus} == dict(zip(ids, ["alice profile", "bob profile"]))
    # --corpus: the team's ids are unredacted, checked as the spans wrote them; the folder's corpus is
    # the team's, redacted the way the run is, so the two still match
    team = tmp_path / "team.jsonl"
    team.write_text('{"_id": "user:alice@example.com", "title": "", "text": "alice at alice@example.com"}\n'
                    '{"_id": "user:bob@example.com", "title": "Bob", "text": "bob profile"}\n')  # fmt: skip
    import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "o2"), corpus=str(team), redact=["email"]))
    _, run2, _ = load(tmp_path / "o2")
    corpus2 = [json.loads(x) for x in (tmp_path / "o2" / "corpus.jsonl").read_text().splitlines()]
    assert {r[2] for r in run2} == {c["_id"] for c in corpus2} and len(corpus2) == 2
    assert "@" not in (tmp_path / "o2" / "corpus.jsonl").read_text() and corpus2[0]["text"] == "alice at [EMAIL]"
    assert team.read_text().count("@") == 3  # the team's file as it was
    # an id truly not in the team's corpus is still refused, named redacted
    team.write_text('{"_id": "user:alice@example.com", "title": "", "text": "a"}\n')
    with pytest.raises(InputError, match="1 document ids"):
        import_traces(ImportOptions(spans=[str(f)], out=str(tmp_path / "o3"), corpus=str(team), redact=["email"]))
    assert not (tmp_path / "o3").exists()


def test_the_format_characters_removed_are_every_one_of_this_python():
    """Every Unicode format character of this Python is removed before matching."""
    missing = [hex(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"
               and canonical(f"a{chr(c)}b") != "ab"]  # fmt: skip
    assert not missing


def test_a_text_without_anything_recognisable_is_written_as_it_came():
    r = Redactor(ALL)
    for text in ("ﬁne ｗｉｄｅ text\u200b, 50% off, 1\u00a0234 items", "version 1.2.3 at 10:30 on 2026-05-01"):
        assert r.text(text) == text
    assert r.doc_id("doc\u00a0id") == "doc\u00a0id" and sum(r.counts.values()) == 0
