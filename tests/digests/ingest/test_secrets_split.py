"""Secrets split across lines or by markup are refused as whole ones are, through the
real ingest of a CSV file and a seed file; ordinary abstracts still ingest."""

from __future__ import annotations

from pathlib import Path

import pytest

from db import open_db
from db.store import Store
from digests.ingest import IngestError, ingest_files
from digests.ingest.pipeline import read_records
from digests.ingest.secrets import secret_kind
from digests.text import plain_text
from tests.conftest import NOW, SAMPLES

ABSTRACT = "We propose GraspAll, a method for grasping anything with one robot hand."
BOT_BODY = "1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SIGNING = "8f14e45fceea167a5a36dedd4bea2543"
TOKEN_MESSAGE = "looks like it holds a Slack token; refusing the file"
SIGNING_MESSAGE = "looks like it holds a signing or client secret; refusing the file"

# Slack tokens wrapped after a hyphen: the line break is kept in a quoted CSV field and
# becomes a space in a seed paragraph.
WRAPPED_TOKENS = [
    f"xoxb-\n{BOT_BODY}",
    f"xoxb-  \n   {BOT_BODY}",  # spaces around the break
    f"xoxb-\r\n{BOT_BODY}",
    "xapp-1-\nA0123456789-0123456789-abcdef0123",  # the break after the second hyphen
    "xoxe.xoxp-1-\nMy0xLTEyMzQ1Njc4OTAtYWJj",
    "xoxb-\n1234567-\n890-AbCdEfGhIjKl",  # two breaks
    f"xo**xb**-\n{BOT_BODY}",  # markup and a break
]
# The 32-hex signing secret with rendering markup inside it.
SPLIT_SIGNING = [
    f"{SIGNING[:8]}**{SIGNING[8:]}**",
    f"{SIGNING[:8]}*{SIGNING[8:]}*",
    f"{SIGNING[:8]}_{SIGNING[8:]}_",
    f"{SIGNING[:8]}`{SIGNING[8:]}`",
    f"{SIGNING[:8]}~~{SIGNING[8:]}~~",
    f"{SIGNING[:8]}**{SIGNING[8:12]}**{SIGNING[12:]}",
    f"**{SIGNING[:4]}**{SIGNING[4:20]}_{SIGNING[20:]}_",
    f"{SIGNING[:16]}\\{SIGNING[16:]}",
]


def refusal(path: Path) -> str:
    db = open_db(":memory:")
    with pytest.raises(IngestError) as caught:
        ingest_files(db, [path], now=NOW)
    assert db.execute("select count(*) from papers").fetchone()[0] == 0
    message = str(caught.value)
    assert "\n" not in message and "xox" not in message and "xapp" not in message
    assert SIGNING[:8] not in message and SIGNING[-8:] not in message
    return message


def csv_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "papers.csv"
    field = f"{ABSTRACT} We log in with {text} daily.".replace('"', '""')
    path.write_text(f'title,abstract\nFine,"{ABSTRACT}"\nT,"{field}"\n', encoding="utf-8")
    return path


def seed_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "papers.txt"
    path.write_text(f"ICML 2025\n\n{ABSTRACT}\n\n{ABSTRACT} We log in with {text} daily.\n")
    return path


@pytest.mark.parametrize("token", WRAPPED_TOKENS)
def test_a_slack_token_wrapped_in_a_quoted_csv_field_is_refused(tmp_path: Path, token: str) -> None:
    path = csv_file(tmp_path, token)
    assert refusal(path) == f"{path}:3: {TOKEN_MESSAGE}"


@pytest.mark.parametrize("token", WRAPPED_TOKENS)
def test_a_slack_token_wrapped_in_a_seed_paragraph_is_refused(tmp_path: Path, token: str) -> None:
    path = seed_file(tmp_path, token)
    assert refusal(path) == f"{path}:5: {TOKEN_MESSAGE}"


@pytest.mark.parametrize("secret", SPLIT_SIGNING)
@pytest.mark.parametrize("name", ["signing secret: ", "SLACK signing_secret ", "app secret = "])
def test_a_signing_secret_split_by_markup_is_refused_in_a_seed_file(
    tmp_path: Path, name: str, secret: str
) -> None:
    path = seed_file(tmp_path, name + secret)
    assert refusal(path) == f"{path}:5: {SIGNING_MESSAGE}"


@pytest.mark.parametrize("secret", SPLIT_SIGNING)
def test_a_signing_secret_split_by_markup_is_refused_in_a_csv_file(
    tmp_path: Path, secret: str
) -> None:
    path = csv_file(tmp_path, f"signing secret: {secret}")
    assert refusal(path) == f"{path}:3: {SIGNING_MESSAGE}"


def test_the_name_split_by_markup_still_names_a_signing_secret(tmp_path: Path) -> None:
    path = seed_file(tmp_path, f"signing sec*ret*: {SIGNING[:8]}**{SIGNING[8:]}**")
    assert refusal(path) == f"{path}:5: {SIGNING_MESSAGE}"


# Prose near the new forms: "xoxb-" with words after it, hex with markup but no name.
NEAR_MISSES = [
    "Slack bot tokens start with xoxb- followed by digits; user tokens with xoxp- instead.",
    "Leaked prefixes (xoxb-, xoxp-, xapp-) are easy to scan for in public repositories.",
    "The xoxb-\nprefix marks a bot token, which our scanner flags in 97% of cases.",
    f"Commit {SIGNING[:8]}**{SIGNING[8:]}** of our repository has the code.",
    "The signing secret is kept *encrypted*; the client secret `never` leaves the server.",
    "A shared secret of **128 bits** suffices; the app secret_key rotates every 24 hours.",
    "We learn the secret $s_1 s_2 \\ldots s_{128}$ from 10^6 queries to the oracle.",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_ordinary_text_near_the_split_forms_is_kept(
    fresh_db: Store, tmp_path: Path, text: str
) -> None:
    for path in (csv_file(tmp_path, text), seed_file(tmp_path, text)):
        assert ingest_files(fresh_db, [path], now=NOW).added == 2
        fresh_db.execute("delete from papers")


def refused_texts(path: Path) -> list[str]:
    """What ingest would refuse in `path`: its lines, every field of every record, and
    the rendered abstract and title."""
    found = [line for line in path.read_text(encoding="utf-8").splitlines() if secret_kind(line)]
    for record in read_records(path):
        fields = (record.abstract, record.title, record.venue, record.url, record.external_id)
        for text in (*fields, *record.authors, *record.keywords):
            if text and secret_kind(text):
                found.append(text)
        for text in (record.abstract, record.title):
            if text and secret_kind(plain_text(text)):
                found.append(text)
    return found


def test_no_bundled_sample_is_refused() -> None:
    for path in sorted(SAMPLES.glob("*.txt")):
        assert refused_texts(path) == [], path


def test_no_iclr_2021_abstract_is_refused(iclr2021: Path) -> None:
    assert refused_texts(iclr2021) == []
