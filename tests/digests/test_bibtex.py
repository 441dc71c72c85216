"""digests/bibtex.py: entry types, stable keys, and text that survives a BibTeX parser
(bibtexparser 2.x parses every entry back)."""

from __future__ import annotations

import re
import time
from typing import Any

import bibtexparser
import pytest
from bibtexparser import middlewares
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from digests.bibtex import COMMANDS, SYMBOLS, bibtex, cite_key, entry, latex_text, names_value
from tests.fakes.bibtex import TEX_PIECES, paper
from tests.fakes.hostile_text import MEGABYTE, hostile_texts


def parse(text: str, *extra: Any) -> Any:
    library = bibtexparser.parse_string(text, append_middleware=list(extra))
    assert not library.failed_blocks, [block.error for block in library.failed_blocks]
    return library


def fields_of(library: Any) -> list[dict[str, str]]:
    return [{f.key: f.value for f in item.fields} for item in library.entries]


def bibtex_balanced(text: str) -> bool:
    """Braces balanced as BibTeX itself counts them: a backslash escapes nothing."""
    depth = 0
    for char in text:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def test_a_venue_paper_is_inproceedings_with_its_booktitle() -> None:
    (item,) = fields_of(parse(bibtex([paper()])))
    library = parse(bibtex([paper()]))
    assert library.entries[0].entry_type == "inproceedings"
    assert item["booktitle"] == "Advances in Neural Information Processing Systems ({NeurIPS})"
    assert item["year"] == "2020"
    assert "eprint" not in item


def test_an_arxiv_paper_is_misc_with_its_eprint() -> None:
    preprint = paper(
        venue="arXiv",
        year=2025,
        arxiv_url="https://arxiv.org/abs/2502.01234v2",
        categories=["cs.LG", "cs.AI"],
    )
    library = parse(bibtex([preprint]))
    (item,) = fields_of(library)
    assert library.entries[0].entry_type == "misc"
    assert item["eprint"] == "2502.01234"
    assert item["archivePrefix"] == "arXiv"
    assert item["primaryClass"] == "cs.LG"
    assert "booktitle" not in item


def test_an_arxiv_link_in_url_or_pdf_url_is_its_eprint() -> None:
    for field in ("url", "pdf_url"):
        linked = entry(paper(venue=None, **{field: "https://arxiv.org/pdf/2401.00001v3"}))
        assert (linked.kind, dict(linked.fields)["eprint"]) == ("misc", "2401.00001")
    assert "eprint" not in dict(entry(paper(url="https://example.org/paper")).fields)


def test_a_venue_paper_on_arxiv_keeps_both() -> None:
    both = paper(venue="ICLR 2025 Oral", arxiv_url="https://arxiv.org/abs/2502.01234")
    library = parse(bibtex([both]))
    (item,) = fields_of(library)
    assert library.entries[0].entry_type == "inproceedings"
    assert item["booktitle"] == "International Conference on Learning Representations ({ICLR})"
    assert item["eprint"] == "2502.01234"


def test_journals_workshops_and_unknown_venues() -> None:
    journal = entry(paper(venue="TMLR"))
    assert journal.kind == "article"
    assert ("journal", "Transactions on Machine Learning Research") in journal.fields
    workshop = entry(paper(venue="ICML 2025 Workshop"))
    assert (workshop.kind, dict(workshop.fields)["booktitle"]) == (
        "inproceedings",
        "{ICML} 2025 Workshop",
    )
    nothing = entry(paper(venue=None, year=None))
    assert nothing.kind == "misc"
    assert [name for name, _ in nothing.fields] == ["title", "author"]


def test_a_paper_without_authors_has_no_author_field_and_a_key_from_its_title() -> None:
    seed = paper(id="p12bf38103b60b560", authors=[], venue="ICML", year=2025, title="Benchmarking")
    made = entry(seed)
    assert "author" not in dict(made.fields)
    assert made.key == "benchmarking2025_12bf38"


