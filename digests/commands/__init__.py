"""The one `/papers` command grammar, shared by Slack, Discord and the command line."""

from digests.commands.grammar import VERBS, Command, ParseError, parse
from digests.commands.handlers import Context, handle

__all__ = ["VERBS", "Command", "Context", "ParseError", "handle", "parse"]
