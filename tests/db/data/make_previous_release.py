"""Make previous-release.sql: a store built by an older checkout of Paperboy, with its own
command line and button handler, dumped as SQL text (README.md here says how to run it)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "previous-release.sql"

EXTRA = """\
{"id": "Xy12AbCdEf", "title": "Tidal Offline Reinforcement Learning for Harbour Cranes", \
"abstract": "We propose TidalQ, an offline reinforcement learning method that learns crane \
control policies from logged harbour operations without further interaction. TidalQ \
penalises actions outside the data and improves throughput by 12% over behaviour cloning.", \
"authors": ["Ada Marsh", "Ben Quay"], "keywords": ["offline RL", "robotics"], \
"venue": "ICLR 2026", "year": 2026, "url": "https://openreview.net/forum?id=Xy12AbCdEf"}
{"arxiv_id": "arXiv:2611.01234", "abstract": "Preference optimisation for language models \
usually needs paired comparisons. We introduce SoloPO, which learns from single ratings by \
calibrating them against a reference policy, and matches DPO on three benchmarks with half \
the labels.", "authors": "Cora Vale, Dan Reed", "year": 2026}
"""

COMMANDS = [
    ["ingest", "{old}/digests/samples/icml2025.txt", "{old}/digests/samples/iclr2025.txt"],
    ["ingest", "{work}/extra.jsonl"],
    ["chat", "--channel", "local:lab", "subscribe offline-rl"],
    ["chat", "--channel", "local:lab", 'subscribe "diffusion policies for robot manipulation"'],
    ["chat", "--channel", "local:lab", "subscribe rlhf"],
    ["chat", "--channel", "local:lab", "unsubscribe rlhf"],
    ["chat", "--channel", "local:lab", "schedule monday 09:00 Europe/Berlin"],
    ["chat", "--channel", "local:reading", "subscribe llm-reasoning-agents"],
    ["chat", "--channel", "local:reading", "schedule daily 08:30 UTC"],
    ["chat", "--channel", "local:reading", "backlog on"],
    ["sources", "add", "arxiv:cs.LG", "--no-check"],
    ["digest", "--channel", "local:lab", "--send"],
    ["digest", "--channel", "local:reading", "--send"],
]

# 👍, 👎 and 🔖 on the digests just sent, through the old release's own button handler.
CLICKS = """
import sys
from datetime import UTC, datetime
from db import open_db
from digests.actions import SAVE, VOTE_DOWN, VOTE_UP, apply_action, item_ref
db = open_db(sys.argv[1], create=False)
clicks = {
    "local:lab": [(VOTE_UP, "alice"), (VOTE_DOWN, "bob"), (SAVE, "alice")],
    "local:reading": [(VOTE_UP, "carol"), (SAVE, "carol")],
}
for channel, actions in clicks.items():
    digest = db.execute("select max(id) from digests where channel = ?", [channel]).fetchone()[0]
    papers = [row[0] for row in db.execute(
        "select paper_id from digest_items where digest_id = ? order by rowid", [digest])]
    for n, (action, user) in enumerate(actions):
        result = apply_action(db, channel=channel, user=user, user_key="local:" + user,
            action=action, value=item_ref(digest, papers[n]), now=datetime.now(UTC))
        assert not result.error, result.text
"""


def dump(path: Path) -> str:
    """The database at `path` as SQL text. Python's iterdump also writes rows into the
    virtual tables (FTS5 reads them from its content table), which a load would refuse:
    those statements are left out, the FTS5 index is in its shadow tables."""
    conn = sqlite3.connect(path)
    try:
        virtual = {
            name
            for (name,) in conn.execute(
                "select name from sqlite_master where sql like 'CREATE VIRTUAL TABLE%'"
            )
        }
        skipped = tuple(f'INSERT INTO "{name}" VALUES' for name in virtual)
        return "\n".join(line for line in conn.iterdump() if not line.startswith(skipped)) + "\n"
    finally:
        conn.close()


def main(old: Path) -> None:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "extra.jsonl").write_text(EXTRA, encoding="utf-8")
        store = work / "paperboy.db"
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PAPERBOY_", "SLACK_", "DISCORD_"))
        }
        env.update(PYTHONPATH=str(old), PAPERBOY_DB=str(store), PAPERBOY_LOCAL_DIR=str(work))
        for command in COMMANDS:
            args = [arg.format(old=old, work=work) for arg in command]
            subprocess.run([sys.executable, "-m", "bot", *args], cwd=work, env=env, check=True)
        subprocess.run([sys.executable, "-c", CLICKS, str(store)], cwd=work, env=env, check=True)
        OUT.write_text(dump(store), encoding="utf-8")
    print(f"{OUT}: {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
