"""db/migrations_pg.py against db/migrations.py on a real PostgreSQL: the same migrations
in the same order, the same schema but for the differences listed here, and the same effect
of triggers, full text and data steps."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlite_utils import Database

from db import migrations_pg
from db.migrations import migrations
from db.store import Store

# What one backend has and the other has not, each for a reason; everything else must agree.
SQLITE_ONLY_TABLES = {
    # FTS5's table and shadow tables: PostgreSQL keeps the text in papers.search_vector.
    "papers_fts",
    "papers_fts_config",
    "papers_fts_data",
    "papers_fts_docsize",
    "papers_fts_idx",
    # SQLite's `autoincrement` counters: an identity column keeps its own.
    "sqlite_sequence",
}
# FTS5's upkeep triggers: a generated column keeps itself current.
SQLITE_ONLY_TRIGGERS = {("papers", "papers_ai"), ("papers", "papers_ad"), ("papers", "papers_au")}
# The tsvector standing for papers_fts, and its GIN index; SQLite's implicit rowid (which
# db/ SQL reads and pragma table_info does not list) as a column, unique as SQLite's.
POSTGRESQL_ONLY_COLUMNS = {  # data_type, is_identity, is_generated
    ("papers", "search_vector"): ("tsvector", "NO", "ALWAYS"),
    ("papers", "rowid"): ("bigint", "YES", "NEVER"),
    ("saved", "rowid"): ("bigint", "YES", "NEVER"),
}
POSTGRESQL_ONLY_INDEXES = {
    ("papers", "papers_search_vector"): "USING gin (search_vector)",
    ("papers", "papers_rowid"): "UNIQUE INDEX papers_rowid ON public.papers USING btree (rowid)",
    ("saved", "saved_rowid"): "UNIQUE INDEX saved_rowid ON public.saved USING btree (rowid)",
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
# SQLite's collations as PostgreSQL's: BINARY compares bytes, as "C" does.
COLLATIONS = {"binary": "C"}
_TRIGGER = re.compile(
    r'create trigger "?(\w+)"? (before|after|instead of) (insert|update|delete)(?: of (.+?))?'
    r' on (?:\w+\.)?"?(\w+)"?(?: (for each row))?',
    re.I | re.S,
)
_INDEX = re.compile(
    r"\bon\s+\"?\w+\"?\s*\((?P<keys>.*?)\)\s*(?:where\s+(?P<where>.*))?$", re.I | re.S
)


def sqlite_names() -> list[str]:
    return [m.name for m in migrations.pending(Database(memory=True))]


def test_postgresql_has_sqlites_migrations_by_name_in_order() -> None:
    missing = sqlite_names()[len(migrations_pg.names()) :]
    assert migrations_pg.names() == sqlite_names(), f"port to db/migrations_pg.py: {missing}"


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


def test_both_schemas_agree_but_for_the_listed_differences(postgres_store: Store) -> None:
    lite = Database(memory=True)
    migrations.apply(lite)
    lite_tables = {t for t in lite.table_names() if t not in LEDGERS}
    pg_tables = {
        row["table_name"]
        for row in postgres_store.query(
            "select table_name from information_schema.tables where table_schema = 'public'"
        )
    } - LEDGERS
    assert pg_tables <= lite_tables, pg_tables - lite_tables
    assert lite_tables - pg_tables == SQLITE_ONLY_TABLES
    lite_triggers = set(
        lite.execute("select tbl_name, name from sqlite_master where type = 'trigger'")
    )
    assert lite_triggers >= SQLITE_ONLY_TRIGGERS, SQLITE_ONLY_TRIGGERS - lite_triggers
    for table in sorted(pg_tables):
        assert _sqlite_schema(lite, table) == _postgresql_schema(postgres_store, table), table


def _normal(sql: str) -> str:
    """An index key or predicate as both backends can say it: lower case, no quotes,
    parentheses or spaces (PostgreSQL writes `(removed_at IS NULL)`)."""
    return re.sub(r'[\s()"]', "", sql.lower())


def _sqlite_schema(db: Database, table: str) -> dict[str, Any]:
    columns = list(db.execute(f'pragma table_info("{table}")'))
    (sql,) = db.execute("select sql from sqlite_master where type = 'table' and name = ?", [table])
    collations = _sqlite_collations(sql[0])
    pk = [name for _, name, _, _, _, key in sorted(columns, key=lambda c: c[5]) if key]
    indexes = set()
    for _, name, unique, origin, partial in db.execute(f'pragma index_list("{table}")'):
        if origin == "pk":
            continue
        keys = [row[2] for row in db.execute(f'pragma index_info("{name}")')]
        where = None
        if origin == "c":
            (made,) = db.execute("select sql from sqlite_master where name = ?", [name])
            found = _INDEX.search(made[0])
            assert found, made[0]
            if None in keys:  # an expression: its text
                keys = [k.strip() for k in found["keys"].split(",")]
            where = _normal(found["where"]) if partial else None
        indexes.add(
            (name if origin == "c" else None, tuple(map(_normal, keys)), bool(unique), where)
        )
    triggers = set()
    for name, made in db.execute(
        "select name, sql from sqlite_master where type = 'trigger' and tbl_name = ?", [table]
    ):
        if (table, name) not in SQLITE_ONLY_TRIGGERS:
            triggers.add(_trigger(made, "for each row"))  # SQLite has only row triggers
    return {
        "columns": [
            (
                name,
                TYPES[kind.lower()],
                bool(notnull or key),
                default,
                collations.get(name, "C") if kind.lower() == "text" else None,
            )
            for _, name, kind, notnull, default, key in columns
        ],
        "pk": pk,
        "indexes": indexes,
        "foreign_keys": _sqlite_foreign_keys(db, table),
        "triggers": triggers,
    }


def _sqlite_collations(sql: str) -> dict[str, str]:
    """The columns of a `create table` statement that name a collation, as PostgreSQL's."""
    body = sql[sql.index("(") + 1 : sql.rindex(")")]
    found = {}
    for definition in re.split(r",(?![^()]*\))", body):
        named = re.search(r"\bcollate\s+\"?(\w+)", definition, re.I)
        if named:
            column = definition.split()[0].strip('"')
            found[column] = COLLATIONS[named[1].lower()]
    return found


