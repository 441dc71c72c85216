"""`find` by authors' names, exact method names before the compounds that contain them,
and `-word` to leave papers out; the results list their authors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from config.settings import Settings
from db.papers import decode
from db.store import Store
from digests.commands import Context, handle
from digests.ingest import ingest_files
from digests.lookup import FindQuery, find, format_results, parse_find, short_authors
from digests.render.discord import reply_messages as discord_messages
from digests.render.slack import reply_messages as slack_messages
from digests.render.text import reply_text
from digests.topics import load_catalog
from tests.conftest import NOW
from tests.fakes.search_papers import BY_LEVINE, PAPERS, arxiv_ids, search_store

DPO, BETA_DPO, SMAUG = "2305.18290", "2407.08639", "2402.13228"


@pytest.fixture
def store(fresh_db: Store) -> Store:
    return search_store(fresh_db)


def _jsonl(tmp_path: Path, *papers: dict[str, object]) -> Path:
    path = tmp_path / "more.jsonl"
    path.write_text("".join(json.dumps(paper) + "\n" for paper in papers), encoding="utf-8")
    return path


@pytest.mark.parametrize("query", ["levine", "Sergey Levine", "S. Levine", "sergey levine"])
def test_an_author_s_name_finds_the_papers_by_that_author(store: Store, query: str) -> None:
    found = arxiv_ids(find(store, query, 5))
    assert set(found) == BY_LEVINE, query


def test_a_paper_by_the_author_ranks_above_one_that_names_him(
    tmp_path: Path, fresh_db: Store
) -> None:
    mention = {
        "id": "mention",
        "title": "Revisiting expectile regression for value learning",
        "authors": ["Ada Lovelace"],
        "abstract": "Following Levine and colleagues, we revisit expectile regression and show "
        "where it fails for value learning with small datasets.",
    }
    db = search_store(fresh_db, _jsonl(tmp_path, mention))
    for query in ("levine", "Sergey Levine"):
        titles = [result["title"] for result in find(db, query, 10)]
        assert titles[-1] == mention["title"], query
        assert len(titles) == len(BY_LEVINE) + 1


def test_author_words_must_all_be_in_one_paper_s_authors(store: Store) -> None:
    # "Sergey" and "Finn" are both authors, never of one paper: no author match.
    assert find(store, "Sergey Finn", 5) == []


def test_an_exact_acronym_beats_a_compound_that_contains_it(store: Store) -> None:
    # AlphaDPO's names hold "DPO" (AlphaDPO split); the DPO paper introduces DPO itself.
    for query in ("dpo", "DPO"):
        assert arxiv_ids(find(store, query, 5))[0] == "2305.18290", query
    assert arxiv_ids(find(store, "direct preference optimization", 5))[0] == "2305.18290"


def test_a_method_name_beats_a_title_that_contains_it(tmp_path: Path, fresh_db: Store) -> None:
    """IQL's abstract only dubs the method, so no method name is derived for it, while
    IDQL's title puts "Implicit Q-Learning" behind its own method name."""
    iql = {
        "id": "iql-dubbed",
        "title": "Offline RL without off-policy evaluation",
        "authors": ["Ilya Kostrikov"],
        "abstract": "Most offline RL methods query the value of unseen actions. We never do: "
        "we fit an upper expectile of the value distribution instead. We dub our method "
        "implicit Q-learning (IQL).",
    }
    db = fresh_db
    # Without the IQL paper that names its method, so that only "dub" can place it.
    lines = PAPERS.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if json.loads(line)["id"] != "2110.06169"]
    others = tmp_path / "others.jsonl"
    others.write_text("\n".join(kept) + "\n", encoding="utf-8")
    ingest_files(db, [others, _jsonl(tmp_path, iql)], now=NOW)
    for query in ("implicit q-learning", "Implicit Q-Learning", "iql"):
        assert find(db, query, 5)[0]["title"] == iql["title"], query


