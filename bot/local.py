"""The local transport: `local:NAME` channels deliver into `PAPERBOY_LOCAL_DIR/NAME.jsonl`.

One JSON line per message, appended and fsynced before the outbox records it as sent,
so an operator (or a test, or a mail pipe) sees exactly what was delivered.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.delivery import PermanentError, TransientError
from bot.services import utcnow
from digests.channels import ChannelRef
from digests.timestamps import stamp

log = logging.getLogger(__name__)


class LocalPoster:
    platform = "local"

    def __init__(self, folder: Path, clock: Callable[[], datetime] = utcnow) -> None:
        self.folder = folder
        self.clock = clock

    def path_for(self, channel: ChannelRef) -> Path:
        return self.folder / f"{channel.name}.jsonl"

    async def send(
        self, channel: ChannelRef, payload: dict[str, Any], thread_of: str | None
    ) -> str:
        message_id = uuid.uuid4().hex[:16]
        record = {
            "id": message_id,
            "channel": str(channel),
            "sent_at": stamp(self.clock()),
            "thread_of": thread_of,
            **payload,
        }
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with self.path_for(channel).open("a", encoding="utf-8") as file:
                file.write(json.dumps(record, ensure_ascii=False) + "\n")
                file.flush()
                os.fsync(file.fileno())
        except OSError as exc:
            reason = f"cannot write {self.path_for(channel)}: {exc.strerror}"
            if exc.errno in (errno.ENOSPC, errno.EIO, errno.EAGAIN):
                raise TransientError(reason) from None  # a full disk can be emptied
            raise PermanentError(reason) from None
        return message_id
