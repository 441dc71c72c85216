"""The tutorial's words on `/papers subscribe` say what its replies say: free text taken
as a catalog topic."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = (ROOT / "docs" / "tutorial" / "getting-started.md").read_text(encoding="utf-8")


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