def test_the_method_name_itself_stays_first(store: Store) -> None:
    assert arxiv_ids(find(store, "implicit q-learning", 5))[:2] == ["2110.06169", "2304.10573"]
    assert arxiv_ids(find(store, "IDQL", 5))[0] == "2304.10573"
    assert arxiv_ids(find(store, "alphadpo", 5))[0] == "2410.10148"


@pytest.mark.parametrize(
    ("query", "parsed"),
    [
        ("offline rl -diffusion", FindQuery("offline rl", ("diffusion",))),
        (
            'offline rl -"diffusion policies" -IQL',
            FindQuery("offline rl", ("diffusion policies", "IQL")),
        ),
        ("offline rl -“diffusion policies”", FindQuery("offline rl", ("diffusion policies",))),
        ("implicit q-learning", FindQuery("implicit q-learning")),
        ("q-learning -in-context", FindQuery("q-learning", ("in-context",))),
        ("offline rl - diffusion", FindQuery("offline rl - diffusion")),
        ("-diffusion", FindQuery("", ("diffusion",))),
        ("rl -?!", FindQuery("rl")),
    ],
)
def test_minus_words_are_cut_from_the_query(query: str, parsed: FindQuery) -> None:
    assert parse_find(query) == parsed


def test_a_minus_word_leaves_out_the_papers_that_mention_it(store: Store) -> None:
    with_it = find(store, "offline rl", 10)
    without = find(store, "offline rl -diffusion", 10)
    assert any("iffusion" in result["abstract"] for result in with_it)
    assert without and all("diffusion" not in str(r).casefold() for r in without)
    assert [r["id"] for r in without] == [
        r["id"] for r in with_it if "diffusion" not in str(r).casefold()
    ][: len(without)]


def test_a_minus_word_leaves_out_an_author_s_papers(store: Store) -> None:
    found = arxiv_ids(find(store, "offline reinforcement learning -levine", 10))
    assert found and not set(found) & BY_LEVINE


def test_a_minus_phrase_leaves_out_only_the_phrase(tmp_path: Path, fresh_db: Store) -> None:
    apart = {
        "id": "apart",
        "title": "Offline RL policies that never need a diffusion model",
        "abstract": "Offline RL policies can match a diffusion model with a plain Gaussian.",
    }
    store = search_store(fresh_db, _jsonl(tmp_path, apart))
    found = find(store, 'offline rl -"diffusion policies"', 10)
    texts = [f"{r['title']} {r['abstract']}".casefold() for r in found]
    assert texts and all("diffusion policies" not in text for text in texts)
    # A paper with both words apart, but not the phrase, stays.
    assert any("diffusion" in text and "policies" in text for text in texts)


def _on_fts5(monkeypatch: pytest.MonkeyPatch) -> None:
    from db import text_index

    def unavailable(db: Store) -> text_index.TextIndex:
        raise text_index.IndexUnavailable("a test")

    monkeypatch.setattr(text_index, "ready", unavailable)


# Each query's results as sets (the two BM25s order ties apart), with the first the same.
SAME_ON_FTS5 = [
    "Sergey Levine",
    "levine",
    "S. Levine",
    "Levine, S.",
    "offline rl -diffusion",
    "offline reinforcement learning -levine",
    "q-learning -kostrikov",
    "dpo",
    "kiela",
]


