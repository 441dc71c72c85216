"""BibTeX entries for stored papers (`/papers bibtex`, `/papers saved export`,
`paperboy saved --format bibtex`).

The contract:
- Type: `@inproceedings` with `booktitle` for a conference or workshop paper (a
  "Findings" paper of ACL, EMNLP or NAACL in the Findings volume, not the conference),
  `@article` with `journal` for a journal (JMLR, TMLR, TACL), `@misc` otherwise,
  including a venue text that says the paper was submitted, rejected or withdrawn. A
  paper with an arXiv id carries `eprint`, `archivePrefix = {arXiv}` and, when its
  categories are known, `primaryClass`, whatever its type.
- Keys are stable: the same paper always gets the same key, built from the first
  author's surname (folded to ASCII), the year and the first telling word of the title,
  plus a suffix taken from the paper id (`smith2025offline_380c62`). Never from the
  order of an export, so a key cited in a paper still names the same entry in the next
  export. In the one case two papers of an export would still share a key (same
  author, year, word and suffix), both take a longer suffix from their ids.
- Text survives the round trip through a BibTeX parser: LaTeX in titles (`$\\alpha$-DPO`)
  is kept; `&`, `%`, `#` are escaped everywhere and `_` outside math; capitals inside a
  word (`DPO`, `LoRA`) and math are braced so styles that lower-case titles keep them;
  non-ASCII text is kept as UTF-8 (biber, and BibTeX with inputenc, read it).
- Hostile text cannot run anything where the entry is compiled: commands that read or
  write files, run programs, redefine or end the document (`\\input`, `\\write`,
  `\\def`, `\\end`, ...) are written as text (`\\textbackslash{}input`), and TeX's `^^`
  notation (`^^5c` is a backslash) is broken up inside math.
- Hostile text cannot break an entry or inject another: braces are balanced as BibTeX
  counts them (an unmatched `{` or `}` becomes `\\textbraceleft{}` / `\\textbraceright{}`,
  and `\\{`, `\\}` are written the same way, since BibTeX and bibtexparser disagree on
  whether a backslash escapes a brace), line breaks become spaces, and a value never
  ends in a backslash. An `@` inside a balanced value is plain text to both.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from digests.lookup import arxiv_id as arxiv_id_of
from digests.lookup import paper_link
from digests.safe_text import strip_unsafe
from digests.safe_url import safe_url

log = logging.getLogger(__name__)

Paper = dict[str, Any]

# Venue abbreviations (the first word of a stored venue, case-insensitive) and their full
# names. A venue not listed is written as stored.
CONFERENCES = {
    "aaai": "AAAI Conference on Artificial Intelligence",
    "aistats": "International Conference on Artificial Intelligence and Statistics",
    "acl": "Annual Meeting of the Association for Computational Linguistics",
    "colt": "Conference on Learning Theory",
    "corl": "Conference on Robot Learning",
    "cvpr": "IEEE/CVF Conference on Computer Vision and Pattern Recognition",
    "eccv": "European Conference on Computer Vision",
    "emnlp": "Conference on Empirical Methods in Natural Language Processing",
    "iccv": "IEEE/CVF International Conference on Computer Vision",
    "iclr": "International Conference on Learning Representations",
    "icml": "International Conference on Machine Learning",
    "icra": "IEEE International Conference on Robotics and Automation",
    "ijcai": "International Joint Conference on Artificial Intelligence",
    "iros": "IEEE/RSJ International Conference on Intelligent Robots and Systems",
    "kdd": "ACM SIGKDD Conference on Knowledge Discovery and Data Mining",
    "naacl": "Annual Conference of the North American Chapter of the Association for "
    "Computational Linguistics",
    "neurips": "Advances in Neural Information Processing Systems",
    "nips": "Advances in Neural Information Processing Systems",
    "rss": "Robotics: Science and Systems",
    "uai": "Conference on Uncertainty in Artificial Intelligence",
}
JOURNALS = {
    "jmlr": "Journal of Machine Learning Research",
    "tmlr": "Transactions on Machine Learning Research",
    "tacl": "Transactions of the Association for Computational Linguistics",
}
NOT_VENUES = {"arxiv", "corr"}  # a preprint: @misc with its eprint
# A venue text about a submission, not an acceptance (a file's "Submitted to ICLR 2025").
_NOT_PUBLISHED = re.compile(
    r"\b(?:submitted|submission|under review|in review|rejected|withdrawn)\b", re.I
)
FINDINGS = {"acl", "emnlp", "naacl", "eacl", "aacl"}  # their "Findings" volumes
# Words a key skips when it looks for the title's first telling word.
_KEY_SKIP = frozenset(
    (  # noqa: SIM905
        "a an the on of in for to and with from towards toward via is are do does can how "
        "what when why we our beyond revisiting rethinking"
    ).split()
)
SUFFIX_DIGITS = 6
# A paper stored without a title (a venue's abstracts file) has one made from its abstract's
# first words (`title_derived`): a citation must not pass it off as the real one.
DERIVED_NOTE = "Title derived from the abstract by Paperboy; check the published title"
LONG_SUFFIX_DIGITS = 16
_ARXIV_CATEGORY = re.compile(r"[a-z-]+(?:\.[A-Za-z-]+)?")


@dataclass(frozen=True)
class Entry:
    """One BibTeX entry: its type, key and fields (values already encoded, in order)."""

    kind: str
    key: str
    fields: tuple[tuple[str, str], ...]

    def text(self) -> str:
        lines = [f"@{self.kind}{{{self.key},"]
        lines += [f"  {name} = {{{value}}}," for name, value in self.fields]
        return "\n".join([*lines, "}"]) + "\n"


# --- text -------------------------------------------------------------------------------

_ALWAYS_ESCAPED = {"&": r"\&", "%": r"\%", "#": r"\#"}
_TEXT_ESCAPED = {"_": r"\_", "$": r"\$", "^": r"\^{}"}
_BRACE_WORDS = {"{": r"\textbraceleft{}", "}": r"\textbraceright{}"}
# TeX primitives and commands that read or write files, run programs, redefine things or
# end the document: a title is text anyone can submit, and it is compiled into the
# citing paper (`\input{/etc/passwd}` would print the file, `\write18` run a program
# under shell escape). Written as text (`\textbackslash{}input`), the title still reads.
_UNSAFE_COMMANDS = frozenset(
    (  # noqa: SIM905
        "input include includeonly InputIfFileExists IfFileExists endinput end write "
        "immediate openout openin closeout closein read readline newwrite newread special "
        "directlua latelua luaexec catcode def edef gdef xdef let futurelet csname "
        "expandafter newcommand renewcommand providecommand DeclareRobustCommand usepackage "
        "RequirePackage documentclass makeatletter verbatiminput lstinputlisting "
        "ShellEscape pdfshellescape"
    ).split()
)


def _tokens(text: str) -> list[str]:
    """`text` as tokens: a backslash with what it escapes (`\\&`, `\\alpha`, `\\\\`), or
    one character."""
    return re.findall(r"\\(?:[A-Za-z]+|.)|.", text, flags=re.S)


def _math_spans(tokens: list[str]) -> set[int]:
    """Indexes of the `$` tokens that open or close math; an unmatched last `$` is
    left out (it is a dollar sign)."""
    dollars = [i for i, token in enumerate(tokens) if token == "$"]
    if len(dollars) % 2:
        dollars = dollars[:-1]
    return set(dollars)


def latex_text(text: str, protect: bool = True) -> str:
    """`text` as a BibTeX field value: LaTeX kept, specials escaped, braces balanced as
    BibTeX counts them (see the module doc). `protect`: brace words with a capital after
    their first letter (`DPO`, `LoRA`) and math, so a style's lower-casing keeps them."""
    text = " ".join(strip_unsafe(text).split())
    tokens = _tokens(text)
    math = _math_spans(tokens)
    out: list[str] = []
    in_math = False
    for index, token in enumerate(tokens):
        if index in math:
            in_math = not in_math
            out.append(token)
        elif token in (r"\{", r"\}"):
            out.append(_BRACE_WORDS[token[1]])
        elif token in _ALWAYS_ESCAPED:
            out.append(_ALWAYS_ESCAPED[token])
        elif not in_math and token in _TEXT_ESCAPED:
            out.append(_TEXT_ESCAPED[token])
        elif token == "\\":  # a lone backslash at the end: it would escape the closing brace
            out.append(r"\textbackslash{}")
        elif token == "\\\\" and tokens[index + 1 : index + 2] != [" "]:
            # A line break (`\\`) before a brace or the value's end: bibtexparser reads its
            # second backslash as escaping the brace (`{a \\}` never closes); a space after
            # it keeps the break and parts the two.
            out.append("\\\\ ")
        elif token[1:] in _UNSAFE_COMMANDS and token.startswith("\\"):
            out.append(r"\textbackslash{}" + token[1:])
        elif in_math and token == "^" and index and tokens[index - 1] == "^":
            # `^^5c` is a backslash to TeX (`$^^5cinput$` runs \input): break the pair
            # (`^{}{}^5c`: an empty superscript, then one on an empty atom).
            out.append("{}{}^")
        else:
            out.append(token)
    _balance(out)
    return "".join(_protect(out, math) if protect else out)