def test_a_derived_title_is_noted() -> None:
    derived = dict(entry(paper(title_derived=1)).fields)
    assert (
        derived["note"] == "Title derived from the abstract by Paperboy; check the published title"
    )
    assert "note" not in dict(entry(paper(title_derived=0)).fields)


def test_keys_are_stable_and_do_not_depend_on_the_export() -> None:
    one = paper()
    assert cite_key(one) == "kumar2020conservative_380c62"
    others = [paper(id=f"p{i:016x}", title=f"Paper {i}") for i in range(5)]
    alone = parse(bibtex([one])).entries[0].key
    among = {e.key for e in parse(bibtex([*others, one])).entries}
    assert alone in among


def test_same_author_year_and_word_still_get_different_keys_whatever_the_order() -> None:
    twins = [
        paper(id="p1111110000000001", title="Conservative policies"),
        paper(id="p2222220000000002", title="Conservative estimates"),
    ]
    forward = {e.key for e in parse(bibtex(twins)).entries}
    backward = {e.key for e in parse(bibtex(twins[::-1])).entries}
    assert len(forward) == 2
    assert (
        forward
        == backward
        == {
            "kumar2020conservative_111111",
            "kumar2020conservative_222222",
        }
    )


def test_a_full_key_clash_takes_longer_suffixes_from_the_ids() -> None:
    # Same author, year, word and first six hex digits: only the long suffix tells them apart.
    twins = [
        paper(id="p1111110000000001", title="Conservative policies"),
        paper(id="p1111110000000002", title="Conservative estimates"),
    ]
    keys = [e.key for e in parse(bibtex(twins)).entries]
    assert keys == [
        "kumar2020conservative_1111110000000001",
        "kumar2020conservative_1111110000000002",
    ]
    assert [e.key for e in parse(bibtex(twins[::-1])).entries] == keys[::-1]


def test_one_paper_twice_is_one_entry() -> None:
    assert len(parse(bibtex([paper(), paper()])).entries) == 1


TITLES = {
    r"$\alpha$-DPO: Adaptive Reward Margin": r"{$\alpha$}-{DPO}: Adaptive Reward Margin",
    "Q&A at 50% of #1 my_var": r"Q\&A at 50\% of \#1 my\_var",
    "LoRA and GPT-4 in $O(n^2)$ time": r"{LoRA} and {GPT-4} in {$O(n^2)$} time",
    "Müller's naïve Ω-nets: 深度学习": "Müller's naïve Ω-nets: 深度学习",
    "{BERT} keeps its braces": "{BERT} keeps its braces",
    "Costs $5 a month": r"Costs \$5 a month",
}


def test_titles_survive_the_round_trip() -> None:
    papers = [paper(id=f"p{i:016x}", title=title) for i, title in enumerate(TITLES)]
    raw = [item["title"] for item in fields_of(parse(bibtex(papers)))]
    assert raw == list(TITLES.values())
    decoded = parse(bibtex(papers), middlewares.LatexDecodingMiddleware())
    # Decoded (braces and escapes gone), each title is what the paper says, math kept.
    wanted = [title.replace("{BERT}", "BERT") for title in TITLES]
    assert [item["title"] for item in fields_of(decoded)] == wanted


def test_authors_survive_the_round_trip() -> None:
    names = [
        "Jörg Müller",
        "Zoë Çelik-Ñúñez",
        "李 小龙",
        "Smith, Jr., John",
        "Research and Development Team",
        *[f"Author Number{i}" for i in range(60)],
    ]
    library = parse(bibtex([paper(authors=names)]), middlewares.SeparateCoAuthors())
    got = library.entries[0].fields_dict["author"].value
    assert got == [*names[:4], "{Research and Development Team}", *names[5:]]
    assert len(got) == 65


