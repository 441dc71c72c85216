"""Derived titles against the real ones, on ICLR 2021 with the titles hidden.

    .venv/bin/python -m bench.titles [--papers N] [--before PATH]

Derives a title and a TL;DR from each abstract of `../shared/corpora/iclr2021-openreview.tsv`
and compares the title with the paper's real one: ROUGE-L F1 over words, the share of the
real title's content words the derived one contains, and the shares of derived titles of 3
words or fewer and under 3 content words; TL;DRs that point back at something they never
name ("these issues") are counted. A first-noun-phrase baseline is measured beside it.
The corpus is split by a hash of paper_id (`relevance_metrics.half`) into a calibrate half
(rules are tuned on it) and a report half (only measured). `--before PATH` also derives
with the code at PATH (a checkout of an older tree), in a child process, in the same run.
Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.relevance_metrics import half

log = logging.getLogger(__name__)

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora"
CORPUS = CORPUS / "iclr2021-openreview.tsv"
HALVES = ("calibrate", "report")

# Function words: what a title's "content words" leave out.
STOPWORDS = frozenset(
    (  # noqa: SIM905
        "a an the of for and or to in on with by from via as at into over under through "
        "towards toward is are be can do does not no its it this that these their our we "
        "using use based new novel beyond than when what how why which while without vs "
        "between among about against more most less all any each other one two"
    ).split()
)
_WORD = re.compile(r"[a-z0-9]+")

# A TL;DR that names its referent only in a sentence the reader does not see.
DANGLING = re.compile(
    r"\b(?:these|those|this|such|the above|aforementioned)\s+(?:an?\s+)?"
    r"(?:issues?|problems?|challenges?|limitations?|difficult(?:y|ies)|drawbacks?|"
    r"shortcomings?|gaps?|questions?|concerns?|intuitions?|observations?|"
    r"phenomen(?:on|a)|justifications?|obstacles?|weakness(?:es)?|deficienc(?:y|ies)|"
    r"bottlenecks?|hope|goals?|needs?|requirements?)\b",
    re.I,
)


@dataclass(frozen=True)
class Paper:
    paper_id: str
    title: str
    abstract: str


def load(path: Path = CORPUS, limit: int | None = None) -> list[Paper]:
    """The corpus's papers that have a title and an abstract, in file order."""
    csv.field_size_limit(1 << 24)
    papers = []
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            title, abstract = " ".join(row["title"].split()), row["abstract"].strip()
            if title and abstract:
                papers.append(Paper(row["paper_id"], title, abstract))
    return papers[:limit] if limit is not None else papers


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def content_words(text: str) -> list[str]:
    return [word for word in words(text) if word not in STOPWORDS]


def _lcs(first: list[str], second: list[str]) -> int:
    previous = [0] * (len(second) + 1)
    for a in first:
        current = [0]
        for j, b in enumerate(second):
            current.append(previous[j] + 1 if a == b else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def rouge_l(reference: str, candidate: str) -> float:
    """ROUGE-L F1 (beta 1) over lower-cased words."""
    ref, cand = words(reference), words(candidate)
    common = _lcs(ref, cand)
    if not common:
        return 0.0
    precision, recall = common / len(cand), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def content_recall(reference: str, candidate: str) -> float:
    """The share of the reference's distinct content words that the candidate holds."""
    wanted = set(content_words(reference))
    return len(wanted & set(content_words(candidate))) / len(wanted) if wanted else 1.0


# The baseline: the abstract's first noun phrase, read as a base noun phrase with its
# "of" attachments, up to the first verb, clause word or punctuation (no tagger here).
_BREAK_WORDS = frozenset(
    (  # noqa: SIM905
        "is are was were be been being has have had can could may might will would shall "
        "should must do does did that which who whom whose where when while because although "
        "though since if as but than to by via with from into on in at for over under through "
        "often usually typically recently still also has remains remain become becomes "
        "provides provide allows allow enables enable requires require"
    ).split()
)
_BASELINE_LEAD = frozenset("a an the this these our its their in recent".split())  # noqa: SIM905


def first_noun_phrase(abstract: str) -> str:
    from digests.text import plain_text, sentences

    first = next(iter(sentences(plain_text(abstract))), "")
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", first)
    while tokens and tokens[0].lower() in _BASELINE_LEAD:
        tokens.pop(0)
    phrase: list[str] = []
    for token in tokens:
        low = token.lower()
        if not re.match(r"\w", token) or low in _BREAK_WORDS or low.endswith("ly"):
            break
        phrase.append(token)
        if len(phrase) == 10:
            break
    return " ".join(phrase)


Derive = Callable[[list[str]], tuple[list[tuple[str, str]], float]]


def derive_here(abstracts: list[str]) -> tuple[list[tuple[str, str]], float]:
    """(title, TL;DR) of each abstract with this tree's code, and the CPU seconds taken."""
    from digests.enrich.titles import derive

    start = time.process_time()
    out = []
    for abstract in abstracts:
        derived = derive(abstract)
        out.append((derived.title, derived.tldr))
    return out, time.process_time() - start


_CHILD = (
    "import json, sys, time\n"
    "from digests.enrich.titles import derive\n"
    "abstracts = json.load(sys.stdin)\n"
    "start = time.process_time()\n"
    "out = [(d.title, d.tldr) for d in map(derive, abstracts)]\n"
    "json.dump({'rows': out, 'cpu': time.process_time() - start}, sys.stdout)\n"
)


def derive_at(tree: Path) -> Derive:
    """`derive_here` with the code of another checkout, in a child process."""

    def run(abstracts: list[str]) -> tuple[list[tuple[str, str]], float]:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        result = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=json.dumps(abstracts),
            capture_output=True,
            text=True,
            env=env,
            cwd=tree,
            check=True,
        )
        answer = json.loads(result.stdout)
        return [(title, tldr) for title, tldr in answer["rows"]], float(answer["cpu"])

    return run


