"""A paper stored and read back through the Store with the SQL db/papers.py would run, on
SQLite and on a real PostgreSQL alike; and the `user` column trap."""

from __future__ import annotations

import json
from typing import Any

import pytest

from db.store import ReservedName, Store

CQL: dict[str, Any] = {
    "id": "pa1266b0525fadd86",
    "venue": "NeurIPS",
    "year": 2020,
    "title": "Conservative Q-Learning for Offline Reinforcement Learning",
    "method": "CQL",
    "abstract": "Effectively leveraging large, previously collected datasets ... (CQL) ...",
    "abstract_text": "Effectively leveraging large, previously collected datasets ... (CQL) ...",
    "arxiv_url": "https://arxiv.org/abs/2006.04779",
    "code_url": "https://github.com/aviralkumar2907/CQL",
    "authors": json.dumps(["Aviral Kumar", "Aurick Zhou", "George Tucker", "Sergey Levine"]),
    "added_at": "2026-11-30T09:00:00+00:00",
}
DEFAULTS = {"title_derived": 0, "links": "[]", "keywords": "[]"}


def store_paper(db: Store, row: dict[str, Any], aliases: list[str]) -> None:
    """db.papers.insert_paper and add_aliases, written for both backends."""
    columns = ", ".join(f'"{name}"' for name in row)
    marks = ", ".join("?" for _ in row)
    with db.write():
        db.execute(f"insert into papers ({columns}) values ({marks})", list(row.values()))
        db.executemany(
            "insert into paper_aliases (alias, paper_id) values (?, ?) "
            "on conflict (alias) do nothing",
            [(alias, row["id"]) for alias in aliases],
        )


def paper_for(db: Store, ref: str) -> dict[str, Any] | None:
    """The paper whose id or alias is `ref`, as db.papers.get_paper and
    paper_id_for_alias find it."""
    rows = db.query(
        "select p.* from papers p where p.id = :ref union all "
        "select p.* from paper_aliases a join papers p on p.id = a.paper_id "
        "where a.alias = :ref",
        {"ref": ref},
    )
    return rows[0] if rows else None


def test_a_paper_comes_back_by_id_alias_and_arxiv_id(store: Store) -> None:
    store_paper(store, CQL, ["arXiv:2006.04779", "or:WjTtePn4Rf"])
    store_paper(store, {**CQL, "id": "pb2", "title": "Another"}, ["arXiv:2006.04779"])
    stored = {**CQL, **DEFAULTS}
    for ref in (CQL["id"], "arXiv:2006.04779", "or:WjTtePn4Rf"):
        found = paper_for(store, ref)
        assert found is not None, ref
        assert {k: found[k] for k in stored} == stored, ref
        assert found["tldr"] is None and found["updated_at"] is None
        assert type(found["year"]) is int
    assert paper_for(store, "arXiv:9999.99999") is None
    assert store.query(
        "select id from papers where id like ? escape '\\' limit 2", ["pa1266%"]
    ) == [{"id": CQL["id"]}]
    aliases = store.query(
        "select alias from paper_aliases where paper_id = ? and substr(alias, 1, ?) = ? order by alias",
        [CQL["id"], 6, "arXiv:"],
    )
    assert aliases == [{"alias": "arXiv:2006.04779"}]


def test_ingests_number_themselves_from_one(store: Store) -> None:
    insert = "insert into ingests (started_at, files, added) values (?, ?, ?) returning id"
    assert store.query(insert, ["2026-11-30T09:00:00+00:00", '["a.txt"]', 3]) == [{"id": 1}]
    assert store.query(insert, ["2026-11-30T09:01:00+00:00", '["b.txt"]', 0]) == [{"id": 2}]
    assert store.query("select id, added from ingests order by id desc limit 1") == [
        {"id": 2, "added": 0}
    ]


def test_a_user_column_is_found_when_quoted_and_a_bare_user_is_refused(store: Store) -> None:
    store.execute('create table votes ("user" text not null, paper_id text not null, vote integer)')
    store.execute('insert into votes ("user", paper_id, vote) values (?, ?, ?)', ["U1", "p1", 1])
    assert store.query('select "user", vote from votes where "user" = ?', ["U1"]) == [
        {"user": "U1", "vote": 1}
    ]
    assert store.query("select v.user from votes v where v.user = ?", ["U1"]) == [{"user": "U1"}]
    assert store.execute('delete from votes where "user" = :u', {"u": "U1"}).rowcount == 1
    with pytest.raises(ReservedName):
        store.query("select vote from votes where user = ?", ["U1"])


def test_postgresql_reads_a_bare_user_as_the_login_name(postgres_store: Store) -> None:
    # Why the Store refuses it: no error, just the wrong rows.
    postgres_store.execute('create table votes ("user" text, vote integer)')
    postgres_store.execute('insert into votes ("user", vote) values (?, ?)', ["U1", 1])
    conn: Any = postgres_store.conn
    assert conn.execute("select vote from votes where user = %s", ["U1"]).fetchall() == []
    assert conn.execute("select vote from votes where user = %s", ["postgres"]).fetchall() == [(1,)]
