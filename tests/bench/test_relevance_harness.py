"""The relevance harness (bench/relevance.py): its metrics on hand-computed
examples, its references, and that it runs without ../shared (a user's clone)."""

from __future__ import annotations

import array
import hashlib
import json
import math
from pathlib import Path

import pytest

from bench.relevance_metrics import (
    average_precision,
    half,
    keyword_matches,
    ndcg_at,
    pooled_selection,
    precision_at,
    rank_by,
    success_at,
)
from bench.relevance_refs import Doc, Fts5Or, TfIdf, sanity_search_rank


def test_average_precision_by_hand() -> None:
    # Relevant a, c, e; found at ranks 1 and 3, e never: (1/1 + 2/3) / 3.
    assert average_precision(["a", "b", "c", "d"], {"a", "c", "e"}) == pytest.approx(
        (1 + 2 / 3) / 3
    )
    assert average_precision(["b", "a"], {"a"}) == pytest.approx(0.5)
    assert average_precision(["x"], set()) == 0.0


def test_precision_at_counts_missing_places_as_misses() -> None:
    assert precision_at(["a", "b", "c"], {"a", "c"}, 10) == pytest.approx(0.2)
    assert precision_at(["a", "b", "c"], {"a", "c"}, 2) == pytest.approx(0.5)


def test_ndcg_by_hand() -> None:
    # Relevant a, c at ranks 2 and 3; ideal has them at 1 and 2.
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at(["b", "a", "c"], {"a", "c"}, 3) == pytest.approx(dcg / ideal)
    assert ndcg_at(["a", "c", "b"], {"a", "c"}, 10) == pytest.approx(1.0)
    # Only the first k count; the ideal is capped at k hits.
    assert ndcg_at(["b", "a"], {"a", "c", "d"}, 1) == 0.0
    assert ndcg_at(["a", "b"], {"a", "c", "d"}, 1) == pytest.approx(1.0)
    assert success_at(["b", "a"], "a", 1) == 0.0
    assert success_at(["b", "a"], "a", 3) == 1.0


def test_rank_by_drops_zero_scores_and_breaks_ties_by_id() -> None:
    assert rank_by({"b": 1.0, "a": 1.0, "c": 2.0, "z": 0.0}) == ["c", "a", "b"]


def test_split_is_a_fixed_function_of_the_id() -> None:
    keys = [f"paper{i}" for i in range(1000)]
    parts = [half(k) for k in keys]
    assert parts == [half(k) for k in keys]
    assert set(parts) == {"calibrate", "report"}
    assert 400 < parts.count("report") < 600
    first = hashlib.sha256(b"1Fqg133qRaI").digest()[0]
    assert half("1Fqg133qRaI") == ("report" if first & 1 else "calibrate")


def test_keyword_rule_short_patterns_must_equal() -> None:
    assert keyword_matches(" RL ", ("rl",))
    assert not keyword_matches("deep rl", ("rl",))
    assert not keyword_matches("dynamics", ("nas",))
    assert keyword_matches("Offline RL benchmarks", ("offline rl",))


def test_pooled_selection_by_hand() -> None:
    pairs = [(5.0, True), (4.0, False), (3.0, True), (1.0, False)]
    assert pooled_selection(pairs, 4.0) == (0.5, 0.5)
    assert pooled_selection(pairs, 9.0) == (1.0, 0.0)


def test_sanity_search_rank_follows_arxiv_sanity_lite() -> None:
    docs = [
        Doc("p1", "Graph networks", "graph graph graph graph graph"),  # 20 + min(3, 5)
        Doc("p2", "Other", "graph"),  # 1
        Doc("p3", "Graph", ""),  # 20
        Doc("p4", "Nothing", "none"),  # 0: left out
    ]
    assert sanity_search_rank("GRAPH", docs) == ["p1", "p3", "p2"]
    # Substrings count, as str.count does ("graphs" contains "graph").
    assert sanity_search_rank("graph", [Doc("q", "graphs", "")]) == ["q"]
    # Equal scores: pairs.sort(reverse=True) puts the larger paper id first.
    assert sanity_search_rank("x", [Doc("a", "", "x"), Doc("b", "", "x")]) == ["b", "a"]


