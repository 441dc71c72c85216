"""digests/bibtex.py through a real TeX (pdflatex, bibtex, pdflatex twice): hostile text in
any field neither reads nor writes a file outside the citing paper's folder, nor ends the
paper early, and real titles compiled from the export still read the same.

Needs pdflatex and bibtex: without them these tests skip (one line), but under CI (`CI`
set) they fail, since there they must run."""

from __future__ import annotations

import csv
import functools
import os
import re
import secrets
import shutil
import subprocess
import unicodedata
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from digests.bibtex import Entry, bibtex, entry, latex_text, names_value
from digests.enrich.paper import clean_title
from tests.conftest import ICLR2021
from tests.fakes.bibtex import TEX_PIECES, paper

RUN_TIMEOUT = 60  # seconds for one TeX run; an endless loop in an entry must fail, not hang
# `\pdfcompresslevel=0`: the PDF's objects stay readable, so the test can look into them.
DOCUMENT = (
    "\\pdfcompresslevel=0 \\pdfobjcompresslevel=0\n"
    "\\documentclass{article}\\begin{document}\\nocite{*}\\bibliographystyle{plain}"
    "\\bibliography{refs}\\typeout{END-OF-DOCUMENT-%s}\\end{document}\n"
)
# The files the four runs write, all in the working folder.
WRITTEN = {"doc.aux", "doc.log", "doc.pdf", "doc.fls", "doc.bbl", "doc.blg"}
SECRET = "secret.tex"  # beside the working folder: no entry may read it
# Variables whose values are TeX's own trees: a run may read any file under them.
TREE_VARIABLES = [
    "TEXMF",
    "TEXMFCNF",
    "TEXMFROOT",
    "TEXMFDIST",
    "TEXMFMAIN",
    "TEXMFLOCAL",
    "TEXMFSYSVAR",
    "TEXMFSYSCONFIG",
    "TEXMFDEBIAN",
]


@dataclass(frozen=True)
class Tex:
    """A TeX to run: its environment (home, caches and output in a scratch folder) and
    the trees of its distribution, which a run may read."""

    env: dict[str, str]
    trees: tuple[Path, ...]
    scratch: Path


@pytest.fixture(scope="module")
def tex(tmp_path_factory: pytest.TempPathFactory) -> Tex:
    missing = [name for name in ("pdflatex", "bibtex", "kpsewhich") if not shutil.which(name)]
    if missing:
        reason = f"{', '.join(missing)} not installed (apt-get install texlive-latex-base)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must compile BibTeX with a real TeX: {reason}")
        pytest.skip(reason)
    scratch = tmp_path_factory.mktemp("tex")
    home = scratch / "home"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TEXMFHOME": str(home / "texmf"),
        "TEXMFVAR": str(home / "texmf-var"),
        "TEXMFCONFIG": str(home / "texmf-config"),
        "max_print_line": "100000",  # a path in the log on one line
    }
    trees: list[Path] = []
    for variable in TREE_VARIABLES:
        value = subprocess.run(
            ["kpsewhich", f"-var-value={variable}"], env=env, capture_output=True, text=True
        ).stdout
        for part in re.split(r"[{},:;\s]", value.replace("!!", "")):
            if part.startswith("/") and not Path(part).is_relative_to(scratch):
                trees.append(Path(part))
    assert trees, "kpsewhich names no TeX tree"
    # Its font cache: a bitmap font TeX makes (`\$` in italics needs one) is read from there.
    trees.append(Path(env["TEXMFVAR"]))
    return Tex(env, tuple(dict.fromkeys(trees)), scratch)


@dataclass(frozen=True)
class Folders:
    """A citing paper's working folder, inside a parent that holds only it and a secret."""

    parent: Path
    work: Path
    secret: Path
    nonce: str

    @classmethod
    def make(cls, base: Path) -> Folders:
        nonce = secrets.token_hex(8)
        parent = base / f"paper-{nonce}"
        work = parent / "work"
        work.mkdir(parents=True)
        secret = parent / SECRET
        secret.write_text(f"\\typeout{{SECRET-READ-{nonce}}}SECRET-READ-{nonce}\n")
        return cls(parent, work, secret, nonce)

    def fill(self, attack: str) -> str:
        """`attack` with its placeholders: the secret's path and the parent folder's."""
        return attack.replace("SECRET", str(self.secret)).replace("PARENT", str(self.parent))