def _balance(tokens: list[str]) -> None:
    """Write each `{` or `}` of `tokens` that has no partner as a word, in place."""
    opened: list[int] = []
    for index, token in enumerate(tokens):
        if token == "{":
            opened.append(index)
        elif token == "}":
            if opened:
                opened.pop()
            else:
                tokens[index] = _BRACE_WORDS[token]
    for index in opened:
        tokens[index] = _BRACE_WORDS["{"]


def _protect(tokens: list[str], math: set[int]) -> list[str]:
    """Braces around math and around words with a capital after their first letter, at
    brace depth 0 only: text already inside braces is protected, or is a command's
    argument that must stay as it is."""
    out: list[str] = []
    depth = 0
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token in ("{", "}"):
            depth += 1 if token == "{" else -1
            out.append(token)
            index += 1
        elif depth == 0 and index in math:  # math runs to its closing `$`
            end = min(i for i in math if i > index)
            out.append("{" + "".join(tokens[index : end + 1]) + "}")
            index = end + 1
        elif depth == 0 and _is_word_char(token):
            end = index
            while end + 1 < len(tokens) and (
                _is_word_char(tokens[end + 1]) or tokens[end + 1] == "-"
            ):
                end += 1
            word = "".join(tokens[index : end + 1])
            capital_inside = any(char.isupper() for char in word[1:])
            out.append("{" + word + "}" if capital_inside else word)
            index = end + 1
        else:
            out.append(token)
            index += 1
    return out


