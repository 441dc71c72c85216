"""The tutorial's words on `/papers subscribe` say what its replies say: free text taken
as a catalog topic, and the default schedule told on the first subscribe."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = (ROOT / "docs" / "tutorial" / "getting-started.md").read_text(encoding="utf-8")


def _dated(line: str) -> str:
    """`line` with its next digest's date, which depends on the day, made a placeholder."""
    return re.sub(r"next on \w{3} \d{1,2} \w{3} \d{4}, ", "next on DATE, ", line.strip())


def test_the_first_subscribe_reply_is_the_one_the_tutorial_shows(run) -> None:  # type: ignore[no-untyped-def]
    told = TUTORIAL.split("The first subscribe says so and how to change it", 1)[1]
    block = told.split("```", 2)[1]
    shown = [_dated(line) for line in block.splitlines() if line.strip()]
    first = run("chat", "--channel", "local:lab", "subscribe offline-rl").output.splitlines()
    assert [_dated(line) for line in first[-2:]] == shown
    later = run("chat", "--channel", "local:lab", "subscribe rlhf").output.splitlines()
    assert [line.strip().split(" ", 1)[0] for line in later[1:]] == ["Digest:"]  # alone
    assert "the default" not in later[-1]
    run("chat", "--channel", "local:set", "schedule friday 16:00")
    chosen = run("chat", "--channel", "local:set", "subscribe offline-rl").output
    assert "the default" not in chosen and "To change it" not in chosen


def test_loosely_named_topics_and_quoted_text_do_what_the_tutorial_says(run) -> None:  # type: ignore[no-untyped-def]
    words = " ".join(TUTORIAL.split())
    paragraph = words.split("So does unquoted text that names one loosely", 1)[1]
    paragraph = paragraph.split("Free text made of", 1)[0]
    loose, typo, quoted = re.findall(r"`(subscribe [^`]+)`", paragraph)
    undo = [
        command.removeprefix("/papers ") for command in re.findall(r"`(/papers [^`]+)`", paragraph)
    ]
    assert undo == ["unsubscribe rlhf", 'subscribe "RL from human feedback"']
    taken = run("chat", "--channel", "local:a", loose).output
    assert "subscribed this channel to RLHF and preference learning (rlhf)." in taken
    assert (
        "I took RL from human feedback as the catalog topic rlhf; to follow the words instead: "
        '/papers unsubscribe rlhf, then /papers subscribe "RL from human feedback".'
    ) in taken
    assert "(rlhf)." in run("chat", "--channel", "local:b", typo).output
    followed = run("chat", "--channel", "local:c", quoted).output
    assert followed.splitlines()[0].endswith('subscribed this channel to "RL from human feedback".')
    for command in undo:  # the way back the reply gives works
        assert run("chat", "--channel", "local:a", command).exit_code == 0
    listed = run("chat", "--channel", "local:a", "list").output
    assert '"RL from human feedback"' in listed and "rlhf" not in listed.split("\n", 1)[1]