@dataclass
class Compiled:
    """What the four runs left: each pdflatex run's log and file record (`-recorder`)."""

    folders: Folders
    logs: list[str]
    records: list[str]
    pdf: bytes
    failure: str | None  # a run that timed out


def compile_bib(tex: Tex, folders: Folders, bib: str, document: str = DOCUMENT) -> Compiled:
    work = folders.work
    (work / "refs.bib").write_text(bib, encoding="utf-8")
    (work / "doc.tex").write_text(document % folders.nonce, encoding="utf-8")
    latex = ["pdflatex", "-interaction=nonstopmode", "-no-shell-escape", "-recorder", "doc"]
    env = tex.env | {"TEXMFOUTPUT": str(work)}
    logs: list[str] = []
    records: list[str] = []
    failure = None
    for command in (latex, ["bibtex", "doc"], latex, latex):
        try:
            subprocess.run(
                command, cwd=work, env=env, stdin=subprocess.DEVNULL,
                capture_output=True, timeout=RUN_TIMEOUT,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            failure = f"{command[0]} ran over {RUN_TIMEOUT} s"
            break
        if command is latex:
            logs.append(_read(work / "doc.log"))
            records.append(_read(work / "doc.fls"))
    pdf = (work / "doc.pdf").read_bytes() if (work / "doc.pdf").is_file() else b""
    return Compiled(folders, logs, records, pdf, failure)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def assert_contained(tex: Tex, compiled: Compiled, label: str) -> None:
    """The citing paper compiled to its last line, read only TeX's own files and its
    folder's, and wrote only its own files into its folder."""
    folders = compiled.folders
    assert compiled.failure is None, (label, compiled.failure)
    assert len(compiled.logs) == 3, label
    for record, log in zip(compiled.records, compiled.logs, strict=True):
        for kind, name in re.findall(r"^(INPUT|OUTPUT) (.+)$", record, flags=re.M):
            path = Path(os.path.normpath(folders.work / name))  # relative names: in PWD
            if kind == "INPUT":
                assert _readable(tex, folders, path), (label, "read", str(path))
            else:
                assert path.parent == folders.work and path.name in WRITTEN, (label, str(path))
        # TeX writes `(path` to the log for each file it opens.
        for name in re.findall(r"\((/[^\s()]+|\./[^\s()]+)", log):
            path = Path(os.path.normpath(folders.work / name))
            assert _readable(tex, folders, path), (label, "opened", str(path))
        assert f"SECRET-READ-{folders.nonce}" not in log, label
        assert "runsystem" not in log, (label, "a \\write18 reached TeX")
    for log in compiled.logs[1:]:  # the runs that read the bibliography
        bibliography = log.find("(./doc.bbl")
        end = log.find(f"END-OF-DOCUMENT-{folders.nonce}")
        assert 0 <= bibliography < end, (label, "the document ended early", log[-1500:])
    assert {path.name for path in folders.work.iterdir()} <= WRITTEN | {"doc.tex", "refs.bib"}
    assert {path.name for path in folders.parent.iterdir()} == {"work", SECRET}, label
    assert b"/S /JavaScript" not in compiled.pdf and b"(PWNED)" not in compiled.pdf, label


def _readable(tex: Tex, folders: Folders, path: Path) -> bool:
    if path.is_relative_to(folders.work):
        return True
    return any(path.is_relative_to(tree) for tree in tex.trees)


def compile_all(
    tex: Tex, jobs: Iterable[tuple[str, Callable[[Folders], str]]]
) -> list[tuple[str, Compiled]]:
    """Compile each (label, bib made for its folders) in a folder of its own, in parallel."""
    listed = list(jobs)

    def one(job: tuple[str, Callable[[Folders], str]]) -> tuple[str, Compiled]:
        label, make = job
        folders = Folders.make(tex.scratch)
        return label, compile_bib(tex, folders, make(folders))

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        return list(pool.map(one, listed))


# --- hostile text, one entry per document -------------------------------------------------

# SECRET is the path of a file beside the working folder, PARENT the folder both are in.
ATTACKS = [
    # reading a file: TeX reads `^^69` as `i` (and `^^)` too) before it reads a name
    r"$\^^69nput{/etc/passwd}$",
    r"\^^69nput{/etc/passwd}",
    r"$\^^69nput{SECRET}$",
    r"\^^)nput{SECRET}",
    r"$\^^)nput{SECRET}$",
    r"$^^5cinput{SECRET}$",
    r"^^5cinput{SECRET}",
    r"$^^^^005cinput{SECRET}$",
    r"$\^^5Cinput{SECRET}$ $^^5C^^5Cinput{SECRET}$",
    r"\input{SECRET}",
    r"\csname input\endcsname{SECRET}",
    r"$\^^63sname \^^69nput\^^65ndcsname{SECRET}$",
    r"$\^^63atcode`\|=0 |input{SECRET}$",
    r"$\^^6dakeatletter\@input{SECRET}$",
    r"$\^^6fpenin15=SECRET \^^72ead15 to\x \x$",
    r"\pdffiledump length 99{SECRET}",
    r"\pdfximage{SECRET}",
    r"$\scantokens{\string\^^69nput{SECRET}}$",
    r"\VerbatimInput{/etc/passwd} \inputminted{tex}{/etc/passwd} \import{/etc/}{passwd}",
    r"\subfile{/etc/passwd} \luadirect{os.exit()} \directlua{os.exit()}",
    # ending the document, or never finishing it
    r"Title \stop",
    r"Title \enddocument",
    r"$\^^73top$ $\^^65nd{document}$",
    r"\end{document} \endinput \@@end",
    r"\typein{x} \loop\iftrue\repeat",
    r"$\^^74ypein{x}$",
    r"$\^^6coop\^^69ftrue\^^72epeat$",
    r"$\^^69ffalse$ never",
    r"$\^^62egin{verbatim}$ never",
    r"$\^^65group\^^65group$ \egroup",
    r"$x^^M$ \^^M $\^^M$",
    # writing a file, running a program
    r"$\^^69mmediate\^^6fpenout15=PARENT/pwned-abs.tex \^^69mmediate\^^77rite15{x}$",
    r"$\^^69mmediate\^^6fpenout15=../pwned-up.tex \^^69mmediate\^^77rite15{x}$",
    r"$\^^69mmediate\^^6fpenout15=pwned-here.tex \^^69mmediate\^^77rite15{x}$",
    r"\immediate\openout15=../pwned.tex \immediate\write15{x}",
    r"$\^^69mmediate\^^77rite18{touch PARENT/pwned-shell}$ \write18{touch ../pwned}",
    r"$\^^62egin{filecontents*}{pwned-fc.tex}x\^^65nd{filecontents*}$",
    # into the PDF itself
    r"\pdfcatalog{/OpenAction << /S /JavaScript /JS (app.alert(1)) >>}",
    r"$\^^70dfinfo{/Author (PWNED)}$",
    # other commands that must print as text
    r"\chardef\x=92 \NewDocumentCommand{\x}{}{} \newenvironment{x}{}{} \ExplSyntaxOn",
    r"\char92 input \verb|x| \url{http://x.org} \@ \(x\) \[y\] \catcode`\@=11",
    r"$\^^64ef\x{y}$ \def\x{y} \let\x\relax",
]


def hostile_paper(attack: str, index: int) -> dict[str, Any]:
    """The attack in every field a paper row has: title, authors, venue (the booktitle),
    page (the url) and doi; the eprint is a real one (an id that is not one gives none)."""
    return paper(
        id=f"p{index:016x}",
        title=attack,
        authors=[attack, "Bob Smith"],
        venue=attack,
        url=f"https://example.org/a%20b/{attack}",
        arxiv_url="https://arxiv.org/abs/2401.00001",
        doi=f"10.1000/{attack}",
    )


def hostile_entry(attack: str, index: int) -> str:
    """`entry()` of the hostile paper, and a note holding the attack too (Paperboy's note
    is a fixed text, written through `latex_text` as any text field is; plain prints it)."""
    made = entry(hostile_paper(attack, index))
    return Entry(made.kind, made.key, (*made.fields, ("note", latex_text(attack)))).text()


def hostile_article(attack: str, index: int) -> str:
    """An @article with the attack in its title, author and journal (Paperboy's journal
    names are fixed texts, written through `latex_text`; plain prints it as it prints a
    booktitle, in italics)."""
    fields = (
        ("title", latex_text(attack)),
        ("author", names_value([attack])),
        ("journal", latex_text(attack)),
        ("year", "2021"),
    )
    return Entry("article", f"article{index}", fields).text()


# The attacks also compiled as an @article: one of each kind a block list lets through.
ARTICLE_ATTACKS = [
    r"$\^^69nput{/etc/passwd}$",
    r"$\^^)nput{SECRET}$",
    r"\pdffiledump length 99{SECRET}",
    r"Title \stop",
    r"$\^^69ffalse$ never",
    r"$\^^69mmediate\^^6fpenout15=pwned-here.tex \^^69mmediate\^^77rite15{x}$",
    r"$\^^69mmediate\^^77rite18{touch PARENT/pwned-shell}$ \write18{touch ../pwned}",
    r"\pdfcatalog{/OpenAction << /S /JavaScript /JS (app.alert(1)) >>}",
]


def hostile_bib(make: Callable[[str, int], str], attack: str, index: int, folders: Folders) -> str:
    return make(folders.fill(attack), index)


def test_hostile_text_in_any_field_stays_text(tex: Tex) -> None:
    assert set(ARTICLE_ATTACKS) <= set(ATTACKS)
    jobs = [
        (f"entry {attack}", functools.partial(hostile_bib, hostile_entry, attack, index))
        for index, attack in enumerate(ATTACKS)
    ] + [
        (f"article {attack}", functools.partial(hostile_bib, hostile_article, attack, index))
        for index, attack in enumerate(ARTICLE_ATTACKS)
    ]
    for label, compiled in compile_all(tex, jobs):
        assert_contained(tex, compiled, label)


def test_the_checks_catch_a_document_that_reads_ends_early_or_writes(tex: Tex) -> None:
    # The same checks fail a document that does input the secret, stop before its end,
    # or write a file of its own: what a block list lets an entry do.
    cases = {
        "read": "\\input{SECRET}",
        "end": "\\stop",
        "write": "\\immediate\\openout15=pwned.tex \\immediate\\write15{x}\\immediate\\closeout15",
    }
    for label, command in cases.items():
        folders = Folders.make(tex.scratch)
        document = DOCUMENT.replace(
            "\\nocite", folders.fill(command).replace("%", "%%") + "\\nocite"
        )
        compiled = compile_bib(tex, folders, bibtex([paper()]), document)
        with pytest.raises(AssertionError):
            assert_contained(tex, compiled, label)


# --- generated text ------------------------------------------------------------------------

tex_fields = st.lists(st.sampled_from(TEX_PIECES), max_size=10).map("".join)


@settings(
    max_examples=12,  # each a compile of about half a second
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(title=tex_fields, author=tex_fields, venue=tex_fields)
def test_generated_fields_stay_text(tex: Tex, title: str, author: str, venue: str) -> None:
    folders = Folders.make(tex.scratch)
    made = paper(title=title, authors=[author, "Bob Smith"], venue=venue)
    compiled = compile_bib(tex, folders, bibtex([made]))
    assert_contained(tex, compiled, repr((title, author, venue)))


# --- real titles read the same -------------------------------------------------------------

# The typeset text, from the tracing of each page shipped out (`\tracingoutput`): a line
# per item, its depth in dots (`|` for a list TeX uses only after a line break); a
# character names its font and shows itself (`\OT1/cmr/m/n/10 A`), a ligature its letters
# (`(ligature fi)`); a `\discretionary`'s lists (`-`, the letters a hyphen replaces) are
# what TeX sets only where it breaks a line there.
READING = (
    "\\pagestyle{empty}"  # no page number inside a title that runs on to the next page
    "\\tracingoutput=1 \\tracingonline=0 \\showboxbreadth=100000 \\showboxdepth=100000 "
)
_ITEM = re.compile(r"^([.|]+)(.*)$", flags=re.M)
_CHAR = re.compile(r"\\(\w+)/\S+ (.+?)(?: \(ligature ([^)]*)\))?$")  # the char may be ^^K raw
_SYMBOL_FONTS = {"OMS", "OMX"}  # \textbackslash, \textbraceleft: symbols, not letters


def typeset_letters(log: str) -> str:
    """The letters and digits a log's traced pages show, lower-cased, in order."""
    letters = []
    discretionary = 0  # the depth of the discretionary whose lists are being skipped
    for prefix, item in _ITEM.findall(log):
        if discretionary and len(prefix) > discretionary:
            continue
        discretionary = len(prefix) if item.startswith("\\discretionary") else 0
        found = _CHAR.match(item)
        if found and found.group(1) not in _SYMBOL_FONTS:
            _, char, ligature = found.groups()
            if ligature or len(char) == 1:  # `^^S`: the acute accent, not an S
                letters.append(ligature or char)
    return fold("".join(letters))


_STROKED = str.maketrans("Łł", "Ll")


def fold(text: str) -> str:
    """ASCII letters and digits of `text`, lower-cased: accents dropped (pdflatex sets `é`
    as an accent over `e`, `ł` as a stroke over `l`), and what pdflatex cannot set (`ε`,
    `ℓ`, CJK) or sets as a glyph of its own (`ß`, `ø`) too."""
    text = text.translate(_STROKED)
    plain = unicodedata.normalize("NFD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", plain.lower())


def visible(title: str) -> str:
    """The letters and digits a reader sees in a title: command names are not read."""
    return fold(re.sub(r"\\[A-Za-z]+", " ", title))


def assert_reads_the_same(tex: Tex, papers: list[dict[str, Any]], label: str) -> None:
    """One document with every paper's entry: it compiles contained, and each title's
    letters and digits are typeset in order and together (none lost; a command written
    as text would add its name's)."""
    folders = Folders.make(tex.scratch)
    document = DOCUMENT.replace("\\begin{document}", READING + "\\begin{document}")
    compiled = compile_bib(tex, folders, bibtex(papers), document)
    assert_contained(tex, compiled, label)
    shown = typeset_letters(compiled.logs[-1])
    lost = [p["title"] for p in papers if visible(str(p["title"])) not in shown]
    assert not lost, (label, len(lost), lost[:5])


def iclr_papers() -> list[dict[str, Any]]:
    with ICLR2021.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    assert len(rows) == 2966
    return [
        paper(id=f"openreview:{row['paper_id']}", title=row["title"], authors=[],
              venue="ICLR 2021", url=row["link"])
        for row in rows
    ]  # fmt: skip


def test_the_iclr_2021_titles_read_the_same(tex: Tex, iclr2021: Path) -> None:
    # The titles as the source gave them (LaTeX: `$\ell_p$`, `&`, an unmatched `{`) and as
    # Paperboy stores them (plain text: `ℓ_p`): 2,966 entries a document, not one each.
    papers = iclr_papers()
    assert_reads_the_same(tex, papers, "ICLR 2021 as given")
    stored = [p | {"title": clean_title(p["title"]) or ""} for p in papers]
    assert_reads_the_same(tex, stored, "ICLR 2021 as stored")


def test_the_bundled_samples_read_the_same(tex: Tex, seeded_db: Any) -> None:
    from db.papers import decode

    papers = [decode(row) for row in seeded_db.query("select * from papers")]
    assert len(papers) == 38
    assert_reads_the_same(tex, papers, "bundled samples")


def test_a_label_cut_from_a_name_stays_text(tex: Tex) -> None:
    # alpha's label is the surname's first three characters and the year: `\iff` cut to
    # `\if` would skip the rest of the bibliography and end the document early.
    folders = Folders.make(tex.scratch)
    made = paper(authors=[r"\iff"], year=2021)
    compiled = compile_bib(tex, folders, bibtex([made]), DOCUMENT.replace("{plain}", "{alpha}"))
    assert_contained(tex, compiled, "alpha label of \\iff")
