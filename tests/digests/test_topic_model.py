"""Learned topic models (config/topic_models.toml), per-topic lines, and feedback (refine)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from db.store import Store
from digests.digest import select_items
from digests.matching import Matcher, PaperText, Term, normalise, score
from digests.topic_model import MODELS_PATH, features, hand_key, load_models, refine
from digests.topics import SEARCH_LEARNED, CatalogError, Topic, load_catalog
from tests.conftest import NOW, ROOT

CATALOG = """threshold = 4.0

[[topics]]
id = "graphs"
label = "Graphs"
description = "Graph learning."
[topics.terms]
"graph neural network" = 3.0
"graph" = 1.0

[[topics]]
id = "strict"
label = "Strict"
description = "A topic with its own line."
threshold = 8.0
[topics.terms]
"robot" = 2.0

[[topics]]
id = "loose"
label = "Loose"
description = "A topic with a low line."
threshold = 2.0
[topics.terms]
"robot" = 2.0
"""

GRAPHS_KEY = hand_key([Term.of("graph neural network", 3.0), Term.of("graph", 1.0)])
MODELS = f"""[graphs]
threshold = 6.0
hand = 0.5
hand_terms = "{GRAPHS_KEY}"
[graphs.terms]
"message passing" = 3.0
"graph" = 1.0
"""


def _text(title: str, abstract: str) -> PaperText:
    return PaperText(title=normalise(title), keywords=" ", abstract=normalise(abstract))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "topics.toml").write_text(CATALOG, encoding="utf-8")
    (tmp_path / "topic_models.toml").write_text(MODELS, encoding="utf-8")
    return tmp_path


def test_learned_terms_join_the_hand_terms_scaled_to_the_topic_line(folder: Path) -> None:
    catalog = load_catalog(folder / "topics.toml")
    graphs = catalog.get("graphs")
    assert graphs is not None and graphs.threshold == 6.0
    # hand x 0.5 plus learned, summed per phrase, then x (4.0 / 6.0)
    weights = {term.phrase.strip(): term.weight for term in graphs.terms}
    assert weights == pytest.approx(
        {"graph neural network": 1.0, "graph": (0.5 + 1.0) * 4 / 6, "message passing": 2.0}
    )
    # The learned phrase alone now scores: "message passing" in the title and abstract.
    paper = _text("Message passing", "We study message passing.")
    assert graphs.score(paper) == 4.0  # = the catalog's line: raw 6.0, the topic's own
    # The hand terms alone, and the full-text search's phrases, are the catalog's.
    hand = load_catalog(folder / "topics.toml", learned=False).get("graphs")
    assert hand is not None and hand.threshold is None
    assert {t.phrase for t in hand.terms} | {normalise("message passing")} == set(
        graphs.search_phrases
    )
    assert hand.score(paper) == 0.0


def test_a_topic_threshold_scales_its_terms_and_the_digest_applies_it(folder: Path) -> None:
    catalog = load_catalog(folder / "topics.toml")
    strict, loose = catalog.get("strict"), catalog.get("loose")
    assert strict is not None and loose is not None
    # "robot" 2.0 raw: x 4/8 for the strict topic, x 4/2 for the loose one.
    assert [t.weight for t in strict.terms] == [1.0]
    assert [t.weight for t in loose.terms] == [4.0]
    papers = [
        {"id": "p1", "title": "Robots", "abstract": "A robot and another robot and robot."},
        {"id": "p2", "title": "Arms", "abstract": "A robot arm."},
    ]
    # p1: raw 2 x (1 + ln 3) + 2 = 6.2, p2: raw 2.0 (abstract only). The digest keeps
    # its one threshold (the catalog's); each topic's scaled scores apply its own line.
    items = select_items(
        papers, [strict, loose], threshold=catalog.threshold, per_topic=5, archive=None
    )
    picked = {(item.paper["id"], topic.id) for item in items for topic in item.topics}
    assert picked == {("p1", "loose"), ("p2", "loose")}
    strong = {"id": "p3", "title": "Robot", "abstract": "robot " * 20}  # raw 2(1+ln 20)+2 = 10
    items = select_items([strong], [strict], threshold=catalog.threshold, per_topic=5)
    assert [item.paper["id"] for item in items] == ["p3"]


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        ('hand = 1.0\nhand_terms = "K"\n[graphs.terms]\n"a" = 1', "no 'threshold'"),
        ('threshold = 0\nhand_terms = "K"', "threshold must be a positive number"),
        ('threshold = -3.0\nhand_terms = "K"', "threshold must be a positive"),
        ('threshold = nan\nhand_terms = "K"', "threshold must be a positive"),
        ('threshold = inf\nhand_terms = "K"', "threshold must be a positive"),
        ('threshold = 6.0\nhand = nan\nhand_terms = "K"', "hand must be a positive"),
        ('threshold = 6.0\nhand = 0\nhand_terms = "K"', "hand must be a positive"),
        ('threshold = 6.0\nhand_terms = "K"\n[graphs.terms]\n"graph" = 1e9', "up to 1000"),
        ('threshold = 6.0\nhand_terms = "K"\n[graphs.terms]\n"graph" = -2.0', "positive"),
        ('threshold = 6.0\nhand_terms = "K"\n[graphs.terms]\n"graph" = nan', "positive"),
        ('threshold = 6.0\nhand_terms = "K"\n[graphs.terms]\n"!!" = 2.0', "no words"),
        ('threshold = 6.0\nhand_terms = "K"\n[graphs.terms]\n"x" = "big"', "could not convert"),
        ('threshold = 6.0\nhand_terms = "K"\nterms = 3', "terms must be a table"),
        ("threshold = 6.0", "no 'hand_terms'"),
    ],
)
def test_a_malformed_model_is_left_out_with_one_warning(
    folder: Path, model: str, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A broken or hostile model (NaN, inf, 0, negative, huge) never fails the catalog,
    never makes a topic match everything (a huge weight) or nothing (a NaN or infinite
    line scales every weight to NaN or 0): that topic keeps its hand terms."""
    models = folder / "topic_models.toml"
    models.write_text(f"[graphs]\n{model.replace('K', GRAPHS_KEY)}\n", encoding="utf-8")
    catalog = load_catalog(folder / "topics.toml")
    hand = load_catalog(folder / "topics.toml", learned=False)
    assert catalog.get("graphs") == hand.get("graphs")
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "'graphs' left out" in warnings[0], warnings
    assert problem in warnings[0] and "\n" not in warnings[0]
    load_catalog(folder / "topics.toml")  # read again (each CLI command): no second warning
    assert len([r for r in caplog.records if r.levelname == "WARNING"]) == 1


