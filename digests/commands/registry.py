"""Which function answers each verb: filled by `@handler_for` and `@personal_handler_for`
where each handler is defined, checked against the grammar by `check`."""

from __future__ import annotations

import logging
from collections.abc import Callable

from digests.commands.context import Context
from digests.commands.grammar import VERBS, Command
from digests.replies import Reply

log = logging.getLogger(__name__)

Handler = Callable[[Command, Context], Reply]
HANDLERS: dict[str, Handler] = {}
# `--me`: the handlers that act on the user's own digest instead of the channel's.
PERSONAL_HANDLERS: dict[str, Handler] = {}


def handler_for(*names: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of these verbs (LookupError if one
    has a handler already)."""
    return _register(HANDLERS, names)


def personal_handler_for(*names: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as the `--me` handler of these verbs."""
    return _register(PERSONAL_HANDLERS, names)


def _register(table: dict[str, Handler], names: tuple[str, ...]) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        taken = [name for name in names if name in table]
        if taken:
            raise LookupError(f"verbs with a handler already: {taken}")
        table.update(dict.fromkeys(names, handler))
        return handler

    return register


def check() -> None:
    """Raise LookupError unless the handlers are for exactly the grammar's verbs, and the
    personal ones for exactly its `--me` verbs."""
    problems = [
        f"{what}: {sorted(got ^ wanted)}"
        for what, got, wanted in (
            ("handlers", set(HANDLERS), {verb.name for verb in VERBS}),
            ("--me handlers", set(PERSONAL_HANDLERS), {v.name for v in VERBS if v.personal}),
        )
        if got != wanted
    ]
    if problems:
        raise LookupError("verbs and handlers differ: " + "; ".join(problems))
