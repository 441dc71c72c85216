"""The schema, as append-only sqlite-utils migrations. Never edit one; add another."""

from __future__ import annotations

import logging

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

log = logging.getLogger(__name__)

migrations = Migrations("paperboy")


@migrations()
def m001_papers(db: Database) -> None:
    db.table("papers").create(
        {
            "id": str,
            "venue": str,
            "year": int,
            "title": str,
            "title_derived": int,
            "method": str,
            "names": str,
            "name_keys": str,
            "tldr": str,
            "abstract": str,
            "abstract_text": str,
            "url": str,
            "code_url": str,
            "arxiv_url": str,
            "openreview_url": str,
            "links": str,
            "keywords": str,
            "authors": str,
            "sources": str,
            "added_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"abstract", "abstract_text", "title", "added_at"},
        defaults={"title_derived": 0, "links": "[]", "keywords": "[]", "authors": "[]"},
    )
    db.table("papers").create_index(["added_at"])
    db.table("paper_aliases").create(
        {"alias": str, "paper_id": str},
        pk="alias",
        foreign_keys=[("paper_id", "papers", "id")],
    )
    db.table("paper_aliases").create_index(["paper_id"])
    db.table("papers").enable_fts(
        ["title", "names", "keywords", "abstract_text"],
        create_triggers=True,
        tokenize="porter unicode61 remove_diacritics 2",
    )
    db.table("ingests").create(
        {
            "id": int,
            "started_at": str,
            "files": str,
            "added": int,
            "merged": int,
            "skipped": int,
        },
        pk="id",
    )
