""":mod:`harness.config`: every config value and every scalar is
checked before any work, with file, line and key; hostile text (lone surrogates, non-ASCII digits)
in hypothesis strategies."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.config import load_config, parse_config, redacted
from harness.errors import InputError, RetrieverError, scrub
from harness.io.beir import load_beir
from harness.io.trec import read_qrels
from harness.io.yamltext import MAX_YAML_VALUES
from harness.model import Document, GoldenDataset, Query
from harness.validate import check_corpus_encodable, validate_output
from tests.conftest import run_harness

REPO = Path(__file__).resolve().parent.parent
BM25 = "retrievers:\n  bm25: {type: bm25}\n"


def cfg(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def located(tmp_path: Path, text: str, line: int | None, *needles: str) -> str:
    p = cfg(tmp_path, text)
    with pytest.raises(InputError) as e:
        load_config(p)
    msg = str(e.value)
    prefix = f"{p}:{line}:" if line is not None else f"{p}"
    assert msg.startswith(prefix), msg
    for n in needles:
        assert n in msg, (n, msg)
    return msg


# --------------------------------------------------------------------------- config values
@pytest.mark.parametrize(
    ("text", "line", "needles"),
    [
        ("seed: -1\n" + BM25, 1, ["seed", "greater than or equal to 0"]),
        ("seed: 4294967296\n" + BM25, 1, ["seed", "less than or equal to 4294967295"]),
        ("seed: 1.5\n" + BM25, 1, ["seed", "plain integer"]),
        ("seed: true\n" + BM25, 1, ["seed", "not true (a boolean)"]),
        ("stats: {bootstrap: 1.0e+12}\n" + BM25, 1, ["stats.bootstrap", "plain integer"]),
        ("stats:\n  bootstrap: 1000000000000\n" + BM25, 2, ["stats.bootstrap", "less than or equal to 1000000"]),
        ("stats:\n  permutations: '100'\n" + BM25, 2, ["stats.permutations", "not the string '100'"]),
        ("depth: true\n" + BM25, 1, ["depth", "not true (a boolean)"]),
        ("depth: 10.0\n" + BM25, 1, ["depth", "plain integer"]),
        ("timeout_s: .inf\n" + BM25, 1, ["timeout_s"]),
        ("latency_queries: false\n" + BM25, 1, ["latency_queries", "boolean"]),
        ("retrievers:\n  bm25:\n    type: bm25\n    k1: true\n", 4, ["retrievers.bm25.k1", "boolean"]),
        ("retrievers:\n  bm25:\n    type: bm25\n    k1: '1.2'\n", 4, ["retrievers.bm25.k1", "string"]),
        (
            "retrievers:\n  bm25:\n    type: bm25\n    lamda: 1\n",
            4,
            ["retrievers.bm25.lamda", "valid keys: type,", "k1"],
        ),
        ("retrievers:\n  m:\n    type: mmr\n    of: x\n    lamda: 1\n", 5, ["retrievers.m.lamda", "lambda"]),
        ("metrics: [nope]\n" + BM25, 1, ["metrics: unknown metric 'nope'"]),
        ("retrievers:\n  bm25: {type: bm25}\n  bm25: {type: bm25}\n", 3, ["duplicate key 'bm25' on lines 2 and 3"]),
        ("depth: 10\ndepth: 20\n" + BM25, 2, ["duplicate key 'depth' on lines 1 and 2"]),
        ('retrievers:\n  "": {type: bm25}\n', 1, ["must not be empty"]),
        ('retrievers:\n  "a\\nb": {type: bm25}\n', 1, ["line breaks"]),
        ('retrievers:\n  "a\\tb": {type: bm25}\n', 1, ["control characters"]),
        (f"retrievers:\n  {'x' * 201}: {{type: bm25}}\n", 1, ["at most 200 characters"]),
        ("retrievers:\n  1: {type: bm25}\n", 1, ["names must be text"]),
    ],
)
def test_config_values_are_checked_with_file_line_and_key(tmp_path, text, line, needles) -> None:
    msg = located(tmp_path, text, line, *needles)
    assert "metrics: metrics:" not in msg


def test_metrics_error_has_one_prefix(tmp_path) -> None:
    msg = located(tmp_path, "metrics: [ndcg@10, nope]\n" + BM25, 1, "unknown metric")
    assert ":1: metrics: unknown metric" in msg and "metrics: metrics" not in msg, msg


def test_a_200_char_name_and_odd_characters_are_accepted(tmp_path) -> None:
    name = "a/b:c*" + "x" * 194
    load_config(cfg(tmp_path, f'retrievers:\n  "{name}": {{type: bm25}}\n'))


def test_yaml_alias_bomb_is_refused(tmp_path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    text = "retrievers:\n  bm25:\n    type: bm25\n    params: {}\n" + "\n".join(lines) + "\n"
    msg = located(tmp_path, text, None, f"more than {MAX_YAML_VALUES:,} values through aliases")
    assert "Traceback" not in msg


def test_a_raw_control_character_is_named_with_its_line(tmp_path) -> None:
    msg = located(tmp_path, 'retrievers:\n  bm25: {type: bm25}\nname: "a\x01b"\n', 3, "U+0001", "escapes")
    assert "internal error" not in msg


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80))
def test_any_text_after_a_valid_config_is_read_or_refused_with_input_error(tmp_path, junk) -> None:
    """Hostile text (control characters, lone surrogates excluded by the codec, tabs, BOMs) is either
    a config or one located InputError: never another exception."""
    p = tmp_path / "h.yaml"
    p.write_text(BM25 + "name: " + junk + "\n", encoding="utf-8")
    try:
        load_config(p)
    except InputError as e:
        assert str(e).startswith(str(p)), e


def test_small_aliases_still_work(tmp_path) -> None:
    c = load_config(cfg(tmp_path, "retrievers:\n  a: &b {type: bm25, k1: 1.1}\n  b: *b\n"))
    assert c.specs()["b"].k1 == 1.1


def test_imports_run_files_and_urls_are_resolved_at_config_check(tmp_path) -> None:
    (tmp_path / "team_mod_cfgcheck.py").write_text("class Real:\n    pass\n")
    located(
        tmp_path,
        BM25 + "  m:\n    type: python\n    class: team_mod_cfgcheck:Missing\n",
        5,
        "retrievers.m.class",
        "Missing",
    )
    located(
        tmp_path,
        BM25 + "  m:\n    type: python\n    function: no_such_mod_zz:f\n",
        5,
        "retrievers.m.function",
        "no_such_mod_zz",
    )
    located(
        tmp_path, BM25 + "  r:\n    type: run_file\n    path: runs/none.trec\n", 5, "retrievers.r.path", "not found"
    )
    located(tmp_path, BM25 + "  h:\n    type: http\n    url: ftp://x/y\n", 5, "retrievers.h.url", "http://")
    located(tmp_path, BM25 + "  h:\n    type: http\n    url: 'http://h:99999999/x'\n", 5, "retrievers.h.url")


def test_class_missing_exits_2_before_any_retriever_runs(tmp_path) -> None:
    """`class: mod:Missing` beside bm25 is exit 2 with file:line:key, and bm25 never ran."""
    (tmp_path / "c.yaml").write_text("dataset: demo\n" + BM25 + "  m: {type: python, class: 'os:Missing'}\n")
    proc = run_harness("run", "--config", "c.yaml", "--out", "o", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "c.yaml:4: retrievers.m.class" in proc.stderr and "Missing" in proc.stderr
    assert "running bm25" not in proc.stderr and not (tmp_path / "o" / "results.json").exists()


# --------------------------------------------------------------------------- ${ENV_VAR}
def test_env_expansion_defaults_and_escapes(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_T_DEPTH_SPLIT", "dev")
    monkeypatch.delenv("HARNESS_T_UNSET", raising=False)
    c = load_config(
        cfg(
            tmp_path,
            """
            dataset: {path: demo, split: "${HARNESS_T_DEPTH_SPLIT}"}
            cache_dir: "${HARNESS_T_UNSET:-/tmp/cache}"
            baseline: "x$${literal}"
            retrievers:
              "x${literal}": {type: bm25}
            """,
        )
    )
    assert c.dataset.split == "dev" and c.cache_dir == "/tmp/cache" and c.baseline == "x${literal}"


def test_unset_env_var_is_located(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("HARNESS_T_NOPE", raising=False)
    located(
        tmp_path,
        "retrievers:\n  h:\n    type: http\n    url: http://x/\n    headers:\n"
        "      Authorization: 'Bearer ${HARNESS_T_NOPE}'\n",
        6,
        "retrievers.h.headers.Authorization",
        "environment variable HARNESS_T_NOPE is not set",
    )
    located(tmp_path, "depth: ${oops\n" + BM25, 1, "without a closing")
    located(tmp_path, "cache_dir: ${1BAD}\n" + BM25, 1, "not an environment variable reference")


def test_env_values_in_team_params_are_written_as_templates_and_scrubbed(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_T_API_KEY", "sk-live-abcdef123456")
    (tmp_path / "team_mod_env.py").write_text(
        "class T:\n    def __init__(self, api_key):\n        self.k = api_key\n"
        "    def index(self, c):\n        pass\n    def search(self, q, k):\n        return {}\n"
    )
    c = load_config(
        cfg(
            tmp_path,
            "retrievers:\n  t:\n    type: python\n    class: team_mod_env:T\n"
            "    params: {api_key: '${HARNESS_T_API_KEY}'}\n",
        )
    )
    spec = c.specs()["t"]
    assert spec.params["api_key"] == "sk-live-abcdef123456"  # the adapter gets the value
    for dump in (redacted(c), redacted(spec), c.model_dump(mode="json")):
        text = json.dumps(dump)
        assert "sk-live" not in text and "${HARNESS_T_API_KEY}" in text, text
    assert scrub("service said: bad key sk-live-abcdef123456") == "service said: bad key <redacted>"
    assert "sk-live" not in str(RetrieverError("key sk-live-abcdef123456 refused"))


# --------------------------------------------------------------------------- team scores
@pytest.mark.parametrize(
    ("result", "needle"),
    [
        ({"q1": [("d1", True)]}, "a boolean"),
        ({"q1": [("d1", "3.5")]}, "str"),
        ({"q1": [("d1", None)]}, "NoneType"),
        ({"q1": {"d1": np.bool_(True)}}, "a boolean"),
        ({"q1": [("d1", b"1")]}, "bytes"),
    ],
)
def test_team_scores_must_be_real_numbers(result, needle) -> None:
    with pytest.raises(RetrieverError, match=rf"retriever 'team'.*score .* is not a number \({needle}") as e:
        validate_output(result, [Query(id="q1", text="x")], 10, np.array(["d1"], dtype=object), "team")
    assert "team" in str(e.value)


def test_numpy_and_int_scores_are_fine() -> None:
    run = validate_output(
        {"q1": [("d1", np.float32(1.5)), ("d2", 2), ("d3", np.int64(1))]},
        [Query(id="q1", text="x")],
        10,
        np.array(["d1", "d2", "d3"], dtype=object),
        "team",
    )
    assert len(run) == 1


# --------------------------------------------------------------------------- corpus text
def beir(tmp_path: Path, doc_text: str, query_text: str = "hello") -> Path:
    root = tmp_path / "ds"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        '{"_id": "d0", "text": "fine"}\n\n' + json.dumps({"_id": "d1", "text": doc_text}) + "\n"
    )
    (root / "queries.jsonl").write_text(json.dumps({"_id": "#q1", "text": query_text}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n#q1\td1\t1\n")
    return root


def test_lone_surrogate_in_corpus_is_located(tmp_path) -> None:
    ds = load_beir(beir(tmp_path, "bad \ud800 text"), "test")
    with pytest.raises(InputError) as e:
        check_corpus_encodable(ds)
    msg = str(e.value)
    assert "corpus.jsonl:3: text:" in msg and "'d1'" in msg and "lone surrogate" in msg, msg


def test_lone_surrogate_in_query_is_located(tmp_path) -> None:
    ds = load_beir(beir(tmp_path, "ok", query_text="q \udfff"), "test")
    with pytest.raises(InputError, match=r"queries.jsonl:1: text: query '#q1'"):
        check_corpus_encodable(ds)


def test_query_id_starting_with_hash_is_kept_in_beir(tmp_path) -> None:
    """Row 11: `#q1` in queries.jsonl and in the BEIR qrels tsv is a query, not a comment."""
    ds = load_beir(beir(tmp_path, "ok"), "test")
    assert [q.id for q in ds.queries] == ["#q1"] and ds.qrels == {"#q1": {"d1": 1}}
    check_corpus_encodable(ds)


def test_in_memory_dataset_names_the_id() -> None:
    ds = GoldenDataset.build(
        "m", [Document(id="d1", title="t\ud800", text="x")], [Query(id="q", text="x")], {"q": {"x": 1}}
    )
    with pytest.raises(InputError, match=r"^title: document 'd1': character 1 is a lone surrogate"):
        check_corpus_encodable(ds)


# --------------------------------------------------------------------------- hostile text, by property
HOSTILE = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),  # lone surrogates
        st.sampled_from("٣۳३١٢𝟙１²½_ \t#"),  # non-ASCII digits, underscores, separators
    ),
    max_size=12,
)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FAST
@given(HOSTILE)
def test_grades_accept_exactly_plain_ascii_integers(tmp_path, grade) -> None:
    p = tmp_path / "q.txt"
    p.write_text(f"q1 0 d1 {grade}\n", encoding="utf-8", errors="surrogatepass")
    token = grade.strip()
    plain = (
        bool(token)
        and token.isascii()
        and token.lstrip("+-").split(".")[0].isdigit()
        and set(token.partition(".")[2]) <= {"0"}
        and token.count("+") + token.count("-") <= 1
        and token[0] not in "."
        and len(token.split()) == 1
        and -(2**63) <= int(token.partition(".")[0]) < 2**63
    )
    try:
        q = read_qrels(p)
    except InputError as e:
        assert e.path is not None and str(e).startswith(str(p))
        assert not plain or token.startswith("#"), (grade, str(e))
    else:
        assert plain, (grade, q)
        assert q["q1"]["d1"] == int(token.partition(".")[0])


@FAST
@given(HOSTILE, HOSTILE)
def test_config_values_with_hostile_text_give_located_errors_or_load(tmp_path, name, value) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(
        "seed: " + json.dumps(value) + "\nretrievers:\n  " + json.dumps(name) + ": {type: bm25}\n",
        encoding="utf-8",
    )
    try:
        c = load_config(p)
    except InputError as e:
        assert str(e).startswith(str(p)), str(e)
    else:
        assert list(c.retrievers) == [name]


@FAST
@given(
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3),
    st.text(max_size=5),
)
def test_any_lone_surrogate_is_found(bad, ok) -> None:
    ds = GoldenDataset.build("m", [Document(id="d", text=ok + bad)], [Query(id="q", text="x")], {"q": {"d": 1}})
    with pytest.raises(InputError, match="lone surrogate"):
        check_corpus_encodable(ds)


def test_parse_config_dict_api_is_strict_too() -> None:
    with pytest.raises(InputError, match="depth: must be an integer, not true"):
        parse_config({"depth": True, "retrievers": {"b": {"type": "bm25"}}})


# --------------------------------------------------------------------------- secret fields of any spec
def test_spec_secret_fields_are_masked_in_every_dump_and_revealed_for_build() -> None:
    from typing import Literal

    from pydantic import Field, SecretStr

    from harness.registry import SpecBase

    class VendorSpec(SpecBase):
        type: Literal["vendor"] = "vendor"
        api_key: SecretStr
        region_token: str | None = Field(None, json_schema_extra={"secret": True})
        tokens: list[str] = Field(default_factory=list, json_schema_extra={"secret": True})
        endpoint: str = "https://vendor.example/search"

    assert VendorSpec.secret_fields() == ["api_key", "region_token", "tokens"]
    spec = VendorSpec(api_key="vk-123456789", region_token="rt-abcdefgh", tokens=["t-1111111", "t-2222222"])
    for dump in (spec.model_dump(), spec.model_dump(mode="json"), redacted(spec)):
        text = json.dumps(dump, default=str)
        assert "vk-123456789" not in text and "rt-abcdefgh" not in text and "t-1111111" not in text, text
        assert dump["api_key"] == "<set>" and dump["tokens"] == ["<set>", "<set>"]
        assert dump["endpoint"] == "https://vendor.example/search"
    assert spec.reveal()["api_key"] == "vk-123456789" and spec.reveal()["tokens"] == ["t-1111111", "t-2222222"]
    unset = VendorSpec(api_key="vk-999999999")
    assert unset.model_dump(mode="json")["region_token"] is None  # "not set" stays visible as such
    # a registered secret is scrubbed from any error message
    assert "vk-123456789" not in str(InputError("the vendor refused key vk-123456789"))