def _trigger(sql: str, level: str | None = None) -> tuple[Any, ...]:
    """(name, timing, event, the columns an update must set, level) of a trigger."""
    found = _TRIGGER.match(sql.strip())
    assert found, sql
    name, timing, event, columns, _, row = found.groups()
    watched = frozenset(c.strip().strip('"') for c in columns.split(",")) if columns else None
    return (name, timing.lower(), event.lower(), watched, (level or row or "").lower())


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
    columns = [
        c
        for c in store.query(
            "select column_name, data_type, is_nullable, column_default, collation_name from "
            "information_schema.columns where table_schema = 'public' and table_name = ? "
            "order by ordinal_position",
            [table],
        )
        if (table, c["column_name"]) not in POSTGRESQL_ONLY_COLUMNS
    ]
    found = store.query(
        "select i.relname as name, x.indisunique as uniq, x.indisprimary as pk, "
        "m.amname as method, pg_get_expr(x.indpred, x.indrelid, true) as predicate, "
        "exists (select 1 from pg_constraint c where c.conindid = x.indexrelid) as constraint_, "
        "array(select pg_get_indexdef(x.indexrelid, k.o::int, true) "
        "from unnest(x.indkey) with ordinality k (n, o) order by k.o) as keys "
        "from pg_index x join pg_class i on i.oid = x.indexrelid "
        "join pg_am m on m.oid = i.relam join pg_class t on t.oid = x.indrelid "
        "where t.relname = ? and t.relnamespace = 'public'::regnamespace",
        [table],
    )
    found = [index for index in found if (table, index["name"]) not in POSTGRESQL_ONLY_INDEXES]
    (primary,) = [index for index in found if index["pk"]]
    # SQLite has only b-trees: any other kind here must be listed as PostgreSQL's own.
    assert {index["method"] for index in found} == {"btree"}, table
    triggers = store.query(
        "select pg_get_triggerdef(oid) as sql from pg_trigger "
        "where tgrelid = ?::regclass and not tgisinternal",
        [table],
    )
    return {
        "columns": [
            (
                c["column_name"],
                c["data_type"],
                c["is_nullable"] == "NO",
                None
                if c["column_default"] is None
                else re.sub(r"::[\w ]+$", "", c["column_default"]),
                c["collation_name"],
            )
            for c in columns
        ],
        "pk": [_normal(key) for key in primary["keys"]],
        "indexes": {
            (
                None if index["constraint_"] else index["name"],
                tuple(map(_normal, index["keys"])),
                index["uniq"],
                None if index["predicate"] is None else _normal(index["predicate"]),
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
        "triggers": {_trigger(t["sql"]) for t in triggers},
    }


def test_the_postgresql_only_parts_are_there(postgres_store: Store) -> None:
    """The allow-lists say what exists: a column or index dropped, renamed or changed
    fails here instead of leaving a stale exception."""
    for (table, column), expected in POSTGRESQL_ONLY_COLUMNS.items():
        found = postgres_store.query(
            "select data_type, is_identity, is_generated from information_schema.columns "
            "where table_schema = 'public' and table_name = ? and column_name = ?",
            [table, column],
        )
        assert [tuple(row.values()) for row in found] == [expected], (table, column)
    for (table, index), definition in POSTGRESQL_ONLY_INDEXES.items():
        found = postgres_store.query(
            "select indexdef from pg_indexes where schemaname = 'public' "
            "and tablename = ? and indexname = ?",
            [table, index],
        )
        assert len(found) == 1 and definition in found[0]["indexdef"], (table, index, found)


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
        # They take turns per migration: between them, each applied by one, in order.
        assert sorted(applied[0] + applied[1]) == sorted(migrations_pg.names())
        assert all(done == [n for n in migrations_pg.names() if n in done] for done in applied)
        rows = stores[0].query(f"select name from {migrations_pg.LEDGER}")
        assert sorted(row["name"] for row in rows) == sorted(migrations_pg.names())
    finally:
        for store in stores:
            store.close()
        postgres_server.drop("migrating_at_once")


def _add_paper(store: Store, paper_id: str, **text: str) -> None:
    row = {"id": paper_id, "title": "", "abstract": "", "abstract_text": "", **text}
    names = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    store.execute(
        f"insert into papers ({names}, added_at) values ({marks}, '2026-12-01T00:00:00Z')",
        list(row.values()),
    )


def test_search_changes_logs_the_same_rows_on_both_backends(store: Store) -> None:
    """The triggers log a paper when a statement inserts, deletes or sets one of the
    searchable columns (changed or not), and both ids when its id changes."""
    _add_paper(store, "p1", title="One")
    _add_paper(store, "p2", title="Two")
    store.execute("update papers set url = 'https://example.org' where id = 'p1'")  # not text
    store.execute("update papers set title = title where id = 'p1'")
    store.execute("""update papers set authors = '["Ada"]' where id = 'p2'""")
    store.execute("update papers set id = 'p3' where id = 'p2'")
    upsert = (
        "insert into papers (id, title, abstract, abstract_text, added_at) "
        "values ('p3', 'Three', '', '', '2026-12-02') on conflict (id) do update set "
    )
    store.execute(upsert + "url = excluded.url")  # an update, of no searchable column
    store.execute(upsert + "title = excluded.title")
    store.execute("delete from papers where id = 'p1'")
    rows = store.query("select paper_id from search_changes order by seq")
    assert [row["paper_id"] for row in rows] == ["p1", "p2", "p1", "p2", "p2", "p3", "p3", "p1"]


def test_rowid_numbers_papers_and_saves_in_insertion_order_on_both_backends(
    store: Store,
) -> None:
    for paper_id in ("pb", "pa", "pc"):
        _add_paper(store, paper_id)
    store.execute("delete from papers where id = 'pc'")
    rows = store.query("select id from papers order by rowid desc")
    assert [row["id"] for row in rows] == ["pa", "pb"]
    newest = store.query(
        "select id from papers where rowid > (select coalesce(max(rowid), 0) from papers) - 1"
    )
    assert newest == [{"id": "pa"}]
    for paper_id in ("pb", "pa"):
        store.execute(
            "insert into saved (\"user\", paper_id, saved_at) values ('U1', ?, '2026-12-01')",
            [paper_id],
        )
    rows = store.query("select paper_id from saved s order by s.saved_at desc, s.rowid desc")
    assert [row["paper_id"] for row in rows] == ["pa", "pb"]


# The same column weights as db.search.WEIGHTS, in tsvector labels' order (D, C, B, A).
_FTS5_RANKED = """
    select papers.id from papers_fts join papers on papers.rowid = papers_fts.rowid
    where papers_fts match ? order by bm25(papers_fts, 6.0, 10.0, 3.0, 1.0), papers.id
"""
_POSTGRESQL_RANKED = """
    select id from papers where search_vector @@ plainto_tsquery('english', ?)
    order by ts_rank('{0.1, 0.3, 0.6, 1.0}', search_vector, plainto_tsquery('english', ?)) desc,
    id
"""


def _ranked(store: Store, word: str) -> list[str]:
    if store.dialect == "sqlite":
        return [row["id"] for row in store.query(_FTS5_RANKED, [word])]
    return [row["id"] for row in store.query(_POSTGRESQL_RANKED, [word, word])]


def test_full_text_finds_and_weighs_the_columns_fts5_indexes(store: Store) -> None:
    """papers.search_vector on PostgreSQL indexes what papers_fts does (title, names,
    keywords, abstract_text; not authors), stems English words as FTS5's porter
    tokenizer does, ranks the columns in search.WEIGHTS' order and follows updates."""
    plain = "alpha beta gamma"
    found = "zebras beta gamma"
    columns = ("names", "title", "keywords", "abstract_text")
    for column in reversed(columns):  # stored weakest first: the order is the ranking's
        _add_paper(store, f"in-{column}", **{c: found if c == column else plain for c in columns})
    _add_paper(store, "in-authors", **dict.fromkeys(columns, plain), authors='["Zebra"]')
    assert _ranked(store, "zebra") == [f"in-{column}" for column in columns]
    store.execute("update papers set title = ? where id = 'in-title'", [plain])
    assert "in-title" not in _ranked(store, "zebra")
    assert _ranked(store, "nothing") == []


_RECORDED_SINCE = "2026-06-01T00:00:00Z"
_CHANNELS = ("local:c", "slack:T1/C1", "slack:T1/@U1")


def _seed_subscription_history(store: Store) -> None:
    """Per channel and topic five past cycles (the first two before the managers were
    recorded) and an active row."""
    store.execute(
        "insert into app_state (key, value) values ('home: managers recorded since', ?)",
        [_RECORDED_SINCE],
    )
    for channel in _CHANNELS:
        store.execute(
            "insert into channels (id, platform, created_at) values (?, ?, ?)",
            [channel, channel.split(":")[0], "2026-01-01T00:00:00Z"],
        )
        for topic in ("offline-rl", "custom:diffusion"):
            for cycle in range(5):
                at = f"2026-0{4 + cycle}-01T00:00:00Z"  # April .. August
                store.execute(
                    "insert into subscriptions (channel, topic_id, created_by, created_at, "
                    "removed_by, removed_at) values (?, ?, ?, ?, ?, ?)",
                    [channel, topic, f"@u{cycle}", at, f"@u{cycle}", at],
                )
            store.execute(
                "insert into subscriptions (channel, topic_id, created_by, created_at) "
                "values (?, ?, '@now', '2026-12-01T00:00:00Z')",
                [channel, topic],
            )


def _subscription_history(store: Store) -> list[tuple[str, str, str]]:
    rows = store.query("select channel, topic_id, created_by from subscriptions order by id")
    return [(row["channel"], row["topic_id"], row["created_by"]) for row in rows]


def test_m014_deletes_on_postgresql_what_it_deletes_on_sqlite(
    postgres_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    lite = Database(memory=True)
    migrations.apply(lite, stop_before="m014_subscription_history")
    lite_store = Store(lite.conn)
    _seed_subscription_history(lite_store)
    migrations.apply(lite)
    expected = _subscription_history(lite_store)
    # Each topic keeps its first, latest removed and active rows; Slack's channel also its
    # second, older than the managers' record.
    assert len(expected) == 2 * (3 + 4 + 3), expected

    every = migrations_pg.MIGRATIONS
    before = [name for name, _ in every].index("m014_subscription_history")
    postgres_server.admin.execute("create database subscription_history")
    store = Store.connect(postgres_server.url("subscription_history"))
    try:
        monkeypatch.setattr(migrations_pg, "MIGRATIONS", every[:before])
        migrations_pg.apply(store)
        _seed_subscription_history(store)
        monkeypatch.setattr(migrations_pg, "MIGRATIONS", every)
        assert migrations_pg.apply(store)[0] == "m014_subscription_history"
        assert _subscription_history(store) == expected
    finally:
        store.close()
        postgres_server.drop("subscription_history")
