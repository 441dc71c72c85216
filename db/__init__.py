"""Storage only: the SQLite database, its migrations and query functions."""

from db.connection import open_db

__all__ = ["open_db"]
