"""`saved_records` and `with_arxiv_id` for bot/cli until it imports `digests.commands.saved`;
then delete this module."""

from digests.commands.saved import saved_records, with_arxiv_id

__all__ = ["saved_records", "with_arxiv_id"]