def test_references_rank_the_obvious_paper_first() -> None:
    docs = [
        Doc("a", "Offline reinforcement learning", "policies from logged data"),
        Doc("b", "Graph neural networks", "message passing on graphs"),
        Doc("c", "Diffusion models", "denoising score matching"),
    ]
    assert rank_by(TfIdf(docs).scores("offline reinforcement learning"))[0] == "a"
    assert rank_by(Fts5Or(docs).scores("graph neural networks"))[0] == "b"
    assert TfIdf(docs).neighbours("c").get("c") is None


def test_harness_skips_set_a_without_the_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.relevance import run

    result = run(corpus=tmp_path / "missing.tsv")
    out = capsys.readouterr().out
    assert "skipped" in out
    assert result["set_a"] is None and result["similar"] is None
    assert result["set_b"]["known_item"]["queries"] == 41
    # Exact names before the compounds that contain them ("DPO" before AlphaDPO) count.
    assert result["set_b"]["known_item"]["find"] == 1.0
    last = json.loads(out.strip().splitlines()[-1])
    assert last["bench"] == "relevance" and last["set_b"]["ndcg5"] > 0


# --- the split and the labels, on a small made-up Set A ----------------------------------


def _tiny_corpus(path: Path) -> dict[str, str]:
    """A 30-paper ICLR-style TSV (20 with keywords); returns {OpenReview id: its half}."""
    rows = ["paper_id\ttitle\tlink\tkeywords\tabstract"]
    halves = {}
    for i in range(30):
        key = f"syn{i:03d}x"
        fed = i % 3 == 0
        title = f"{'Federated' if fed else 'Graph'} study number {i}"
        abstract = (
            f"We study {'federated learning across many clients' if fed else 'graphs'} "
            f"in setting {i}. Our method improves accuracy on several benchmarks."
        )
        keywords = "" if i >= 20 else ("federated learning, zzqsecret" if fed else "graphs")
        rows.append(
            f"{key}\t{title}\thttps://openreview.net/forum?id={key}\t{keywords}\t{abstract}"
        )
        if keywords:
            halves[key] = half(key)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return halves