HOSTILE = [
    "Nice title} , author = {Evil},",
    "x @comment{ injected } y",
    "}@misc{evil, title={pwned}}",
    "ends with a backslash \\",
    "escaped \\} and \\{ braces",
    "line one\n@misc{evil,\ntitle = {two}}",
    "{{{ open only",
    "$unclosed math",
]


def test_hostile_titles_stay_inside_their_entry() -> None:
    papers = [paper(id=f"p{i:016x}", title=title) for i, title in enumerate(HOSTILE)]
    text = bibtex(papers)
    library = parse(text)
    assert [e.entry_type for e in library.blocks] == ["inproceedings"] * len(HOSTILE)
    assert [e.key for e in library.entries] == [cite_key(p) for p in papers]
    for item in fields_of(library):
        assert set(item) == {"title", "author", "booktitle", "year"}
        assert item["author"].startswith("Aviral Kumar")
        assert bibtex_balanced(item["title"])
        assert "\n" not in item["title"]
        assert "\\}" not in item["title"] and "\\{" not in item["title"]
    assert all(bibtex_balanced(block) for block in text.split("\n\n"))


def test_latex_text_writes_unmatched_braces_as_words() -> None:
    assert latex_text("a } b {") == r"a \textbraceright{} b \textbraceleft{}"
    assert latex_text("foo\\") == r"foo\textbackslash{}"


text_strategy = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60
)


@settings(max_examples=200, deadline=None)
@given(title=text_strategy, authors=st.lists(text_strategy, max_size=4))
def test_any_text_makes_exactly_one_well_formed_entry(title: str, authors: list[str]) -> None:
    text = bibtex([paper(title=title, authors=authors), paper(id="p0000000000000001")])
    library = parse(text)
    assert len(library.blocks) == 2
    assert [e.key for e in library.entries][1] == cite_key(paper(id="p0000000000000001"))
    first = fields_of(library)[0]
    assert set(first) <= {"title", "author", "booktitle", "year"}
    assert bibtex_balanced(first["title"])


def test_titles_cannot_run_tex_where_the_entry_is_compiled() -> None:
    # A title is text anyone can submit, compiled into the citing paper: commands that read
    # or write files, run programs or redefine things are written as text, and `^^5c` (a
    # backslash to TeX) is broken up in math. Other LaTeX is kept.
    hostile = {
        r"\input{/etc/passwd}": r"\textbackslash{}input{/etc/passwd}",
        r"A \immediate\write18{curl x|sh} Title": (
            r"A \textbackslash{}immediate\textbackslash{}write18{curl x|sh} Title"
        ),
        r"\def\alpha{x} $\alpha$-DPO": r"\textbackslash{}def\alpha{x} {$\alpha$}-{DPO}",
        r"Stop \end{document} here": r"Stop \textbackslash{}end{document} here",
        r"$^^5cinput{/etc/passwd}$": r"{$^{}{}^5cinput{/etc/passwd}$}",
        r"Fast \emph{and} \textbf{Inputs}": r"Fast \emph{and} \textbf{Inputs}",
    }
    papers = [paper(id=f"p{i:016x}", title=title) for i, title in enumerate(hostile)]
    library = parse(bibtex(papers))
    assert [item["title"] for item in fields_of(library)] == list(hostile.values())
    unsafe = re.compile(r"(?<!\\textbackslash\{\})\\(input|write|immediate|def|end)\b|\^\^")
    assert not unsafe.search(bibtex(papers))
    # Author names too: they are compiled the same way.
    (item,) = fields_of(parse(bibtex([paper(authors=[r"Eve \input{x}", "Bob"])])))
    assert item["author"] == r"Eve {\textbackslash{}}input{x} and Bob"