def _is_word_char(token: str) -> bool:
    return len(token) == 1 and token.isalnum()


def names_value(authors: Sequence[Any]) -> str:
    """The `author` field: names joined by ` and `. A name that BibTeX would split or
    misread (one holding the word "and", or more than two commas) is braced whole."""
    names = []
    for raw in authors:
        name = latex_text(str(raw), protect=False)
        if not name:
            continue
        if re.search(r"\band\b", name, flags=re.I) or name.count(",") > 2:
            name = "{" + name + "}"
        names.append(name)
    return " and ".join(names)


# --- keys -------------------------------------------------------------------------------


def _ascii_word(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", folded.lower())


def _surname(name: str) -> str:
    name = re.sub(r"[{}]", "", name).strip()
    if "," in name:  # "Last, First"
        return name.split(",", 1)[0]
    words = [w for w in name.split() if w.strip(".").lower() not in {"jr", "sr", "ii", "iii"}]
    return words[-1] if words else ""


def _title_word(title: str) -> str:
    plain = re.sub(r"\$[^$]*\$|\\[A-Za-z]+", " ", title)
    for word in re.findall(r"[^\W_]+", plain):
        folded = _ascii_word(word)
        if folded and folded not in _KEY_SKIP and not folded.isdigit():
            return folded
    return ""


def _id_suffix(paper_id: str, digits: int) -> str:
    """Hex digits of the paper id (our ids are `p` + hex), else of its SHA-1."""
    bare = paper_id[1:] if paper_id.startswith("p") else ""
    if re.fullmatch(r"[0-9a-f]+", bare) and len(bare) >= digits:
        return bare[:digits]
    return hashlib.sha1(paper_id.encode("utf-8", "surrogatepass")).hexdigest()[:digits]


def cite_key(paper: Paper, digits: int = SUFFIX_DIGITS) -> str:
    """The paper's key: `surname` `year` `word` `_` `suffix` (`word` `year` `_` `suffix`
    without authors); ASCII letters, digits and `_` only, which any BibTeX and LaTeX
    accept. The same paper always gets the same key."""
    authors = [str(name) for name in paper.get("authors") or [] if str(name).strip()]
    surname = _ascii_word(_surname(authors[0]))[:20] if authors else ""
    year = str(_year(paper) or "")
    word = _title_word(str(paper.get("title") or ""))[:20]
    # No author (papers from a venue's file have none): the title's word leads.
    base = f"{surname}{year}{word}" if surname else f"{word}{year}"
    if not base[:1].isalpha():  # empty, or a bare year: a key starting with a digit
        base = "paper" + base  # confuses some tools
    return f"{base}_{_id_suffix(str(paper['id']), digits)}"


# --- fields -----------------------------------------------------------------------------


def _year(paper: Paper) -> int | None:
    year = paper.get("year")
    if isinstance(year, int) or (isinstance(year, str) and year.isdigit()):
        return int(year)
    published = str(paper.get("published_at") or "")
    return int(published[:4]) if re.match(r"\d{4}-", published) else None


def paper_arxiv_id(paper: Paper) -> str | None:
    """The paper's own arXiv id (no version): an alias the caller put in `arxiv_id`, or
    its arXiv page or PDF link (`arxiv_url`; a file's `url` or `pdf_url` may be one)."""
    keys = ("arxiv_id", "arxiv_url", "url", "pdf_url")
    for text in (paper.get(key) for key in keys):
        if text and (found := arxiv_id_of(str(text))):
            return found
    return None


def _venue(paper: Paper) -> tuple[str, str] | None:
    """("inproceedings", booktitle) or ("article", journal), or None for no venue."""
    venue = " ".join(str(paper.get("venue") or "").split())
    if not venue:
        return None
    first = venue.split()[0].lower()
    if first in NOT_VENUES or _NOT_PUBLISHED.search(venue):
        return None  # a submission is not a publication: @misc
    if first in JOURNALS:
        return "article", JOURNALS[first]
    if first in FINDINGS and re.search(r"\bfindings\b", venue, flags=re.I):
        # "ACL 2024 Findings" (arXiv comments give it so) is not the main conference.
        year = re.search(r"\b(?:19|20)\d\d\b", venue)
        name = " ".join([venue.split()[0], *([year.group(0)] if year else [])])
        return "inproceedings", f"Findings of the Association for Computational Linguistics: {name}"
    if first in CONFERENCES and not re.search(r"\bworkshops?\b", venue, flags=re.I):
        return "inproceedings", f"{CONFERENCES[first]} ({venue.split()[0]})"
    return "inproceedings", venue


def entry(paper: Paper, key: str | None = None) -> Entry:
    """The entry for a paper row (`db.papers` shape; `arxiv_id` may be added)."""
    fields: list[tuple[str, str]] = [("title", latex_text(str(paper.get("title") or "")))]
    authors = names_value(paper.get("authors") or [])
    if authors:
        fields.append(("author", authors))
    venue = _venue(paper)
    kind = "misc"
    if venue is not None:
        kind, where = venue
        fields.append(("booktitle" if kind == "inproceedings" else "journal", latex_text(where)))
    year = _year(paper)
    if year:
        fields.append(("year", str(year)))
    arxiv = paper_arxiv_id(paper)
    if arxiv:
        fields += [("eprint", arxiv), ("archivePrefix", "arXiv")]
        category = next(iter(paper.get("categories") or []), None)
        if isinstance(category, str) and _ARXIV_CATEGORY.fullmatch(category):
            fields.append(("primaryClass", category))
    doi = str(paper.get("doi") or "").strip()
    if doi and re.fullmatch(r"10\.[^\s{}\\%#]+", doi):
        fields.append(("doi", doi))
    url = _url(paper)
    if url:
        fields.append(("url", url))
    if paper.get("title_derived"):  # the source gave no title: the one stored was made up
        fields.append(("note", DERIVED_NOTE))
    return Entry(kind, key or cite_key(paper), tuple(fields))


def _url(paper: Paper) -> str | None:
    """The paper's page, well-formed (`safe_url` percent-encodes braces and spaces), or
    None if a brace, backslash or space is left. Percent-encoding's `%` stays: the `url`
    field is read verbatim (biblatex, `\\url`), not as LaTeX text."""
    link = paper_link(paper)
    link = safe_url(link) if link else None
    if link is None or re.search(r"[{}\\\s]", link):
        return None
    return link


def entries(papers: Iterable[Paper]) -> list[Entry]:
    """Entries for papers, keys unique: two papers that would share a key both take the
    longer suffix from their ids (never a counter: keys do not depend on order)."""
    listed = list(papers)
    keys = [cite_key(paper) for paper in listed]
    seen: dict[str, int] = {}
    for key in keys:
        seen[key] = seen.get(key, 0) + 1
    result = []
    for paper, key in zip(listed, keys, strict=True):
        if seen[key] > 1:
            key = cite_key(paper, LONG_SUFFIX_DIGITS)
            log.info("bibtex: key clash for %s, using %s", paper["id"], key)
        result.append(entry(paper, key))
    return result


def bibtex(papers: Iterable[Paper]) -> str:
    """A .bib file's text for `papers` (one paper id once), entries separated by a
    blank line."""
    unique = list({str(paper["id"]): paper for paper in papers}.values())
    return "\n".join(item.text() for item in entries(unique))


__all__ = ["Entry", "bibtex", "cite_key", "entries", "entry", "latex_text", "names_value"]
