"""Papers and topics for the feedback-learning tests."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from db.store import Store
from digests.ingest import ingest_files
from tests.conftest import NOW

TOPIC = "offline-rl"


NEXT_WEEK = NOW + timedelta(days=7)


ROBOTS = [  # offline RL for robot grasping: the channel likes these
    "We study offline reinforcement learning for robot manipulation: a gripper learns "
    f"grasping of tabletop objects from logged robot trajectories, variant {n}."
    for n in range(5)
]


RECOMMENDERS = [  # offline RL for recommender systems: the channel does not
    "We study offline reinforcement learning for recommender systems: a policy learns "
    f"ranking of items from click logs of users, variant {n}."
    for n in range(5)
]


# Next week: without feedback the recommender papers score higher (more offline-RL
# terms), so only a refined topic puts the robot ones first.
NEXT = {
    "robot-a": "Offline reinforcement learning lets a robot gripper learn grasping of tabletop "
    "objects for manipulation.",
    "robot-b": "A robot arm learns manipulation and grasping of tabletop objects with a gripper "
    "by offline reinforcement learning.",
    "recsys-a": "Offline reinforcement learning for recommender systems: conservative Q learning "
    "from click logs of users on offline data, offline RL for ranking items.",
    "recsys-b": "Offline RL from click logs: recommender systems learn ranking of items for users "
    "by offline reinforcement learning on a logged offline dataset.",
    # Like the 👍 papers, but not offline RL: feedback re-ranks a topic's papers, it does
    # not make the topic take others.
    "robot-only": "A robot gripper learns grasping of tabletop objects for manipulation from "
    "robot trajectories with a robot arm.",
}


def ingest(db: Store, tmp_path: Path, papers: dict[str, str], at: datetime) -> dict[str, str]:
    """Store papers titled by their key; {key: paper id}."""
    path = tmp_path / f"papers-{at:%Y%m%d}.jsonl"
    lines = [
        json.dumps({"title": f"Paper {key}", "abstract": text, "authors": [f"Ann {key}"]})
        for key, text in papers.items()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ingest_files(db, [path], now=at)
    return {
        key: str(
            db.execute("select id from papers where title = ?", [f"Paper {key}"]).fetchone()[0]
        )
        for key in papers
    }