def score(
    papers: Iterable[Paper], titles: Iterable[str], tldrs: Iterable[str] = ()
) -> dict[str, Any]:
    """The figures for one set of titles (and TL;DRs, if given) against the real titles."""
    pairs = list(zip(papers, titles, strict=True))
    tldr_list = list(tldrs)
    rouge = [rouge_l(paper.title, title) for paper, title in pairs]
    recall = [content_recall(paper.title, title) for paper, title in pairs]
    figures: dict[str, Any] = {
        "papers": len(pairs),
        "rouge_l": round(statistics.fmean(rouge), 4),
        "content_recall": round(statistics.fmean(recall), 4),
        "share_3_words_or_fewer": round(
            sum(len(words(title)) <= 3 for _, title in pairs) / len(pairs), 4
        ),
        "share_under_3_content_words": round(
            sum(len(content_words(title)) < 3 for _, title in pairs) / len(pairs), 4
        ),
        "median_title_words": statistics.median(len(words(title)) for _, title in pairs),
    }
    if tldr_list:
        figures["tldr_dangling"] = sum(bool(DANGLING.search(tldr)) for tldr in tldr_list)
    return figures


def run(papers: list[Paper], variants: dict[str, Derive]) -> dict[str, Any]:
    """Every variant's figures on each half, and the baseline's, as one dict."""
    result: dict[str, Any] = {"bench": "titles", "corpus": CORPUS.name, "halves": {}}
    derived: dict[str, list[tuple[str, str]]] = {}
    for name, derive in variants.items():
        derived[name], cpu = derive([paper.abstract for paper in papers])
        result[f"{name}_cpu_ms_per_paper"] = round(1000 * cpu / max(len(papers), 1), 3)
    baseline = [first_noun_phrase(paper.abstract) for paper in papers]
    for which in HALVES:
        picked = [i for i, paper in enumerate(papers) if half(paper.paper_id) == which]
        if not picked:
            continue
        chosen = [papers[i] for i in picked]
        figures = {"baseline": score(chosen, [baseline[i] for i in picked])}
        for name, rows in derived.items():
            figures[name] = score(
                chosen, [rows[i][0] for i in picked], [rows[i][1] for i in picked]
            )
        result["halves"][which] = figures
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=None, help="the first N papers (all)")
    parser.add_argument("--before", type=Path, help="also derive with the code at this tree")
    parser.add_argument("--show", type=int, default=0, help="print N examples of the report half")
    args = parser.parse_args()
    if not CORPUS.is_file():
        print(f"skipped: {CORPUS} is not here", file=sys.stderr)
        return 0
    papers = load(limit=args.papers)
    variants: dict[str, Derive] = {}
    if args.before:
        variants["before"] = derive_at(args.before.resolve())
    variants["derived"] = derive_here
    result = run(papers, variants)
    for which, figures in result["halves"].items():
        print(f"{which} half:")
        for name, row in figures.items():
            cells = "  ".join(f"{key} {value}" for key, value in row.items())
            print(f"  {name:9} {cells}")
    if args.show:
        rows, _ = derive_here([paper.abstract for paper in papers[: args.show * 2]])
        for paper, (title, tldr) in zip(papers, rows, strict=False):
            if half(paper.paper_id) == "report":
                print(f"- real:    {paper.title}\n  derived: {title}\n  tl;dr:   {tldr}")
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
