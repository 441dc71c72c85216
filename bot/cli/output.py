"""What the command line prints: inert text, JSON, and every failure as one line on stderr
(exit status 2 for what the user can fix, 1 for anything else)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from typing import Any

import click

from db.errors import StorageError, Unavailable
from digests.safe_text import json_safe, strip_unsafe

log = logging.getLogger(__name__)

READ_ONLY = "{path} is read-only for you, and this command needs to change it"
INTERRUPTED = 130  # the shell's status for a command stopped by Ctrl-C (128 + SIGINT)


def echo(text: str = "", *, err: bool = False) -> None:
    """Print one message. All output goes through here, so that no terminal escape,
    control, bidi or zero-width character from a paper or a command reaches the terminal."""
    click.echo(strip_unsafe(text), err=err)


def json_text(document: Any) -> str:
    """JSON for printing: unsafe characters as `\\uXXXX` escapes (the data is unchanged)."""
    return json_safe(json.dumps(document, ensure_ascii=False, indent=2))


class UserError(click.ClickException):
    """A problem the user can fix; shown as one line, exit status 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        echo(f"error: {self.format_message()}", err=True)


class PaperboyGroup(click.Group):
    """Turns every failure into one line on stderr."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:
            # The reader went away (`paperboy find x | head -1`): not a failure to report.
            silence_stdout()
            ctx.exit(1)
        except user_errors() as exc:
            raise UserError(str(exc)) from None
        except Unavailable as exc:
            raise UserError(f"database unavailable, try again ({exc})") from None
        except StorageError as exc:
            log.debug("database error", exc_info=True)
            if "readonly" in str(exc):
                raise UserError(READ_ONLY.format(path="the database")) from None
            raise UserError(f"database problem: {exc}") from None
        except Exception as exc:  # the last line of defence: no stack trace for users
            log.debug("unexpected failure", exc_info=True)
            echo(
                f"error: unexpected failure ({type(exc).__name__}: {exc}). "
                "Run with --log-level debug for details.",
                err=True,
            )
            ctx.exit(1)


def user_errors() -> tuple[type[Exception], ...]:
    """The failures that are the user's to fix (a bad file, setting, topic, channel or
    source). Imported only when a command failed, to keep start-up light."""
    from config.settings import SettingsError
    from digests.channels import ChannelError
    from digests.ingest.errors import IngestError
    from digests.sources.errors import SourceError
    from digests.topics import CatalogError

    return (IngestError, SettingsError, CatalogError, ChannelError, SourceError)


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that Python's own flush at exit raises no second
    BrokenPipeError."""
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no real file descriptor
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
