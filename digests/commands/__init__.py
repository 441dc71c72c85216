"""The one `/papers` command grammar, shared by Slack, Discord and the command line."""

from digests.commands.context import Context
from digests.commands.dispatch import handle
from digests.commands.grammar import VERBS, Command, ParseError, parse

__all__ = ["VERBS", "Command", "Context", "ParseError", "handle", "parse"]