def test_set_a_hides_keywords_and_reports_on_the_report_half_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing Paperboy sees holds a keyword; every ranking measured holds report-half
    papers only; every threshold is calibrated on calibrate-half papers only."""
    from bench import relevance
    from digests.topics import load_catalog

    halves = _tiny_corpus(tmp_path / "tiny.tsv")
    assert {"calibrate", "report"} <= set(halves.values())
    data = relevance.load_set_a(tmp_path / "tiny.tsv")
    assert data is not None
    assert sorted(data.source.values()) == sorted(halves)  # papers without keywords left out
    stored = json.dumps([dict(row) for row in data.db.query("select * from papers")])
    assert "zzqsecret" not in stored and all(not p["keywords"] for p in data.papers.values())
    assert data.labels["federated"] == {p for p, k in data.source.items() if int(k[3:6]) % 3 == 0}

    measured: list[str] = []
    calibrated: list[str] = []
    real_ap, real_calibrate = relevance.average_precision, relevance.calibrate

    def ap(ranking: list[str], relevant: set[str]) -> float:
        measured.extend(ranking)
        measured.extend(relevant)
        return real_ap(ranking, relevant)

    def calibrate(table, *args):  # type: ignore[no-untyped-def]
        calibrated.extend(row[0] for row in table)
        return real_calibrate(table, *args)

    monkeypatch.setattr(relevance, "average_precision", ap)
    monkeypatch.setattr(relevance, "calibrate", calibrate)
    result = relevance.measure_set_a(data, load_catalog(), detail=False)
    side = {p: halves[k] for p, k in data.source.items()}
    assert measured and {side[p] for p in measured} == {"report"}
    assert calibrated and {side[p] for p in calibrated} == {"calibrate"}
    assert result["report_half"] == sum(1 for h in side.values() if h == "report")
    report_fed = {p for p in data.labels["federated"] if side[p] == "report"}
    assert result["relevant"]["federated"] == len(report_fed)


def test_semantic_topics_experiment_helpers_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import semantic_topics

    # Best F1: taking the two top papers (2 of 2 relevant, 0 wrong) beats any other line.
    pairs = [(5.0, True), (4.0, True), (3.0, False), (1.0, False)]
    assert semantic_topics._best_f1_line(pairs) == 3.5
    assert semantic_topics._pooled(pairs, 3.5) == (1.0, 1.0)
    assert semantic_topics._pooled(pairs, 0.5) == (0.5, 1.0)
    # RRF: a paper second in both rankings beats one first in one and absent from the other.
    fused = semantic_topics._rrf({"a": 3.0, "b": 2.0}, {"c": 0.9, "b": 0.8})
    assert max(fused, key=fused.__getitem__) == "b"
    # Without the extra the experiment measures nothing (and reads no corpus).
    monkeypatch.setattr(semantic_topics.semantic, "installed", lambda: False)
    assert semantic_topics.run(Path("/nonexistent.tsv"), Path("/nonexistent.npz")) is None


def test_vector_cache_encodes_each_text_once(tmp_path: Path) -> None:
    from bench.semantic_topics import CachedEncoder
    from digests.semantic import HashingEncoder

    model = HashingEncoder(dim=8)
    path = tmp_path / "vectors.bin"
    first = CachedEncoder(path, model)
    vectors = first.encode(["offline rl", "graph neural networks", "offline rl"])
    assert first.encoded == 2 and model.calls == 1
    # A new process reads the file: nothing is encoded again, and the vectors are the same
    # (as float32).
    again = CachedEncoder(path, model)
    assert again.encode(["graph neural networks", "offline rl"]) == [vectors[1], vectors[0]]
    assert again.encoded == 0 and model.calls == 1
    assert vectors[0] == pytest.approx(model.encode(["offline rl"])[0], abs=1e-6)
    # A cache of another model is not used.
    other = CachedEncoder(path, HashingEncoder(dim=8, name="another"))
    assert other.vectors == {}


def test_a_damaged_vector_cache_is_refused_with_its_reason(tmp_path: Path) -> None:
    """A cut-short, shifted or foreign file would give wrong vectors silently (a truncated
    cache slices its last keys' vectors short: a 3-number vector scored as if whole, every
    figure measured with it wrong): each is refused with one line naming the file."""
    from bench.semantic_topics import CachedEncoder, CacheError
    from digests.semantic import HashingEncoder

    model = HashingEncoder(dim=8)
    path = tmp_path / "vectors.bin"
    CachedEncoder(path, model).encode(["offline rl", "graph neural networks"])
    whole = path.read_bytes()
    header, _, body = whole.partition(b"\n")
    keys = json.loads(header)["keys"]
    twice = json.dumps({"model": model.name, "dim": 8, "keys": [keys[0]] * 2}).encode()
    hostile = {
        "cut short": whole[:-20],
        "cut at a vector": whole[: len(header) + 1 + 8 * 4],
        "one byte more": whole + b"\0",
        "not json": b"\x00\x01garbage\n" + body,
        "no header": b"",
        "keys not a list": json.dumps({"model": model.name, "dim": 8, "keys": "ab"}).encode()
        + b"\n",
        "duplicate keys": twice + b"\n" + body,
        "not finite": header + b"\n" + body[:-4] + array.array("f", [math.nan]).tobytes(),
    }
    for why, data in hostile.items():
        path.write_bytes(data)
        with pytest.raises(CacheError, match="not a usable vector cache") as raised:
            CachedEncoder(path, model)
        assert str(path) in str(raised.value) and "\n" not in str(raised.value), why
        assert path.read_bytes() == data, why  # left as it was, for the user to look at
    # The whole file still reads, as the same vectors.
    path.write_bytes(whole)
    assert CachedEncoder(path, model).encode(["offline rl"]) == CachedEncoder(
        tmp_path / "fresh.bin", model
    ).encode(["offline rl"])