def test_findings_and_submissions_are_not_the_main_conference() -> None:
    # arXiv comments give "ACL 2024 Findings" (digests.sources.records); a file's venue
    # column may say "Submitted to ICLR 2025". Both were cited as the main conference.
    findings = entry(paper(venue="ACL 2024 Findings", year=2024))
    assert findings.kind == "inproceedings"
    assert dict(findings.fields)["booktitle"] == (
        "Findings of the Association for Computational Linguistics: {ACL} 2024"
    )
    emnlp = dict(entry(paper(venue="EMNLP 2023 Findings")).fields)["booktitle"]
    assert emnlp.endswith(": {EMNLP} 2023")
    for venue in ("Submitted to ICLR 2025", "ICLR 2025 Conference Withdrawn Submission",
                  "NeurIPS 2024 (rejected)", "Under review at ICML"):  # fmt: skip
        made = entry(paper(venue=venue))
        assert made.kind == "misc" and "booktitle" not in dict(made.fields), venue
    assert entry(paper(venue="ACL 2024")).kind == "inproceedings"  # the main one is unchanged
    assert "Annual Meeting" in dict(entry(paper(venue="ACL 2024")).fields)["booktitle"]


@pytest.mark.parametrize("title", ["\\\\", "a \\\\", "{\\\\}", "A {B \\\\}", "$x \\\\$"])
def test_a_line_break_before_a_brace_still_closes_the_entry(title: str) -> None:
    # bibtexparser reads `\\}` as a backslash and an escaped brace (hypothesis found a
    # title of two backslashes that left the entry open, swallowing the next one).
    text = bibtex([paper(title=title), paper(id="p0000000000000001")])
    library = parse(text)
    assert len(library.entries) == 2
    assert not library.failed_blocks
    assert "\\\\" in fields_of(library)[0]["title"]  # the break is kept


# --- the allow list ---------------------------------------------------------------------

tex_texts = st.lists(st.sampled_from(TEX_PIECES) | st.text(max_size=3), max_size=12).map("".join)
OUTPUT_COMMAND = re.compile(r"\\([A-Za-z]+|.|$)", flags=re.S)


def tex_commands(value: str) -> list[str]:
    """The command names TeX reads in `value` (`\\\\` included, a lone backslash as '')."""
    return OUTPUT_COMMAND.findall(value)


def assert_allowed(value: str) -> None:
    """What the allow list promises of a written value, read as TeX reads it."""
    for name in tex_commands(value):
        assert name in COMMANDS or name in SYMBOLS, (name, value)  # never `\{`: a word
    assert "^^" not in value, value  # TeX reads `^^` before it reads commands
    bare = OUTPUT_COMMAND.sub("x", value)  # what is left once commands are read
    assert not re.search("[%#&]", bare), value  # a comment, a parameter, an alignment
    in_math = False
    for at in (match.start() for match in re.finditer(r"\$", bare)):
        assert in_math or bare[at + 1 : at + 2] != "$", value  # `$$` opens display maths
        in_math = not in_math
    assert bibtex_balanced(value), value
    assert not value.endswith("\\"), value


@settings(max_examples=500, deadline=None)
@given(text=tex_texts, protect=st.booleans())
def test_every_command_written_is_on_the_allow_list(text: str, protect: bool) -> None:
    assert_allowed(latex_text(text, protect=protect))


@settings(max_examples=200, deadline=None)
@given(title=tex_texts, authors=st.lists(tex_texts, max_size=3), venue=tex_texts)
def test_every_field_of_an_entry_is_written_through_the_allow_list(
    title: str, authors: list[str], venue: str
) -> None:
    made = entry(paper(title=title, authors=authors, venue=venue, url=title, doi=venue))
    for _, value in made.fields:
        assert_allowed(value)


def test_the_allow_list_survives_bibtex_lower_casing() -> None:
    # A style lower-cases a title at brace depth 0, command names too (`\H` to `\h`): a
    # kept command either stays one, or is written where BibTeX keeps its name.
    for name in COMMANDS:
        if name.lower() not in COMMANDS:
            assert latex_text(f"a \\{name}{{x}} b").startswith(f"a {{\\{name}{{x}}}}"), name
    assert latex_text(r"Erd\H{o}s \Re") == r"Erd{\H{o}}s {\Re}"
    assert latex_text(r"Erd\H{o}s", protect=False) == r"Erd\H{o}s"  # names keep their case


