"""BibTeX entries for stored papers (`/papers bibtex`, `/papers saved export`,
`paperboy saved --format bibtex`).

The contract: `@inproceedings`, `@article` or `@misc` (a submission is no publication), with
arXiv's `eprint` when known. A key is stable: first author's surname, year, the title's first
telling word and a suffix from the paper id (`smith2025offline_380c62`), never from the
order of an export. Text survives a BibTeX parser's round trip, capitals and maths braced.
Every field goes through an allow list (docs/explanation/security.md): hostile text can neither run
anything where the entry is compiled nor break or inject an entry. Linear time.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from digests.lookup import arxiv_id as arxiv_id_of
from digests.lookup import paper_link
from digests.safe_text import strip_unsafe

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
KEY_WORDS_READ = 64  # a real title's telling word comes early; a hostile one is not read on
# A paper stored without a title (a venue's abstracts file) has one made from its abstract's
# first words (`title_derived`): a citation must not pass it off as the real one.
DERIVED_NOTE = "Title derived from the abstract by Paperboy; check the published title"
LONG_SUFFIX_DIGITS = 16
_ARXIV_CATEGORY = re.compile(r"[a-z-]+(?:\.[A-Za-z-]+)?")
# What a field that is not text may hold (a URL's characters, RFC 3986): no backslash,
# brace, `^`, space or double quote can reach TeX through one.
_VERBATIM = re.compile(r"[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%<>-]+")
# A DOI (Crossref's pattern, and the `<>` of older ones).
_DOI = re.compile(r"10\.\d{4,9}/[-._;()/:A-Za-z0-9<>\[\]]+")


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

# The commands a field keeps: markup a bibliography needs, nothing that reads or writes a
# file, defines, expands or ends anything. An allow list, because TeX has more ways to do
# those than any block list names (`\^^69nput` is `\input`). Every other control word is
# written as text (`\textbackslash{}input`).
TEXT_COMMANDS = frozenset(
    (  # noqa: SIM905
        # emphasis and fonts
        "emph textit textbf textsc textsl textup texttt textrm textsf textnormal "
        "textsuperscript "
        # accents that take an argument (`\c{c}`, `\v{s}`, `\H{o}`)
        "c v u H r d b t k "
        # letters
        "ss SS o O l L aa AA ae AE oe OE i j "
        # symbols
        "textbackslash textbraceleft textbraceright textasciitilde textasciicircum "
        "textunderscore textbar textless textgreater textdollar textsterling textendash "
        "textemdash textquoteleft textquoteright textquotedblleft textquotedblright "
        "textellipsis textbullet textperiodcentered textdagger textdaggerdbl textsection "
        "textparagraph textregistered texttrademark textcopyright dots ldots slash "
        # nothing: an author name's group that holds a command starts `{\\relax`, so
        # BibTeX reads it as one character (see `names_value`)
        "relax"
    ).split()
)
MATH_COMMANDS = frozenset(
    (  # noqa: SIM905
        # Greek
        "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa "
        "lambda mu nu xi pi varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi "
        "omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega "
        # letter-like symbols
        "ell hbar imath jmath aleph wp Re Im partial infty nabla emptyset prime "
        # operators and relations
        "pm mp times div cdot ast star circ bullet oplus ominus otimes oslash odot cap cup "
        "setminus wedge vee land lor le leq ge geq ne neq ll gg approx sim simeq cong equiv "
        "propto prec succ preceq succeq subset supset subseteq supseteq in ni notin not mid "
        "parallel perp to gets rightarrow leftarrow Rightarrow Leftarrow leftrightarrow "
        "Leftrightarrow longrightarrow mapsto implies iff uparrow downarrow forall exists "
        "neg lnot top bot angle triangle backslash langle rangle lfloor rfloor lceil rceil "
        "lbrace rbrace vert Vert colon ldots cdots vdots ddots dots "
        "sum prod coprod int oint bigcup bigcap bigoplus bigotimes "
        # functions
        "log ln lg exp sin cos tan sec csc cot arcsin arccos arctan sinh cosh tanh min max "
        "sup inf lim liminf limsup arg det dim ker deg gcd hom Pr "
        # constructions
        "frac sqrt hat tilde bar vec dot ddot check breve acute grave overline underline "
        "widehat widetilde mathbb mathcal mathrm mathbf mathit mathsf mathtt mathfrak "
        "boldsymbol left right big Big bigg Bigg bigl bigr Bigl Bigr quad qquad"
    ).split()
)
# Either list is kept in text and in maths: TeX reports one used in the wrong mode, and
# goes on.
COMMANDS = TEXT_COMMANDS | MATH_COMMANDS
# Control symbols (a backslash and one character) kept: the escaped specials, a line
# break, spaces, and the text accents (`\'e`, `\"o`, `\^o`, `\~n`), these only before the
# letter or group they accent. `\{` and `\}` are written as words (`_AS_TEXT`).
SYMBOLS = frozenset("&%#_$\\ ,;:!|/-'\"`^~=.")
_TOKEN = re.compile(
    r"\\(?:[A-Za-z]+"  # a control word
    r"|['\"`^~=.](?=[A-Za-z{]|\\[ij](?![A-Za-z]))"  # an accent, before its letter
    r"|[&%#_$\\ ,;:!|/{}-]"  # another symbol kept, or `\{`, `\}`
    r"|)"  # any other backslash: written as text, what follows it read on its own
    r"|[${}]"
    r"|[^\\${}]+",  # text: words, spaces, punctuation, and `^ _ & % #` to escape
    flags=re.S,
)
_SPECIAL = "\\{}$"  # the first characters of every token but text
_WORD = re.compile(r"([^\W_](?:[^\W_]|-)*)")  # letters and digits, hyphens inside
# Text escaped (in text, in maths); in maths, `^` stays a superscript.
_ESCAPES = (
    str.maketrans({"&": r"\&", "%": r"\%", "#": r"\#", "_": r"\_", "^": r"\^{}"}),
    str.maketrans({"&": r"\&", "%": r"\%", "#": r"\#"}),
)
# `^^5c` is a backslash to TeX, in text or maths, and `^^)` an `i`: no two carets ever
# meet (in maths `^{}{}^`: an empty superscript, then one on an empty atom).
_CARETS = re.compile(r"\^(?=\^)")
# Written as text, (in text, in maths): `\textbackslash` is a text command, `\backslash`
# a maths one. `\{` and `\}` are written so, and so is a `{` or `}` without a partner.
_AND = re.compile(r"\band\b", flags=re.I)
_BRACE_TOKENS = {"{": "\\{", "}": "\\}"}
_AS_TEXT = {
    "\\": (r"\textbackslash{}", r"\backslash{}"),
    "\\{": (r"\textbraceleft{}", r"\lbrace{}"),
    "\\}": (r"\textbraceright{}", r"\rbrace{}"),
}
# Commands that BibTeX's lower-casing would turn into no command (`\H{o}` into `\h{o}`):
# written as a BibTeX special character, `{\H{o}}`, `{\Re}`, whose names it keeps.
_CASED = frozenset("\\" + name for name in COMMANDS if name.lower() not in COMMANDS)
_ACCENTS = frozenset({r"\H"})  # of those, the one that takes an argument


def latex_text(text: str, protect: bool = True) -> str:
    """`text` as a BibTeX field value through the allow list (`COMMANDS`, `SYMBOLS`): the
    markup kept as it is; any other command, a `^` and the specials written as text;
    braces balanced as BibTeX counts them. `protect`: brace words with a capital after
    their first letter (`DPO`, `LoRA`) and maths, so a style's lower-casing keeps them.

    Linear in the length of `text`: a pass over its tokens, and one over its braces."""
    text = " ".join(strip_unsafe(text).split())
    tokens = _TOKEN.findall(text)
    _unmatched_braces_as_words(tokens)
    # An unmatched last `$` is a dollar sign.
    if tokens.count("$") % 2:
        tokens[len(tokens) - 1 - tokens[::-1].index("$")] = r"\$"
    out: list[str] = []
    append = out.append
    in_math = False
    math_braced = False  # the open maths was braced by `protect`
    math_start = 0  # len(out) when it opened
    depth = 0
    guard = protect  # text here is protected: at depth 0, not in maths
    close_accent = False  # a `{\H` waits for the `}` that closes the group after it
    tokens.append("")  # what follows the last token
    special, as_text, escapes, commands = _SPECIAL, _AS_TEXT, _ESCAPES, COMMANDS  # locals: fast
    for token, following in itertools.pairwise(tokens):
        first = token[0]
        if first not in special:
            if len(token) == 1:  # the most tokens a text can have: one character each
                append(escapes[in_math].get(ord(first), first))
                continue
            if guard and token[1:] != token[1:].lower():  # a capital, maybe inside a word
                token = _protect_words(token)
            token = token.translate(escapes[in_math])
            if in_math and "^^" in token:
                token = _CARETS.sub("^{}{}", token)
            append(token)
        elif first == "\\":
            written = as_text.get(token)
            if written is not None:
                append(written[in_math])
                continue
            name = token[1:]
            if name in commands:
                if guard and token in _CASED:
                    if following == "{":  # through the group that follows (it has a partner)
                        token = "{" + token
                        close_accent = True
                    elif token not in _ACCENTS:
                        token = "{" + token + "}"
                # XeTeX and LuaTeX read non-ASCII letters into a command's name
                # (`\alphaé`), and after `\makeatletter` TeX reads `@` so (`\l@input`):
                # a space ends the name where we do.
                append(token + " " if following[:1] == "@" or following[:1] > "\x7f" else token)
            elif name.isalpha():  # a command not on the list: written as text
                if guard and name[1:] != name[1:].lower():
                    name = "{" + name + "}"
                append(_AS_TEXT["\\"][in_math] + name)
            elif name == "\\" and following[:1] != " ":
                # A line break (`\\`) before a brace or the value's end: bibtexparser reads
                # its second backslash as escaping the brace (`{a \\}` never closes); a
                # space after it keeps the break and parts the two.
                append("\\\\ ")
            else:  # a symbol on the list (no other is a token)
                append(token)
        elif first == "{":
            depth += 1
            guard = False
            append("{")
        elif first == "}":
            depth -= 1
            guard = protect and depth == 0 and not in_math
            if close_accent and depth == 0:
                append("}}")
                close_accent = False
            else:
                append("}")
        else:  # $
            if not in_math:
                math_braced = guard
                append("{$" if guard else "$")
                math_start = len(out)
                in_math = True
                guard = False
            else:
                if len(out) == math_start:  # `$$` would be display maths to TeX
                    append("{}")
                append("$}" if math_braced else "$")
                in_math = False
                guard = protect and depth == 0
    return "".join(out)


def _unmatched_braces_as_words(tokens: list[str]) -> None:
    """Make each `{` and `}` token that has no partner a `\\{` or `\\}` token, in place:
    the output writes those as words."""
    if "{" not in tokens or "}" not in tokens:  # no brace has a partner
        tokens[:] = map(_BRACE_TOKENS.get, tokens, tokens)
        return
    opened: list[int] = []
    push = opened.append
    pop = opened.pop
    for index, token in enumerate(tokens):
        if token == "{":
            push(index)
        elif token == "}":
            if opened:
                pop()
            else:
                tokens[index] = "\\}"
    for index in opened:
        tokens[index] = "\\{"


def _protect_words(text: str) -> str:
    """`text` with its words that hold a capital after their first letter braced (a
    capital: a letter that lower-casing changes, as a style's lower-casing would)."""
    parts = _WORD.split(text)  # text, word, text, ..., text
    parts[1::2] = ["{" + w + "}" if w[1:] != w[1:].lower() else w for w in parts[1::2]]
    return "".join(parts)


def names_value(authors: Sequence[Any]) -> str:
    """The `author` field: names joined by ` and `. A name that BibTeX would split or
    misread (one holding the word "and", or more than two commas) is braced whole."""
    names = []
    for raw in authors:
        text = str(raw)
        name = latex_text(text, protect=False)
        if not name:
            continue
        # Read in the name as given: writing it adds neither a word "and" nor a comma.
        if text.count(",") > 2 or _AND.search(text):
            name = "{" + name + "}"
        names.append(_special_characters(name) if "\\" in name else name)
    return " and ".join(names)


# A written name's tokens: a command (with the space that may end its name, and its
# arguments when they hold no group or command: `\\textbackslash{}`, `\\H{o}`), a brace
# or `$`, or a run of text.
_NAME_TOKEN = re.compile(r"\\(?:[A-Za-z]+ ?(?:\{[^\\{}$]*\})*|\\ ?|.)|[{}$]|[^\\{}$]+", flags=re.S)
_PLAIN_COMMAND_PARTS = re.compile(
    r"(\\(?:[A-Za-z]+ ?(?:\{[^\\{}$]*\})*|\\ ?|[^A-Za-z\\]))", flags=re.S
)
_ACCENT_COMMAND = re.compile(r"\\(?:[cvuHrdbtk](?![A-Za-z])|['\"`^~=.])")
_ACCENTS_OF_NAMES = frozenset("c v u H r d b t k ' \" ` ^ ~ = .".split())  # noqa: SIM905


def _special_characters(name: str) -> str:
    """`name` (a written name) with every backslash inside a BibTeX special character, a
    group at brace depth 0 that starts `{\\`: a command at depth 0 braced with what it
    applies to (`{\\'e}`, `{\\c{c}}`, `{\\ss }`), a group or maths holding one begun
    `{\\relax`. Styles cut names by characters (alpha's label is a surname's first
    three: `\\iff` would be `\\if`, `ab\\%` would be `ab\\` before the year) and abbreviate
    them, but take a special character only whole. Linear: one pass to pair the groups,
    one to write."""
    if "$" not in name and not _ACCENT_COMMAND.search(name):
        # Only commands with plain arguments, and text: each braced, at C speed (split,
        # not sub with a template, which runs Python code per match).
        parts = _PLAIN_COMMAND_PARTS.split(name)
        rest = "".join(parts[0::2])
        if "{" not in rest and "\\" not in rest:
            parts[1::2] = ["{" + command + "}" for command in parts[1::2]]
            return "".join(parts)
    tokens = _NAME_TOKEN.findall(name)
    ends: dict[int, int] = {}  # where a group (`{`, or `$` at one depth) starts: after its end
    braces: list[int] = []
    dollars: dict[int, int] = {}  # depth: its open `$`
    commands = [0]  # commands before each token
    for index, token in enumerate(tokens):
        if token[0] == "\\":
            commands.append(commands[-1] + 1)
            continue
        if token == "{":
            braces.append(index)
        elif token == "}" and braces:
            dollars.pop(len(braces), None)
            ends[braces.pop()] = index + 1
        elif token == "$":
            if (opened := dollars.pop(len(braces), None)) is not None:
                ends[opened] = index + 1
            else:
                dollars[len(braces)] = index
        commands.append(commands[-1])
    out: list[str] = []
    at = 0
    while at < len(tokens):
        token = tokens[at]
        end = ends.get(at)
        if not token:  # a text whose first letter went with the accent before it
            at += 1
        elif token[0] == "\\" and token[-1] == "}":  # a command with its plain arguments
            out.append("{" + token + "}")
            at += 1
        elif end is not None:
            part = "".join(tokens[at:end])
            if commands[end] == commands[at] or (tokens[at + 1][:1] == "\\" and token == "{"):
                out.append(part)  # no command inside, or a special character already
            elif token == "{":
                out.append("{\\relax " + part[1:])
            else:
                out.append("{\\relax " + part + "}")
            at = end
        elif token[0] == "\\":
            end = at + 1
            following = tokens[end] if end < len(tokens) else ""
            if token.strip()[1:] in _ACCENTS_OF_NAMES and following:
                if following.rstrip() in (r"\i", r"\j"):  # the dotless letter it accents
                    end += 1
                elif following[0].isalpha():  # the letter it accents, alone
                    token += following[0]
                    tokens[end] = following[1:]
            while end < len(tokens) and tokens[end] == "{" and end in ends:  # its arguments
                end = ends[end]
            out.append("{" + token + "".join(tokens[at + 1 : end]) + "}")
            at = end
        else:
            out.append(token)
            at += 1
    return "".join(out)


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
    """The title's first telling word, among its first `KEY_WORDS_READ` words."""
    plain = re.sub(r"\$[^$]*\$|\\[A-Za-z]+", " ", title)
    for match in itertools.islice(re.finditer(r"[^\W_]+", plain), KEY_WORDS_READ):
        folded = _ascii_word(match.group(0))
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
    """The entry for a paper row (`db.papers` shape; `arxiv_id` may be added). Text
    fields go through `latex_text`; the others (`year`, `eprint`, `doi`, `url`, ...)
    hold only the characters of `_VERBATIM`, or are left out."""
    fields: list[tuple[str, str]] = [("title", latex_text(str(paper.get("title") or "")))]
    authors = names_value(paper.get("authors") or [])
    if authors:
        fields.append(("author", authors))
    venue = _venue(paper)
    kind = "misc"
    if venue is not None:
        kind, where = venue
        fields.append(("booktitle" if kind == "inproceedings" else "journal", latex_text(where)))
    verbatim: list[tuple[str, str | None]] = [("year", str(_year(paper) or "") or None)]
    arxiv = paper_arxiv_id(paper)
    if arxiv:
        verbatim += [("eprint", arxiv), ("archivePrefix", "arXiv")]
        category = next(iter(paper.get("categories") or []), None)
        if isinstance(category, str) and _ARXIV_CATEGORY.fullmatch(category):
            verbatim.append(("primaryClass", category))
    doi = str(paper.get("doi") or "").strip()
    verbatim += [("doi", doi if _DOI.fullmatch(doi) else None), ("url", _url(paper))]
    for name, value in verbatim:
        if value and _VERBATIM.fullmatch(value):
            fields.append((name, value))
        elif value:
            log.info("bibtex: %s of %s left out: %r", name, paper.get("id"), value[:80])
    if paper.get("title_derived"):  # the source gave no title: the one stored was made up
        fields.append(("note", latex_text(DERIVED_NOTE)))
    return Entry(kind, key or cite_key(paper), tuple(fields))


def _url(paper: Paper) -> str | None:
    """The paper's page, well-formed (`safe_url` percent-encodes braces, spaces, `\\` and
    `^`), or None. Percent-encoding's `%` stays: the `url` field is read verbatim
    (biblatex, `\\url`), not as LaTeX text."""
    return paper_link(paper)


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
