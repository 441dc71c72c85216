"""Papers and full-text lookups answer alike on SQLite and PostgreSQL."""

from __future__ import annotations

from db import candidates, papers, search
from db.store import Store

PAPER = {
    "id": "abcdef12",
    "title": "Direct Preference Optimization",
    "abstract": "We align language models.",
    "abstract_text": "We align language models.",
    "names": "DPO",
    "added_at": "2026-01-01T00:00:00Z",
}
OTHER = PAPER | {
    "id": "bbbbbb34",
    "title": "Graph networks",
    "abstract": "Message passing.",
    "abstract_text": "Message passing.",
    "names": "GNN",
}


def test_papers_and_lookups_agree(store: Store) -> None:
    papers.insert_paper(store, PAPER)
    papers.insert_paper(store, OTHER)
    assert set(papers.get_paper(store, "abcdef12") or {}) >= {"id", "title"}
    assert "search_vector" not in (papers.get_paper(store, "abcdef12") or {})
    assert (papers.resolve_paper(store, "ABCDEF") or {})["id"] == "abcdef12"
    assert [row["id"] for row in papers.text_rows(store, ["abcdef12", "x"])] == ["abcdef12"]
    assert search.fts_count(store, '"preference optimization"') == 1
    assert search.fts_count(store, '"optimization preference"') == 0
    assert search.fts_ids(store, '"graph" OR "message"', 10) == ["bbbbbb34"]
    assert len(candidates.ranked_matches(store, '"language" OR "graph"', 10)) == 2
    hits = search._search_fts(store, "preference", 5)
    assert [hit.paper["id"] for hit in hits] == ["abcdef12"]
    assert "rowid" not in hits[0].paper
    assert [h.paper["id"] for h in search.search_papers(store, "graph networks")] == ["bbbbbb34"]
    assert [row["id"] for row in search.papers_with_id_prefix(store, "ABC")] == ["abcdef12"]
