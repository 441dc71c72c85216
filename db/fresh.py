"""Undo the creation of a database that a failed command made (`paperboy ingest FILE --db
new.db` creates the database before it reads FILE), so a refused FILE leaves no empty
database behind for a later command to find."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from db.store import Store

log = logging.getLogger(__name__)

_BESIDE = ("-wal", "-shm", "-journal")


class NewDatabase:
    """Call before opening `path` with `create=True`; `discard(db)` after a failure removes
    what did not exist before the open (the file, its folders), but only while it stores
    nothing (another process may have started using the same new path meanwhile)."""

    def __init__(self, target: Path | str) -> None:
        # A PostgreSQL URL: the server's database exists before any command opens it.
        path = self.path = Path(":memory:") if isinstance(target, str) else target
        # lexists: a dangling link is someone's, never removed
        self.fresh = str(path) != ":memory:" and not os.path.lexists(path)
        self.made_folders: list[Path] = []  # nearest first
        if self.fresh:
            folder = path.absolute().parent
            while not folder.exists() and folder != folder.parent:
                self.made_folders.append(folder)
                folder = folder.parent

    def discard(self, db: Store) -> None:
        """Close `db` and remove the file and folders that opening it created, if it was
        new and still holds no rows at all (beyond its migrations). Never raises: it runs
        while a failure is being reported."""
        if not self.fresh:
            return
        try:
            # Migrations and full-text index tables get rows from the schema alone.
            names = db.sqlite.table_names()
            tables = [n for n in names if not n.startswith("_") and "_fts" not in n]
            used = any(db.execute(f'select 1 from "{name}" limit 1').fetchone() for name in tables)
            db.close()
        except Exception as exc:  # the failure being reported matters more
            log.debug("not removing the new database %s: %s", self.path, exc)
            return
        if used:
            return
        for suffix in ("", *_BESIDE):
            with contextlib.suppress(FileNotFoundError):
                Path(f"{self.path}{suffix}").unlink()
        for folder in self.made_folders:
            try:
                folder.rmdir()  # only if empty: never anything else
            except OSError:
                break
