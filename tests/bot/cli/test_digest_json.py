"""`paperboy digest --format json` lists the items in the order the digest shows them.

Every rendered digest (text, Slack, Discord) groups its items under their topics
(`digests.render.view.grouped`), and `/papers why` numbers an item as shown ("#4 of 12");
the JSON listed them in the order they were picked (best score first, across topics), so
its fourth item was not the "#4" people saw.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

TOPICS = ("offline-rl", "rlhf", "llm-reasoning-agents")  # the demo's: their picks interleave


def test_json_items_follow_the_shown_order_and_why_numbers(run, tmp_path: Path, seed_paths) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "j.db")
    run("ingest", *map(str, seed_paths), "--db", db)
    for topic in TOPICS:
        run("chat", "--channel", "local:lab", f"subscribe {topic}", "--db", db)
    preview = json.loads(
        run("digest", "--channel", "local:lab", "--preview", "--format", "json", "--db", db).output
    )
    ids = [item["paper_id"] for item in preview["items"]]
    text = run("digest", "--channel", "local:lab", "--preview", "--db", db).output
    shown = re.findall(r"^\s+id: (p[0-9a-f]+)$", text, flags=re.MULTILINE)
    assert len(ids) >= 6 and ids == shown
    # the picks interleave topics, so the pick order differs from the shown one
    scores = [item["score"] for item in preview["items"]]
    assert scores != sorted(scores, reverse=True)
    # the text the JSON carries for the channel's platform shows the same order
    assert re.findall(r"id: (p[0-9a-f]+)", preview["messages"][0]) == ids
    # grouped: each item's first followed topic never goes back to an earlier one
    homes = [min(TOPICS.index(t) for t in item["topics"]) for item in preview["items"]]
    assert homes == sorted(homes)

    recorded = json.loads(
        run("digest", "--channel", "local:lab", "--format", "json", "--db", db).output
    )
    assert [item["paper_id"] for item in recorded["items"]] == ids
    for number, paper_id in enumerate(ids, start=1):
        why = run("chat", "--channel", "local:lab", f"why {paper_id}", "--db", db).output
        assert f"#{number} of {len(ids)}" in why, (number, why[:300])
