"""db/migrations_pg.py against db/migrations.py: the same migration names in the same
order, and the same schema once both have applied them, on a real PostgreSQL."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlite_utils import Database

from db import migrations_pg
from db.migrations import migrations
from db.store import Store

# SQLite tables with no PostgreSQL counterpart yet: FTS5's, until search has a tsvector.
NOT_YET_TABLES = {
    "papers_fts",
    "papers_fts_config",
    "papers_fts_data",
    "papers_fts_docsize",
    "papers_fts_idx",
}
LEDGERS = {"_sqlite_migrations", migrations_pg.LEDGER}
# pg_constraint's confupdtype and confdeltype, as SQLite's pragma foreign_key_list says them.
ACTIONS = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
TYPES = {
    "text": "text",
    "integer": "bigint",
    "float": "double precision",
    "real": "double precision",
}


def sqlite_names() -> list[str]:
    return [m.name for m in migrations.pending(Database(memory=True))]


def test_postgresql_has_sqlites_migrations_by_name_in_order() -> None:
    ported = migrations_pg.names()
    assert ported, "no PostgreSQL migration"
    assert ported == sqlite_names()[: len(ported)]
    print("not ported to PostgreSQL yet:", ", ".join(sqlite_names()[len(ported) :]))


def test_migrations_apply_once_and_record_their_names(postgres_store: Store) -> None:
    assert migrations_pg.pending(postgres_store) == []
    assert migrations_pg.apply(postgres_store) == []
    rows = postgres_store.query(f"select name from {migrations_pg.LEDGER} order by id")
    assert [row["name"] for row in rows] == migrations_pg.names()


def test_a_failing_migration_leaves_nothing_and_stays_pending(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def m999_broken(db: Store) -> None:
        db.execute("create table half_done (id text)")
        db.execute("select no_such_column from papers")

    monkeypatch.setattr(
        migrations_pg, "MIGRATIONS", [*migrations_pg.MIGRATIONS, ("m999_broken", m999_broken)]
    )
    with pytest.raises(Exception, match="no_such_column"):
        migrations_pg.apply(postgres_store)
    assert postgres_store.query("select to_regclass('half_done') as t") == [{"t": None}]
    assert migrations_pg.pending(postgres_store) == ["m999_broken"]


def test_both_schemas_agree_on_the_tables_both_have(postgres_store: Store) -> None:
    ported = migrations_pg.names()
    rest = sqlite_names()[len(ported) :]
    lite = Database(memory=True)
    migrations.apply(lite, stop_before=rest[0] if rest else None)
    lite_tables = {t for t in lite.table_names() if t not in LEDGERS}
    pg_tables = {
        row["table_name"]
        for row in postgres_store.query(
            "select table_name from information_schema.tables where table_schema = 'public'"
        )
    } - LEDGERS
    assert pg_tables <= lite_tables, pg_tables - lite_tables
    assert lite_tables - pg_tables == NOT_YET_TABLES
    print("not in PostgreSQL yet:", ", ".join(sorted(NOT_YET_TABLES)))
    for table in sorted(pg_tables):
        assert _sqlite_schema(lite, table) == _postgresql_schema(postgres_store, table), table


def _sqlite_schema(db: Database, table: str) -> dict[str, Any]:
    columns = list(db.execute(f'pragma table_info("{table}")'))
    pk = [name for _, name, _, _, _, key in sorted(columns, key=lambda c: c[5]) if key]
    indexes = set()
    for _, name, unique, origin, partial in db.execute(f'pragma index_list("{table}")'):
        if origin == "pk":
            continue
        keys = tuple(row[2] for row in db.execute(f'pragma index_info("{name}")'))
        indexes.add((name if origin == "c" else None, keys, bool(unique), bool(partial)))
    return {
        "columns": [
            (name, TYPES[kind.lower()], bool(notnull or key), default)
            for _, name, kind, notnull, default, key in columns
        ],
        "pk": pk,
        "indexes": indexes,
        "foreign_keys": _sqlite_foreign_keys(db, table),
    }


def _sqlite_foreign_keys(db: Database, table: str) -> set[tuple[Any, ...]]:
    """(columns, referenced table, its columns, on update, on delete) per foreign key."""
    keys: dict[int, list[Any]] = {}
    for key, _, target, column, to, on_update, on_delete, _ in db.execute(
        f'pragma foreign_key_list("{table}")'
    ):
        found = keys.setdefault(key, [target, [], [], on_update, on_delete])
        found[1].append(column)
        found[2].append(to)
    result = set()
    for target, columns, to, on_update, on_delete in keys.values():
        if None in to:  # `references t` without columns: t's primary key
            to = [
                r[1]
                for r in sorted(db.execute(f'pragma table_info("{target}")'), key=lambda r: r[5])
                if r[5]
            ]
        result.add((tuple(columns), target, tuple(to), on_update, on_delete))
    return result


def _postgresql_schema(store: Store, table: str) -> dict[str, Any]:
    columns = store.query(
        "select column_name, data_type, is_nullable, column_default from "
        "information_schema.columns where table_schema = 'public' and table_name = ? "
        "order by ordinal_position",
        [table],
    )
    found = store.query(
        "select i.relname as name, x.indisunique as uniq, x.indisprimary as pk, "
        "x.indpred is not null as partial, "
        "exists (select 1 from pg_constraint c where c.conindid = x.indexrelid) as constraint_, "
        "array(select a.attname from unnest(x.indkey) with ordinality k (n, o) "
        "join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.n order by k.o) "
        "as keys from pg_index x join pg_class i on i.oid = x.indexrelid "
        "join pg_class t on t.oid = x.indrelid "
        "where t.relname = ? and t.relnamespace = 'public'::regnamespace",
        [table],
    )
    (primary,) = [index for index in found if index["pk"]]
    return {
        "columns": [
            (
                c["column_name"],
                c["data_type"],
                c["is_nullable"] == "NO",
                None
                if c["column_default"] is None
                else re.sub(r"::[\w ]+$", "", c["column_default"]),
            )
            for c in columns
        ],
        "pk": list(primary["keys"]),
        "indexes": {
            (
                None if index["constraint_"] else index["name"],
                tuple(index["keys"]),
                index["uniq"],
                index["partial"],
            )
            for index in found
            if not index["pk"]
        },
        "foreign_keys": {
            (tuple(k["columns"]), k["target"], tuple(k["to"]), ACTIONS[k["upd"]], ACTIONS[k["del"]])
            for k in store.query(
                "select f.relname as target, c.confupdtype as upd, c.confdeltype as del, "
                "array(select a.attname from unnest(c.conkey) with ordinality k (n, o) join "
                "pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.n order by k.o) "
                "as columns, "
                "array(select a.attname from unnest(c.confkey) with ordinality k (n, o) join "
                "pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.n order by k.o) "
                "as to from pg_constraint c join pg_class t on t.oid = c.conrelid "
                "join pg_class f on f.oid = c.confrelid where c.contype = 'f' "
                "and t.relname = ? and t.relnamespace = 'public'::regnamespace",
                [table],
            )
        },
    }


def test_two_processes_migrating_at_once_apply_each_migration_once(
    postgres_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    ((name, first),) = migrations_pg.MIGRATIONS[:1]

    def slow(db: Store) -> None:  # the other one starts while this one runs
        db.query("select pg_sleep(0.3)")
        first(db)

    monkeypatch.setattr(migrations_pg, "MIGRATIONS", [(name, slow), *migrations_pg.MIGRATIONS[1:]])
    postgres_server.admin.execute("create database migrating_at_once")
    stores = [Store.connect(postgres_server.url("migrating_at_once")) for _ in range(2)]
    try:
        with ThreadPoolExecutor(2) as pool:
            applied = list(pool.map(migrations_pg.apply, stores))
        assert sorted(applied) == [[], migrations_pg.names()]
        rows = stores[0].query(f"select name from {migrations_pg.LEDGER}")
        assert sorted(row["name"] for row in rows) == sorted(migrations_pg.names())
    finally:
        for store in stores:
            store.close()
        postgres_server.drop("migrating_at_once")