def test_the_fts5_lookup_leaves_out_the_same_and_finds_authors(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed = {query: arxiv_ids(find(store, query, 10)) for query in SAME_ON_FTS5}
    _on_fts5(monkeypatch)
    for query in SAME_ON_FTS5:
        fts = arxiv_ids(find(store, query, 10))
        assert fts and set(fts) == set(indexed[query]), query
        if query in ("dpo", "kiela"):
            assert fts[0] == indexed[query][0], query
    assert set(arxiv_ids(find(store, "Sergey Levine", 5))) == BY_LEVINE
    assert "2208.06193" not in arxiv_ids(find(store, "offline rl -diffusion", 10))


def _ctx(db: Store, settings: Settings) -> Context:
    return Context(db, "local:lab", "@a", NOW, settings, load_catalog())


def test_the_reply_says_what_was_left_out(store: Store, settings: Settings) -> None:
    reply = handle("find offline rl -diffusion", _ctx(store, settings))
    assert reply.text.startswith("Top 3 for “offline rl” without “diffusion”:")
    reply = handle('find offline rl -"diffusion policies" -kostrikov', _ctx(store, settings))
    assert "for “offline rl” without “diffusion policies” and “kostrikov”:" in reply.text
    reply = handle("find offline rl -diffusion -offline", _ctx(store, settings))
    assert reply.text.startswith("No papers match “offline rl” without “diffusion” and “offline”.")


def test_only_minus_words_get_a_message_and_no_lookup(store: Store, settings: Settings) -> None:
    for query in ("-diffusion", '-"diffusion policies" -rl'):
        reply = handle(f"find {query}", _ctx(store, settings))
        assert reply.papers == ()
        assert reply.text.startswith(f"“{query}” only says what to leave out"), reply.text
        assert "\n" not in reply.text.split("\n")[0]


def test_find_results_list_the_authors_on_every_platform(store: Store, settings: Settings) -> None:
    reply = handle("find direct preference optimization", _ctx(store, settings))
    shown = "Rafael Rafailov, Archit Sharma, Eric Mitchell et al."
    assert reply.papers[0]["authors"][:3] == ["Rafael Rafailov", "Archit Sharma", "Eric Mitchell"]
    assert shown in reply_text(reply)
    assert shown in format_results(list(reply.papers), "")
    assert shown in json.dumps([m.payload() for m in slack_messages(reply)], ensure_ascii=False)
    discord = json.dumps([m.payload() for m in discord_messages(reply)], ensure_ascii=False)
    assert shown in discord


def test_find_by_an_author_names_that_author_on_every_platform(
    store: Store, settings: Settings
) -> None:
    """IDQL's fifth author is Sergey Levine: `find levine` shows him, not only "et al."."""
    reply = handle("find sergey levine", _ctx(store, settings))
    shown = "Philippe Hansen-Estruch, Ilya Kostrikov, Michael Janner, …, Sergey Levine"
    assert shown in reply_text(reply)
    assert shown in json.dumps([m.payload() for m in slack_messages(reply)], ensure_ascii=False)
    discord = json.dumps([m.payload() for m in discord_messages(reply)], ensure_ascii=False)
    assert shown in discord


def test_show_lists_the_authors_on_every_platform(store: Store, settings: Settings) -> None:
    reply = handle("show 2110.06169", _ctx(store, settings))
    assert "Authors: Ilya Kostrikov, Ashvin Nair, Sergey Levine" in reply_text(reply)
    shown = "Ilya Kostrikov, Ashvin Nair, Sergey Levine"
    assert shown in json.dumps([m.payload() for m in slack_messages(reply)], ensure_ascii=False)
    assert shown in json.dumps([m.payload() for m in discord_messages(reply)], ensure_ascii=False)


@pytest.mark.parametrize("fts5", [False, True])
def test_an_acronym_joined_by_a_hyphen_is_not_the_paper_s_own(
    store: Store, monkeypatch: pytest.MonkeyPatch, fts5: bool
) -> None:
    """β-DPO and Smaug "with DPO-Positive" name DPO in their titles, joined to a word: it is
    not their own acronym, and `find dpo` puts the DPO paper first."""
    if fts5:
        _on_fts5(monkeypatch)
    found = arxiv_ids(find(store, "dpo", 10))
    assert found[0] == DPO
    assert BETA_DPO in found and SMAUG in found
    # The compound itself is the paper's own name.
    assert arxiv_ids(find(store, "β-DPO", 3))[0] == BETA_DPO
    assert arxiv_ids(find(store, "dpo-positive", 3))[0] == SMAUG


NAMES = {
    "id": "kai-an",
    "title": "A study of sparse rewards in robotics",
    "authors": ["Kai An", "Long Chen"],
    "abstract": "Sparse rewards in robot manipulation are hard; we study curricula for them.",
}
KAN = {
    "id": "kan",
    "title": "KAN: Kolmogorov-Arnold Networks",
    "authors": ["Ziming Liu"],
    "abstract": "We propose Kolmogorov-Arnold Networks (KANs) as alternatives to MLPs.",
}
APOSTROPHES = {
    "id": "apostrophes",
    "title": "What an LLM's context holds, and Levine's critique",
    "authors": ["Ada Lovelace"],
    "abstract": "A model's window, a user's prompt, a system's state: s is everywhere.",
}
ACCENTS = {
    "id": "accents",
    "title": "Kernel methods revisited for tabular data",
    "authors": ["Klaus-Robert Müller", "Zoë Ng"],
    "abstract": "We revisit kernel machines on tabular benchmarks and find them competitive.",
}


@pytest.fixture
def names(tmp_path: Path, fresh_db: Store) -> Store:
    return search_store(fresh_db, _jsonl(tmp_path, NAMES, KAN, APOSTROPHES, ACCENTS))


def _ids(results: list[dict[str, object]]) -> list[str]:
    """The "id" of each result's record in this file (stored papers get ids of their own),
    else its arXiv id, else its title."""
    records = {str(paper["title"]): str(paper["id"]) for paper in (NAMES, KAN, APOSTROPHES)}
    records[str(ACCENTS["title"])] = str(ACCENTS["id"])
    known = arxiv_ids(results)
    return [
        records.get(str(result["title"])) or known[n] or str(result["title"])
        for n, result in enumerate(results)
    ]


@pytest.mark.parametrize("fts5", [False, True])
def test_an_initial_with_a_surname_is_asked_for_only_by_an_initial(
    names: Store, monkeypatch: pytest.MonkeyPatch, fts5: bool
) -> None:
    if fts5:
        _on_fts5(monkeypatch)
    assert _ids(find(names, "kan", 10)) == ["kan"]  # Kai An is no "kan"
    for query in ("K. An", "An, K."):
        assert _ids(find(names, query, 1)) == ["kai-an"], query
    # Without the dot "K An" may be the acronym KAN written apart, too.
    for query in ("K An", "An K"):
        assert "kai-an" in _ids(find(names, query, 2)), query


@pytest.mark.parametrize("fts5", [False, True])
@pytest.mark.parametrize("query", ["S. Levine", "Levine, S.", "Levine S", "S Levine"])
def test_citation_forms_find_the_author(
    names: Store, monkeypatch: pytest.MonkeyPatch, fts5: bool, query: str
) -> None:
    if fts5:
        _on_fts5(monkeypatch)
    found = arxiv_ids(find(names, query, 4))
    assert set(found) == BY_LEVINE, query


@pytest.mark.parametrize("fts5", [False, True])
def test_a_dotted_initial_is_not_searched_as_a_word(
    names: Store, monkeypatch: pytest.MonkeyPatch, fts5: bool
) -> None:
    # As a word, "s" would find the paper of apostrophes (and "levine's") after his own.
    if fts5:
        _on_fts5(monkeypatch)
    assert "apostrophes" in _ids(find(names, "levine", 10))
    for query in ("S. Levine", "Levine, S."):
        found = _ids(find(names, query, 10))
        assert len(found) == len(BY_LEVINE) + 1, query  # his papers, and the one naming him
        assert found[-1] == "apostrophes", query


@pytest.mark.parametrize("fts5", [False, True])
def test_accents_are_folded_in_authors_names(
    names: Store, monkeypatch: pytest.MonkeyPatch, fts5: bool
) -> None:
    if fts5:
        _on_fts5(monkeypatch)
    for query in ("Müller", "muller", "MULLER", "Klaus-Robert Muller", "K. Müller", "zoe ng"):
        assert _ids(find(names, query, 3)) == ["accents"], query
    assert _ids(find(names, "kernel -muller", 3)) == []
    assert _ids(find(names, "kernel -zoë", 3)) == []


def test_the_fts5_author_scan_reads_only_the_newest_rows(
    names: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from db import search

    _on_fts5(monkeypatch)
    assert _ids(find(names, "Zoë Ng", 3)) == ["accents"]  # the last paper stored
    assert len(find(names, "Kostrikov", 5)) == 2  # earlier rows, in reach
    monkeypatch.setattr(search, "AUTHOR_SCAN_ROWS", 1)
    assert _ids(find(names, "Zoë Ng", 3)) == ["accents"]
    assert find(names, "Kostrikov", 5) == []  # no author scan reaches them, no word has it


def test_no_author_scan_for_a_query_that_is_no_name(
    names: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from db import search

    _on_fts5(monkeypatch)
    scans: list[str] = []
    real = search._like_pattern

    def counted(word: str) -> str:
        scans.append(word)
        return real(word)

    monkeypatch.setattr(search, "_like_pattern", counted)
    find(names, "zz qq", 3)
    assert scans == ["zz"]
    for query in ("zz 42", "one two three four five", "zz2"):
        find(names, query, 3)
    assert scans == ["zz"]


def test_the_own_tier_is_asked_of_the_index(store: Store) -> None:
    # BM25 alone puts AlphaDPO first (its names hold "DPO" as a camel-case part); one hit
    # read leaves the sort in `find` nothing to reorder.
    from db.search import search_papers

    assert [hit.paper["title"] for hit in search_papers(store, "dpo", 1)] == [
        "Direct Preference Optimization: Your Language Model is Secretly a Reward Model"
    ]


def test_the_fts5_lookup_sorts_by_tier(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from db.search import search_papers

    _on_fts5(monkeypatch)
    assert [hit.paper["title"] for hit in search_papers(store, "dpo", 1)] == [
        "Direct Preference Optimization: Your Language Model is Secretly a Reward Model"
    ]


def test_semantic_results_keep_the_tiers(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """With meaning fused in, the tiers still decide: the DPO paper first for `find dpo`,
    whatever order the fused ranking gave."""
    from db.search import Hit
    from digests import semantic

    papers = sorted(
        (decode(row) for row in store.query("select * from papers")),
        key=lambda paper: (paper["title"].startswith("Direct"), str(paper["title"])),
    )  # AlphaDPO first, DPO last

    def fused(db: Store, query: str, limit: int) -> list[Hit]:
        return [Hit(paper, 1.0) for paper in papers[-limit:]]

    monkeypatch.setattr(semantic, "hybrid_hits", fused)
    found = arxiv_ids(find(store, "dpo", 10))
    assert found[0] == DPO and found[-1] != DPO


def _crowded(tmp_path: Path, fresh_db: Store, count: int) -> Store:
    """A store where the `count` best papers for "offline critics" all hold the phrase
    "diffusion policies", then three that do not (synthetic records)."""
    crowd = [
        {
            "id": f"crowd{n}",
            "title": f"Offline critics {n}: offline critics with diffusion policies",
            "abstract": "Offline critics, offline critics, offline critics and diffusion "
            f"policies (synthetic record {n}).",
        }
        for n in range(count)
    ]
    rest = [
        {
            "id": f"rest{n}",
            "title": f"Rest {n}",
            "abstract": f"Offline critics once, and a policy (synthetic record {n}).",
        }
        for n in range(3)
    ]
    return search_store(fresh_db, _jsonl(tmp_path, *crowd, *rest))


@pytest.mark.parametrize(("fts5", "count"), [(False, 12), (True, 60)])
def test_a_minus_phrase_reads_deeper_until_enough_are_left(
    tmp_path: Path, fresh_db: Store, monkeypatch: pytest.MonkeyPatch, fts5: bool, count: int
) -> None:
    # More than the first read (`limit`; FTS5: FTS_DEPTH rows) all hold the phrase.
    db = _crowded(tmp_path, fresh_db, count)
    if fts5:
        _on_fts5(monkeypatch)
    assert _ids(find(db, "offline critics", 3))[0].startswith("Offline critics")
    found = _ids(find(db, 'offline critics -"diffusion policies"', 3))
    assert sorted(found) == ["Rest 0", "Rest 1", "Rest 2"]


@pytest.mark.parametrize(
    ("query", "parsed"),
    [
        ("offline rl —diffusion", FindQuery("offline rl", ("diffusion",))),
        ("offline rl –diffusion −iql －kto", FindQuery("offline rl", ("diffusion", "iql", "kto"))),
        ("offline rl --diffusion", FindQuery("offline rl", ("diffusion",))),
        ("offline rl -'diffusion policies'", FindQuery("offline rl", ("diffusion policies",))),
        ("offline rl -‘diffusion policies’", FindQuery("offline rl", ("diffusion policies",))),
        ("offline rl — diffusion", FindQuery("offline rl — diffusion")),
        ("--", FindQuery("")),
        ('-"', FindQuery("")),
        ("—", FindQuery("—")),  # a dash alone is no minus, as "-" alone
    ],
)
def test_dashes_and_single_quotes_are_minus_words_too(query: str, parsed: FindQuery) -> None:
    assert parse_find(query) == parsed


@pytest.mark.parametrize("query", ["--", '-"', "-'", "-?!", "—diffusion", "-- —x"])
def test_an_empty_remainder_says_what_to_add(store: Store, settings: Settings, query: str) -> None:
    reply = handle(f"find {query}", _ctx(store, settings))
    assert reply.papers == ()
    assert reply.text == (
        f"“{query}” only says what to leave out: add what to find, "
        "as in `/papers find offline rl -diffusion`."
    )


def test_a_query_empty_as_typed_is_no_query_of_minus_words() -> None:
    assert not parse_find("").only_excludes() and not parse_find("  ").only_excludes()
    assert not parse_find("offline -x").only_excludes()
    assert parse_find("--").only_excludes() and parse_find("-x").only_excludes()


def test_more_than_eight_minus_words_are_refused(store: Store, settings: Settings) -> None:
    eight = " ".join(f"-w{n}" for n in range(8))
    assert handle(f"find offline rl {eight}", _ctx(store, settings)).papers
    reply = handle(f"find offline rl {eight} -w8", _ctx(store, settings))
    assert reply.papers == ()
    assert reply.text == (
        "At most 8 words or phrases can be left out (-word) of one find; this one has 9."
    )


def test_each_row_s_fields_are_cut_once_for_all_the_minus_phrases(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from db import search, text_index

    phrases = [f"absent phrase{n}" for n in range(8)]
    query = "offline reinforcement learning"
    assert search.search_papers(store, query, 10, phrases)  # the index built
    calls: list[str] = []
    real = text_index.analyze

    def counted(text: str) -> list[str]:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(text_index, "analyze", counted)
    search.search_papers(store, query, 10, phrases)
    # At most every paper is read; each cuts its title, names, keywords, abstract and
    # each author once (once per phrase: 8 times as many), plus the query's and phrases'.
    papers = [decode(row) for row in store.query("select * from papers")]
    per_row = max(4 + len(paper["authors"]) for paper in papers)
    assert len(calls) <= len(papers) * per_row + 50


def test_the_terminal_shows_the_author_found_past_the_first_three(store: Store) -> None:
    idql = "Philippe Hansen-Estruch, Ilya Kostrikov, Michael Janner, …, Sergey Levine"
    for query in ("levine", "S. Levine", "Sergey Levine -kumar"):
        assert f"    {idql}\n" in format_results(find(store, query, 5), query), query
    # Without the name in the query, the first three as everywhere.
    text = format_results(find(store, "idql", 1), "idql")
    assert "    Philippe Hansen-Estruch, Ilya Kostrikov, Michael Janner et al.\n" in text


def test_an_author_line_names_at_most_three_matched_authors_past_the_first() -> None:
    """A common surname ("wang") matching many authors keeps the line short."""
    names = ["Ann Lee", "Bo Chen", "Cy Wu", "Xi Wang", "Yu Wang", "Zo Wang", "Wu Wang", "Al Fox"]
    assert short_authors(names, "wang") == (
        "Ann Lee, Bo Chen, Cy Wu, …, Xi Wang, Yu Wang, Zo Wang et al."
    )