EXPLOITS = {
    # TeX turns `^^69` into `i` before it reads a command's name: this is `\input`.
    r"$\^^69nput{/etc/passwd}$": r"{$\backslash{}^{}{}^69nput{/etc/passwd}$}",
    r"\^^69nput{/etc/passwd}": r"\textbackslash{}\^{}\^{}69nput{/etc/passwd}",
    r"\^^)nput x": r"\textbackslash{}\^{}\^{})nput x",  # `^^)` is `i` too
    r"$\^^69mmediate\^^77rite18{sh}$": (
        r"{$\backslash{}^{}{}^69mmediate\backslash{}^{}{}^77rite18{sh}$}"
    ),
    r"$^^^^005cinput$": r"{$^{}{}^{}{}^{}{}^005cinput$}",
    r"a^^Mb": r"a\^{}\^{}Mb",
    r"Title \stop": r"Title \textbackslash{}stop",
    r"Title \enddocument": r"Title \textbackslash{}enddocument",
    r"\VerbatimInput{/etc/passwd}": r"\textbackslash{}{VerbatimInput}{/etc/passwd}",
    r"\inputminted{tex}{/etc/passwd}": r"\textbackslash{}inputminted{tex}{/etc/passwd}",
    r"\import{/etc/}{passwd}": r"\textbackslash{}import{/etc/}{passwd}",
    r"\subfile{/etc/passwd}": r"\textbackslash{}subfile{/etc/passwd}",
    r"\pdffiledump length 99{/etc/passwd}": r"\textbackslash{}pdffiledump length 99{/etc/passwd}",
    r"\luadirect{os.exit()}": r"\textbackslash{}luadirect{os.exit()}",
    r"\scantokens{x}": r"\textbackslash{}scantokens{x}",
    r"\chardef\x=92": r"\textbackslash{}chardef\textbackslash{}x=92",
    r"\NewDocumentCommand": r"\textbackslash{}{NewDocumentCommand}",
    r"\newenvironment{x}": r"\textbackslash{}newenvironment{x}",
    r"\ExplSyntaxOn": r"\textbackslash{}{ExplSyntaxOn}",
    r"\csname input\endcsname": r"\textbackslash{}csname input\textbackslash{}endcsname",
    r"\catcode`\@=11": r"\textbackslash{}catcode`\textbackslash{}@=11",
    r"\char92": r"\textbackslash{}char92",
    r"\@input{x}": r"\textbackslash{}@input{x}",
    r"\verb|\x|": r"\textbackslash{}verb|\textbackslash{}x|",
    r"\url{http://x.org}": r"\textbackslash{}url{http://x.org}",
    r"\( x \) \[ y \]": r"\textbackslash{}( x \textbackslash{}) \textbackslash{}[ y \textbackslash{}]",
    r"$$x$$": r"{${}$}x{${}$}",  # never `$$`, display maths to TeX
}


def test_the_exploits_are_written_as_text() -> None:
    for hostile, written in EXPLOITS.items():
        assert latex_text(hostile) == written, hostile
        assert_allowed(latex_text(hostile, protect=False))


def test_the_exploits_are_written_as_text_in_every_field() -> None:
    for hostile in EXPLOITS:
        made = entry(paper(title=hostile, authors=[hostile, "Bob"], venue=hostile))
        text = made.text()
        assert "^^" not in text and r"\input" not in text and r"\stop" not in text, hostile
        for _, value in made.fields:
            assert_allowed(value)
        assert dict(made.fields)["author"].endswith(" and Bob")