def test_an_unreadable_model_file_leaves_the_hand_terms(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    models = folder / "topic_models.toml"
    for text in ("not toml [", "[graphs]\nthreshold = 6.0\nthreshold = 7.0\n", "= 1"):
        caplog.clear()
        models.write_text(text, encoding="utf-8")
        catalog = load_catalog(folder / "topics.toml")
        assert catalog.get("graphs") == load_catalog(folder / "topics.toml", learned=False).get(
            "graphs"
        )
        assert any("not read, hand terms only" in r.getMessage() for r in caplog.records)
    models.write_bytes(b"\xff\xfe[graphs]")  # not UTF-8
    assert load_catalog(folder / "topics.toml").get("graphs") is not None
    # A table that is not a model, and a model of a topic the catalog lacks: warned.
    caplog.clear()
    models.write_text(f'version = 2\n{MODELS}\n[robots]\nthreshold = 3.0\nhand_terms = "x"\n')
    catalog = load_catalog(folder / "topics.toml")
    graphs = catalog.get("graphs")
    assert graphs is not None and graphs.threshold == 6.0  # the good model still applies
    text = " ".join(r.getMessage() for r in caplog.records)
    assert "'version' left out" in text and "['robots']" in text


def test_bad_catalog_lines_and_weights_are_one_line_errors(folder: Path) -> None:
    (folder / "topic_models.toml").unlink()  # no model file: hand terms, own lines apply
    catalog = load_catalog(folder / "topics.toml")
    graphs = catalog.get("graphs")
    assert graphs is not None and graphs.threshold is None
    catalog_text = (folder / "topics.toml").read_text(encoding="utf-8")
    for old, new, message in [
        ("threshold = 8.0", "threshold = -1", r"strict.*positive"),
        ("threshold = 8.0", "threshold = nan", r"strict.*positive"),
        ("threshold = 8.0", "threshold = inf", r"strict.*positive"),
        ("threshold = 4.0", "threshold = nan", r"topics\.toml: threshold must be a positive"),
        ("threshold = 4.0", "threshold = 0", r"topics\.toml: threshold must be a positive"),
        ('"graph" = 1.0', '"graph" = nan', r"'graph' needs a positive weight"),
        ('"graph" = 1.0', '"graph" = inf', r"'graph' needs a positive weight"),
        ('"graph" = 1.0', '"graph" = true', r"'graph' needs a positive weight"),
    ]:
        (folder / "topics.toml").write_text(catalog_text.replace(old, new, 1), encoding="utf-8")
        with pytest.raises(CatalogError, match=message):
            load_catalog(folder / "topics.toml")


def test_a_topic_whose_hand_terms_changed_since_its_model_keeps_its_hand_terms(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The mix and line of a model are fitted to its topic's hand terms: after a hand
    term is edited (and before `bench.train_topics` runs again) the model is stale and
    would apply its line to another score. The bundled catalog with its model file,
    one hand weight of one topic edited: that topic is its hand terms alone (one
    warning naming it), the others keep their models."""
    bundled = load_catalog()
    catalog_text = (ROOT / "config" / "topics.toml").read_text(encoding="utf-8")
    models_text = MODELS_PATH.read_text(encoding="utf-8")
    (tmp_path / "topic_models.toml").write_text(models_text, encoding="utf-8")
    (tmp_path / "topics.toml").write_text(catalog_text, encoding="utf-8")
    assert load_catalog(tmp_path / "topics.toml") == bundled  # as shipped: all models apply
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    hand = load_catalog(learned=False).get("multi-agent-rl")
    assert hand is not None
    first = next(t for t in hand.terms if t.phrase == " marl ")
    assert catalog_text.count('"marl" = 3.0') == 1 and first.weight == 3.0
    edited = catalog_text.replace('"marl" = 3.0', '"marl" = 4.0')
    (tmp_path / "topics.toml").write_text(edited, encoding="utf-8")
    catalog = load_catalog(tmp_path / "topics.toml")
    topic = catalog.get("multi-agent-rl")
    assert topic is not None and topic.threshold is None and not topic.searched
    assert {t.phrase: t.weight for t in topic.terms} == {
        t.phrase: (t.weight + 1 if t.phrase == first.phrase else t.weight) for t in hand.terms
    }
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "'multi-agent-rl'" in warnings[0], warnings
    assert "hand terms changed" in warnings[0] and "bench.train_topics" in warnings[0]
    for other in bundled.topics:  # every other topic as shipped
        if other.id != "multi-agent-rl":
            assert catalog.get(other.id) == other, other.id


def test_features_are_what_the_matcher_scores_for_a_term_of_weight_one() -> None:
    """The trainer learns weights over `features`; they ship as terms, so each feature
    must be exactly the matcher's value of that phrase as a term of weight 1."""
    paper = PaperText(
        title=normalise("Offline RL with graph networks"),
        keywords=normalise("offline rl; graphs"),
        abstract=normalise(
            "Offline reinforcement learning from offline data: the offline agent and "
            "graph networks, graph networks again, in 2021."
        ),
    )
    found = features(paper)
    assert " the " not in found and " 2021 " not in found and " data the " not in found
    assert " offline rl " in found and " graph network " in found
    matcher = Matcher({phrase: (Term(phrase, 1.0),) for phrase in found})
    scores = matcher.scores(paper)
    for phrase, value in found.items():
        assert score(paper, (Term(phrase, 1.0),)) == round(value, 3), phrase
        assert scores[phrase] == round(value, 3), phrase


def _paper(i: int, words: str) -> PaperText:
    return _text(f"Paper {i}", f"We study {words}. Our method {words.split()[0]} works. {i}")


def test_refine_moves_papers_like_the_labelled_ones_up_and_down() -> None:
    """Five papers marked relevant and five marked not: a new paper like the relevant
    ones scores higher than before, one like the others lower (as 👍/👎 do)."""
    topic = Topic("diffusion", "Diffusion", "d", (Term.of("diffusion", 2.0),))
    positives = [
        _paper(i, "diffusion policy for robot manipulation with action chunks") for i in range(5)
    ]
    negatives = [_paper(i, "graph diffusion kernels on citation networks") for i in range(5, 10)]
    refined = refine(topic, positives, negatives)
    assert refined.id == topic.id and refined.terms != topic.terms
    like_positive = _text("Diffusion policy", "A diffusion policy for robot manipulation.")
    like_negative = _text("Graph diffusion", "Graph diffusion kernels on citation networks.")
    assert refined.score(like_positive) > topic.score(like_positive)
    assert refined.score(like_negative) < topic.score(like_negative)
    assert refined.score(like_positive) > refined.score(like_negative)
    assert refine(topic, [], []) is topic
    # A topic on a tenth of the scale (a learned topic with a high line) moves a tenth.
    small = Topic("diffusion", "Diffusion", "d", (Term.of("diffusion", 0.2),))
    moved = {t.phrase: t.weight for t in refine(small, positives, negatives).terms}
    assert moved == pytest.approx({t.phrase: t.weight / 10 for t in refined.terms}, abs=1e-3)
    # One paper's odd word is not the topic: only words two labelled papers share move.
    odd = refine(topic, [*positives[:4], _paper(99, "diffusion quasar spectra")])
    assert " quasar " not in {t.phrase for t in odd.terms}


def test_the_bundled_models_are_catalog_topics_learned_on_the_calibrate_half() -> None:
    models = load_models()
    hand = load_catalog(learned=False)
    assert models and set(models) <= set(hand.ids)
    assert "calibrate half" in MODELS_PATH.read_text(encoding="utf-8")
    catalog = load_catalog()
    for topic_id, model in models.items():
        topic = catalog.get(topic_id)
        assert topic is not None and topic.threshold == model.threshold
        # Learned with today's hand terms (else the catalog ignores it, with a warning).
        hand_topic = hand.get(topic_id)
        assert hand_topic is not None
        assert model.hand_terms == hand_key(hand_topic.terms), (
            f"{topic_id}: config/topics.toml changed: run python3 -m bench.train_topics"
        )
        assert all(term.weight > 0 for term in topic.terms)
        assert len(model.terms) <= 100  # the matcher's cost per (paper, topic) stays small


def test_train_topics_says_so_without_the_corpus(tmp_path: Path) -> None:
    out = tmp_path / "models.toml"
    result = subprocess.run(
        [sys.executable, "-m", "bench.train_topics", "--corpus", str(tmp_path / "none.tsv"),
         "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert "no corpus" in result.stdout and not out.exists()


def _strongest(topic_id: str) -> list[str]:
    """The topic's SEARCH_LEARNED strongest learned terms that are not hand phrases."""
    model = load_models()[topic_id]
    hand = load_catalog(learned=False).get(topic_id)
    assert hand is not None
    hand_phrases = {t.phrase for t in hand.terms}
    learned = sorted(model.terms, key=lambda t: -t.weight)
    found = [t.phrase for t in learned if t.phrase not in hand_phrases][:SEARCH_LEARNED]
    assert len(found) == SEARCH_LEARNED
    return found


def test_free_text_that_follows_a_learned_topic_searches_its_hand_phrases() -> None:
    from digests.topics import custom_topic

    hand_only = load_catalog(learned=False)
    hand = hand_only.get("meta-learning")
    assert hand is not None
    topic = custom_topic("meta-learning for few-shot learning")
    assert topic.based_on == ("meta-learning",)
    learned_only = {t.phrase for t in topic.terms} - {t.phrase for t in hand.terms}
    own = {t.phrase for t in custom_topic("meta-learning for few-shot learning", hand_only).terms}
    weaker = learned_only - own - set(_strongest("meta-learning"))
    assert weaker  # the weaker learned terms: scored, not searched
    assert not weaker & set(topic.search_phrases)
    assert {t.phrase for t in hand.terms} <= set(topic.search_phrases)
    assert set(_strongest("meta-learning")) <= set(topic.search_phrases)
    assert normalise("meta-learning for few-shot learning") in topic.search_phrases
    plain = custom_topic("diffusion policy")  # no catalog topic: all its terms are searched
    assert plain.search_phrases == tuple(t.phrase for t in plain.terms)


def test_the_archive_searches_a_learned_topic_by_its_hand_and_strongest_learned_terms(
    seeded_db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Learned terms include words common enough to match much of a store ("cooperative",
    "execution"): the archive's full-text query asks for the hand-written phrases and the
    SEARCH_LEARNED strongest learned terms only."""
    from digests import digest as digest_module
    from digests.timestamps import stamp

    catalog = load_catalog()
    topic = catalog.get("multi-agent-rl")
    hand = load_catalog(learned=False).get("multi-agent-rl")
    assert topic is not None and hand is not None
    assert len(topic.terms) > len(hand.terms) + SEARCH_LEARNED  # weaker learned ones left
    expressions: list[str] = []
    execute = seeded_db.execute

    def spy(sql: str, parameters: Any = None) -> Any:
        if "papers_fts match" in sql:
            expressions.append(parameters[0])
        return execute(sql, parameters) if parameters is not None else execute(sql)

    monkeypatch.setattr(seeded_db, "execute", spy)
    archive = digest_module._Archive(stamp(NOW), catalog.threshold)
    archive.hits(seeded_db, topic, 0)
    phrases = dict.fromkeys([*(t.phrase for t in hand.terms), *_strongest("multi-agent-rl")])
    assert expressions == [" OR ".join(f'"{p.strip()}"' for p in phrases)]


def test_the_archive_finds_a_paper_its_strongest_learned_term_brings_up(
    folder: Path, fresh_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The archive reads a topic's best full-text matches only: searching the hand
    phrases alone, papers that repeat a hand word (bm25 ranks them first) but stay under
    the line crowd out the topic's best paper, which a strong learned term brings up (at
    100k papers, the hand phrases alone find 0 of computer-vision's 5 best archive papers:
    docs/dev/relevance.md)."""
    import json

    from digests import digest as digest_module
    from digests.ingest import ingest_files
    from digests.timestamps import stamp

    (folder / "topic_models.toml").write_text(
        f"""[graphs]\nthreshold = 4.0\nhand = 1.0\nhand_terms = "{GRAPHS_KEY}"
[graphs.terms]\n"message passing" = 3.0\n""",
        encoding="utf-8",
    )
    catalog = load_catalog(folder / "topics.toml")
    topic = catalog.get("graphs")
    assert topic is not None
    rows = (
        [
            {"id": f"2501.0000{i}", "title": f"Study {i}", "abstract": f"A graph. {i} " * 8}
            for i in range(4)  # graph x 8: 1 + ln 8 = 3.08, under the line 4.0
        ]
        + [
            {"id": f"2501.0001{i}", "title": f"Other {i}", "abstract": f"About soil {i} and rain."}
            for i in range(4)  # "graph" is not in every paper: bm25 ranks its matches
        ]
        + [
            {
                "id": "2501.00009",
                "title": "Message passing",
                "abstract": "Message passing on a graph, and more message passing, with many "
                "other words about the method, its setting and its results in detail.",
            }
        ]
    )
    path = tmp_path / "papers.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    ingest_files(fresh_db, [path], now=NOW)
    monkeypatch.setattr(digest_module, "ARCHIVE_LIMIT", 2)
    monkeypatch.setattr(digest_module, "ARCHIVE_PAGES", 1)
    archive = digest_module._Archive(stamp(NOW), catalog.threshold)
    found, _ = archive.hits(fresh_db, topic, 0)
    best = fresh_db.execute("select id from papers where title = 'Message passing'").fetchone()
    assert [paper_id for paper_id, _, _ in found] == [best[0]]


def test_train_topics_learns_from_the_calibrate_half_only(tmp_path: Path) -> None:
    """The harness reports on the other half: a word only the report half's relevant
    papers use must not be learned (it would be if the trainer saw every paper)."""
    import csv

    from bench.relevance_metrics import half
    from bench.train_topics import train

    rows, seen = [], {"calibrate": 0, "report": 0}
    names = ["alder", "birch", "cedar", "dogwood", "elm", "fir", "gum", "hazel", "ivy"]
    for i in range(400):
        paper_id = f"pid{i:04d}x"
        side = half(paper_id)
        relevant = i % 2 == 0
        seen[side] += relevant
        word = ("quuxon" if side == "calibrate" else "zorblax") if relevant else "plain"
        rows.append(
            {
                "paper_id": paper_id,
                "title": f"On {names[i % 9]} {names[(i // 9) % 9]} number {i}",
                "link": f"https://openreview.net/forum?id={paper_id}",
                "keywords": "federated learning" if relevant else "optimization theory",
                "abstract": f"We study the {word} setting for case {i} with {names[i % 7]} "
                f"and {word} data; our {names[(i // 7) % 9]} results hold.",
            }
        )
    assert min(seen.values()) >= 50
    corpus = tmp_path / "set.tsv"
    with corpus.open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, list(rows[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    models, _ = train(corpus)
    terms = models["federated-learning"]["terms"]
    assert isinstance(terms, dict)
    assert " quuxon " in terms and not any("zorblax" in phrase for phrase in terms)