def text_prefix(value: str, count: int) -> str:
    r"""BibTeX's `text.prefix$`: the first `count` characters of `value`, a special
    character (a group at depth 0 that starts `{\`) counted as one and kept whole, the
    braces left open closed."""
    out: list[str] = []
    depth = at = read = 0
    while at < len(value) and read < count:
        char = value[at]
        if char == "{" and depth == 0 and value[at + 1 : at + 2] == "\\":
            end, inner = at + 1, 1
            while end < len(value) and inner:
                inner += {"{": 1, "}": -1}.get(value[end], 0)
                end += 1
            out.append(value[at:end])
            read += 1
            at = end
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth = max(depth - 1, 0)
        else:
            read += 1
        out.append(char)
        at += 1
    return "".join(out) + "}" * depth


def bibtex_words(value: str) -> list[str]:
    """`value` split where BibTeX splits a name into tokens: spaces and `~` at depth 0."""
    words, depth, start = [], 0, 0
    for at, char in enumerate(value):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0 and char in " ~":
            words.append(value[start:at])
            start = at + 1
    return [*words, value[start:]]


def assert_cut_names_allowed(authors: list[str]) -> None:
    # alpha's label is a surname's first three characters (`text.prefix$`), then the year:
    # no cut may make another command (`\iff` as `\if`) or end on a backslash (`ab\%` as
    # `ab\` before the `2` of the year, or the `}` of the label).
    for word in bibtex_words(names_value(authors)):
        for count in range(1, len(word) + 1):
            cut = text_prefix(word, count)
            for name in tex_commands(cut + "21]"):
                assert name in COMMANDS or name in SYMBOLS, (name, cut, authors)


def test_a_name_cut_by_characters_makes_no_other_command() -> None:
    assert text_prefix(r"\iff", 3) == r"\if" and text_prefix(r"{\iff}x", 1) == r"{\iff}"
    assert names_value([r"\iff"]) == r"{\iff}"
    assert names_value([r"Caf\'e M\"uller Stra\ss e \c{c}a"]) == (
        r"Caf{\'e} M{\"u}ller Stra{\ss }e {\c{c}}a"
    )
    assert names_value([r"x \iff and y", "Bob Smith"]) == r"{\relax x \iff and y} and Bob Smith"
    for authors in ([r"\iff"], [r"{{\iff}}"], [r"xy\%"], [r"xy\textbackslash"], [r"{xy\iff}"],
                    [r"x \iff and y"], [r"$\sqrt[3]{x} \iff$"], [r"a\\"], [r"\'\i\iff"]):  # fmt: skip
        assert_cut_names_allowed(authors)


@settings(max_examples=300, deadline=None)
@given(authors=st.lists(tex_texts, max_size=3))
def test_any_name_cut_by_characters_makes_no_other_command(authors: list[str]) -> None:
    assert_cut_names_allowed(authors)


KEPT = [
    r"Caf\'e M\"uller \c{c}a \v{s} \~n \^o \`a \=a \.z \u{a} \r{a} \k{a} Mart\'{\i}n",
    r"Stra\ss e \o \O \l \L \aa \AE \oe \i \j",
    r"$\alpha$ and $\ell_1$, $\log n$, $\sqrt{x}$, $\frac{1}{2}$, $\mathbb{R}^n$",
    r"$\mathcal{O}(n \log n)$ $a \le b \ge c \times d \cdot e$ $\sum_i x_i$ $\infty$",
    r"\emph{x} \textit{y} \textbf{z} {braced} \& \% \# \_ \$ \textbackslash{} \dots",
    r"a \ldots b \textendash{} c \textemdash{} d, a\\ b, a~b, x\,y",
]


def test_the_markup_a_bibliography_needs_is_kept() -> None:
    for text in KEPT:
        assert latex_text(text, protect=False) == text
        assert latex_text(latex_text(text, protect=False), protect=False) == text


def test_a_command_name_ends_where_tex_ends_it() -> None:
    # XeTeX and LuaTeX read non-ASCII letters into a name, `\makeatletter` reads `@`.
    assert latex_text(r"$\alphaé$ \ss@x") == r"{$\alpha é$} \ss @x"


def test_fields_that_are_not_text_hold_no_tex() -> None:
    hostile = paper(
        url="https://example.org/a%20b/^^5cinput{x}\\y",
        doi="10.1000/x^^5cinput",
        arxiv_url="https://arxiv.org/abs/2401.00001",
    )
    fields = dict(entry(hostile).fields)
    assert fields["url"] == "https://example.org/a%20b/%5E%5E5cinput%7Bx%7D%5Cy"  # `%` kept
    assert "doi" not in fields
    assert fields["eprint"] == "2401.00001"
    assert dict(entry(paper(doi="10.1145/3292500.3330701")).fields)["doi"] == (
        "10.1145/3292500.3330701"
    )


# --- linear time ------------------------------------------------------------------------

BOUND_SECONDS_PER_MB = 1.0  # as tests/digests/test_text_bounds.py: CPU time of this thread
LONG_TEXTS = [
    "$" * MEGABYTE,  # quadratic before: 16,000 took 4 s
    "{" * MEGABYTE,
    "a}" * (MEGABYTE // 2),
    "$x$" * (MEGABYTE // 3),
    "\\(" * (MEGABYTE // 2),
    "\\H{o}" * (MEGABYTE // 5),
    "aB " * (MEGABYTE // 3),
    "a a " * (MEGABYTE // 4),  # a key reads words until a telling one
]


def cpu_seconds(work: Any, argument: Any, bound: float) -> float:
    """CPU seconds of this thread for `work(argument)`, run again (three times at most) while
    over `bound`, the least kept: the cost of the code, not of what else a shared machine
    ran meanwhile (the same input varies by half here under load)."""
    times: list[float] = []
    while len(times) < 3 and (not times or min(times) >= bound):
        start = time.thread_time()
        work(argument)
        times.append(time.thread_time() - start)
    return min(times)


def long_tex_texts() -> st.SearchStrategy[str]:
    """A fragment of TeX pieces repeated up to a megabyte (as `hostile_texts`)."""
    fragment = st.lists(st.sampled_from(TEX_PIECES), min_size=1, max_size=6).map("".join)
    return st.builds(
        lambda piece, size: (piece * (size // len(piece) + 1))[:size],
        fragment.filter(bool),
        st.just(MEGABYTE) | st.integers(min_value=1, max_value=MEGABYTE),
    )


@settings(
    max_examples=6,
    deadline=None,  # timed below, in CPU time
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(long_tex_texts() | hostile_texts())
@example(LONG_TEXTS[0])
def test_latex_text_takes_under_a_second_a_megabyte(text: str) -> None:
    bound = BOUND_SECONDS_PER_MB * max(len(text) / MEGABYTE, 0.1)
    assert cpu_seconds(latex_text, text, bound) < bound


@pytest.mark.parametrize("text", LONG_TEXTS, ids=lambda text: repr(text[:6]))
def test_a_megabyte_of_fields_is_written_in_under_a_second(text: str) -> None:
    third = text[: len(text) // 3]
    hostile = [paper(title=third, authors=[third[: len(third) // 2]] * 2, venue=third)]
    # A slow spell of a shared machine raises the bound with it: ordinary text of the same
    # size, in the same run, takes about a fifth of it.
    plain = ("Conservative Q-Learning for Offline RL " * len(text))[: len(text) // 3]
    ordinary = [paper(title=plain, authors=[plain[: len(plain) // 2]] * 2, venue=plain)]
    bound = max(BOUND_SECONDS_PER_MB, 4 * cpu_seconds(bibtex, ordinary, 0.0))
    assert cpu_seconds(bibtex, hostile, bound) < bound
