"""Display titles, method names and TL;DRs for abstracts that come without a title.

A method is named where the abstract introduces one ("we propose AlphaDPO"; the one it
repeats most wins); the title is "Name: what it is", else a headline cut from the key
sentence that states the contribution; the TL;DR is that sentence, about 200 characters.
Only the first `DERIVE_MAX_CHARS` characters are read.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from digests.text import plain_text, sentences, shorten

log = logging.getLogger(__name__)

TITLE_LIMIT = 120
DESCRIPTOR_LIMIT = 100
TLDR_LIMIT = 200
# Titles and TL;DRs come from the start of an abstract: the contribution is stated in
# its first sentences. Reading only this much keeps derivation bounded on any input.
DERIVE_MAX_CHARS = 8_000

# Field-wide acronyms that abstracts define in passing: never a paper's method name.
GENERIC_ACRONYMS = frozenset(
    (  # noqa: SIM905
        "rl drl deeprl llm llms vlm vlms mdp mdps pomdp pomdps dqn dqns marl irl sft td moe "
        "dro ntk ml ai gpu gpus rlhf dpo ppo sac moo kl omrl fedrl qrl rm rms gan gans cnn "
        "cnns rnn rnns gnn gnns nlp cv sgd mcts lp qa bc gp gps vae vaes lstm mlp mlps vit "
        "bert gpt sde sdes ode odes pde pdes fbsdes ood iid nn dnn dnns api cpu tpu ucb lc "
    ).split()
)

_VERB = (
    r"propose|proposes|introduce|introduces|present|presents|develop|develops|devise|"
    r"devises|establish|establishes|design|designs|put forward|puts forward"
)
# The verb needs its subject ("we", "this paper", "to propose") close by, so that
# "novel designs" or "the present work" do not count.
_CONTRIBUTION = re.compile(
    rf"\b(?:we|paper|work|study|article|authors|to)(?:\s+(?!we\b)[\w-]+){{0,2}}?\s+(?:{_VERB})\b",
    re.I,
)
_NAMING = re.compile(
    r"\b(?:called|named|termed|dubbed|coined|denoted as|referred to as|"
    r"(?:term|call|name) (?:this|it)(?: as)?)\s+",
    re.I,
)
# Cheap tests before the costly patterns. Each match of _CONTRIBUTION or _COORDINATED
# contains one of _VERB_HINT's words, and each match of _NAMING one of _NAMING_HINT's, in
# lower case; only for ASCII text, where lower() is what re.I matches. They decide
# nothing: a sentence without any of these words cannot match, one with them is matched
# in full.
# The verb as the patterns take it: after a space, a whole word ("representation" and
# "presented" hold "present" but never match).
_VERB_HINT = (
    r"\s(?:proposes?|introduces?|presents?|develops?|devises?|establish(?:es)?|designs?"
    r"|puts? forward)\b"
)
_NAMING_HINT = "called|named|termed|dubbed|coined|denoted as|referred to as|term |call |name "
_HAS_VERB = re.compile(_VERB_HINT)
_HAS_TRIGGER = re.compile(f"{_VERB_HINT}|{_NAMING_HINT}")
# _NAMING_HINT's words: the trigger hint is "_HAS_VERB matches or one of these is there".
_NAMING_WORDS = tuple(_NAMING_HINT.split("|"))


def _may_have(hint: re.Pattern[str], sentence: str) -> bool:
    if not sentence.isascii():
        return True
    low = sentence.lower()
    if hint is _HAS_TRIGGER:  # the same test, faster (see `_hinted`)
        return _HAS_VERB.search(low) is not None or any(word in low for word in _NAMING_WORDS)
    return hint.search(low) is not None


def _hinted(text: str, sents: list[str], verbs: dict[int, bool] | None = None) -> list[bool]:
    """`_may_have(_HAS_TRIGGER, s)` for each of `sents`, the sentences of `text`, cheaper
    (these scans are most of `_method`'s time). The hint is its verb pattern or
    one of its naming words (`in` tests, 4 times faster than the regex's alternation of
    literals), and a sentence is searched only for the naming words the whole text holds:
    a sentence is pieces of `text` (cut after a full stop) joined by a space, so a word
    that it holds, which has no full stop, is in `text`. `verbs` gets each sentence's
    `_may_have(_HAS_VERB, sentence)` by index, when it is found on the way (ASCII text)."""
    if not text.isascii():
        return [_may_have(_HAS_TRIGGER, sentence) for sentence in sents]
    lowered = text.lower()
    naming = [word for word in _NAMING_WORDS if word in lowered]
    flags: list[bool] = []
    for index, sentence in enumerate(sents):
        low = sentence.lower()
        verb = _HAS_VERB.search(low) is not None
        if verbs is not None:
            verbs[index] = verb
        flags.append(verb or any(word in low for word in naming))
    return flags


_FINDING = re.compile(r"\b(?:we|paper|work)\s+(?:\w+\s+)?(?:show|prove|demonstrate|find)s? that\b")
_INVESTIGATE = re.compile(r"\bto (?:investigate|study|understand|analy[sz]e) (?=how|whether|what)")
_ACRONYM_IN_PARENS = re.compile(r"\(([^()\s]{2,24})\)")
_NAME_AT_START = re.compile(
    r"^[\s“\"]*([A-Za-z0-9][\w\-]*\w|[A-Z])[”\"]?(?=(\s*[,.(;:])|\s*$|\s+\w)"
)
_APPOSITIVE_NAME = re.compile(r",\s+([A-Za-z0-9][\w\-]*\w),")

_LEADING_FILLER = re.compile(
    r"^(?:(?:a|an|the|our|this|these|such|such a|novel|new|simple|yet|effective|"
    r"and|more|two|several|generic|unified|principled|approach,)\s+)+",
    re.I,
)
_TRAILING_STOPWORDS = re.compile(
    r"(?:\s+(?:of|the|a|an|and|or|to|for|with|in|on|by|that|which|from|as|at|into|"
    r"its|their|our|is|are|can|while|based|over|between|under))+$",
    re.I,
)
_CLAUSE_BREAKS = re.compile(
    r",|;|:| — | – | which | whereby | where | while | by (?=\w+ing\b)| via | aimed at |"
    r" designed to | in order to | so that | thereby |"
    r" to (?:address|tackle|overcome|cope with|deal with|solve|handle|mitigate|resolve) "
)
_ANAPHORIC = re.compile(r"^(?:this|these|it|they|that)\b", re.I)
# "we improve X and propose Y": the verb after a coordinating "and", same clause.
_COORDINATED = re.compile(rf"\bwe\s[^.;:]{{1,120}}?\sand\s+(?:{_VERB})\b", re.I)
# Sentences that add to a contribution stated elsewhere.
_ADD_ON = re.compile(
    r"^(?:(?:additionally|furthermore|moreover|finally|lastly|besides|in addition|also)\b"
    r"|.{0,60}?\b(?:we|paper|work)\s+(?:also|further|additionally)\s)",
    re.I,
)


@dataclass(frozen=True)
class Derived:
    title: str
    method: str | None
    long_name: str | None
    tldr: str


@dataclass(frozen=True)
class _Candidate:
    name: str
    long_name: str | None
    descriptor: str | None
    sentence_index: int
    position: int


def is_name_like(token: str, *, loose: bool = False) -> bool:
    """Does `token` look like a method's name ("AlphaDPO", "L-PPO", "Digi-Q")?

    `loose` also accepts one capitalised word ("Rewarped"), for places where the
    syntax already says a name follows ("we develop Rewarped, a ...").
    """
    if not 2 <= len(token) <= 30 or " " in token:
        return token.isupper() and len(token) == 1 and loose
    if token.casefold() in GENERIC_ACRONYMS or token.rstrip("s").casefold() in GENERIC_ACRONYMS:
        return False
    letters = [c for c in token if c.isalpha()]
    if not letters:
        return False
    uppers = sum(c.isupper() for c in token)
    if uppers >= 2 or (uppers >= 1 and any(c.isdigit() for c in token)):
        return True
    if any(c.isupper() for c in token[1:]):
        return True
    return loose and token[0].isupper() and token[1:].islower()


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"  # what re's \w matches


def _count(name: str, text: str) -> int:
    r"""How often `name` occurs as a whole token: `(?<![\w-])NAME(?!\w)`, counted as
    re.findall would, without compiling a pattern per name."""
    count, start = 0, text.find(name)
    while start >= 0:
        end = start + len(name)
        before_ok = start == 0 or not (_word(text[start - 1]) or text[start - 1] == "-")
        if before_ok and (end == len(text) or not _word(text[end])):
            count += 1
            start = text.find(name, end)
        else:
            start = text.find(name, start + 1)
    return count


def tidy_phrase(phrase: str, limit: int = DESCRIPTOR_LIMIT) -> str:
    """Cut a noun phrase down to a headline: no parentheticals, no trailing clause.

    A "that ..." clause stays when the whole phrase still fits in `limit`. The result
    ends on a whole word and never on a dangling "of"/"the"/"and".
    """
    phrase = re.sub(r"\s*\([^()]*\)", "", phrase).strip(" ,.;:“”\"'")
    phrase = re.sub(r"^to use\s+", "", phrase, flags=re.I)
    phrase = _LEADING_FILLER.sub("", phrase)
    match = _CLAUSE_BREAKS.search(phrase)
    if match and len(phrase[: match.start()].split()) >= 2:
        phrase = phrase[: match.start()]
    head, that, _ = phrase.partition(" that ")
    if that and len(phrase) > limit and len(head.split()) >= 2:
        phrase = head
    if len(phrase) > limit:
        phrase = phrase[:limit].rsplit(" ", 1)[0]
    phrase = _TRAILING_STOPWORDS.sub("", phrase.strip(" ,.;:-–—")).strip(" ,.;:-–—")
    return phrase[:1].upper() + phrase[1:] if phrase[:1].islower() else phrase


def _long_form_before(window: str, end: int) -> str | None:
    """The phrase between the trigger and "(ACR)", e.g. "a personalized FedRL framework"."""
    before = window[:end]
    # Only the last clause leads up to the acronym.
    before = re.split(rf",|;|:|\b(?:called|named|termed|as|{_VERB})\b", before, flags=re.I)[-1]
    before = re.sub(r"\s*\([^()]*\)", "", before).strip(' *“”"')
    before = _LEADING_FILLER.sub("", before)
    return before if 1 <= len(before.split()) <= 12 else None


MAX_TRIGGERS = 6  # per sentence; real abstracts have one or two
MAX_WINDOW = 400  # characters after a trigger in which its name must appear
MAX_SENTENCES = 60


# `_CONTRIBUTION.search` of a derivation's sentences, by index, for those that
# `_candidates_in` scanned (the first match of its `finditer`): `_key_sentence` and
# `_contribution` use them instead of searching the same sentences again.
Searched = dict[int, "re.Match[str] | None"]


@dataclass
class _Scans:
    """What `_method` found out about a derivation's sentences, by index, for
    `_key_sentence` and `_contribution`, so they do not scan the same sentences again:
    `_CONTRIBUTION.search` (`searched`) and
    `_may_have(_HAS_VERB, ...)` (`verbs`). A sentence missing from one is scanned."""

    searched: Searched = field(default_factory=dict)
    verbs: dict[int, bool] = field(default_factory=dict)


def _candidates_in(sentence: str, index: int, hinted: bool, searched: Searched) -> list[_Candidate]:
    """Names introduced in one sentence, closest to their trigger first. `hinted`: its
    `_may_have(_HAS_TRIGGER, sentence)` (`_hinted`). `searched` gets the sentence's
    `_CONTRIBUTION.search`, if it is scanned."""
    found: list[_Candidate] = []
    if not hinted:  # most sentences have no trigger word
        return found
    triggers = [(m, "verb") for m in _CONTRIBUTION.finditer(sentence)]
    searched[index] = triggers[0][0] if triggers else None
    # Every match of _NAMING holds one of _NAMING_WORDS (lower case, for ASCII text): a
    # sentence without any is not scanned (most hinted sentences have only a verb).
    low = sentence.lower() if sentence.isascii() else ""
    if not low or any(word in low for word in _NAMING_WORDS):
        triggers += [(m, "naming") for m in _NAMING.finditer(sentence)]
    triggers = sorted(triggers, key=lambda pair: pair[0].start())[:MAX_TRIGGERS]
    for trigger, kind in triggers:
        window = sentence[trigger.end() : trigger.end() + MAX_WINDOW]
        offset = trigger.end()
        options: list[tuple[int, _Candidate]] = []
        for acr in _ACRONYM_IN_PARENS.finditer(window):
            name = acr.group(1).strip("*")
            if not is_name_like(name):
                continue
            long_name = _long_form_before(window, acr.start())
            options.append(
                (acr.start(), _Candidate(name, long_name, None, index, offset + acr.start()))
            )
        start = _NAME_AT_START.match(window)
        if start:
            name = start.group(1)
            follows = window[start.end() :]
            ends_here = bool(re.match(r"\s*(?:[,.(;:]|$)", follows))
            loose = ends_here and (kind == "naming" or follows.lstrip().startswith(","))
            # "named MaxEnt RL with Diffusion Policy (MaxEntDP)": the acronym is the name.
            if (ends_here or not options) and is_name_like(name, loose=loose):
                expansion = re.match(r"\s*\(([A-Z][^()]{4,80})\)", follows)
                long_name = expansion.group(1) if expansion else None
                if long_name and len(re.findall(r"\b[A-Z]", long_name)) < 2:
                    long_name = None
                descriptor = None
                appositive = re.match(r"\s*(?:\([^()]*\))?\s*,\s*(.+)", follows)
                if appositive and re.match(r"(?:a|an|the)\s", appositive.group(1), re.I):
                    descriptor = appositive.group(1)
                if kind == "naming" and descriptor is None:
                    descriptor = _phrase_before_naming(sentence[: trigger.start()])
                    if descriptor is not None and len(descriptor.split()) < 3:
                        after = re.match(r"\s*,?\s*((?:to|for)\s.+)", follows)
                        if after:
                            descriptor = f"{descriptor} {after.group(1)}"
                options.append(
                    (
                        start.start(1),
                        _Candidate(name, long_name, descriptor, index, offset + start.start(1)),
                    )
                )
        for appositive_match in _APPOSITIVE_NAME.finditer(window):
            name = appositive_match.group(1)
            if is_name_like(name):
                # "introduces Sub-optimal Data Pre-training, SDP, an approach ..."
                before = window[: appositive_match.start()].strip()
                title_case = len(re.findall(r"\b[A-Z]", before)) >= 2
                long_name = before if title_case and len(before.split()) <= 8 else None
                descriptor = None if long_name else _phrase_before_naming(before)
                position = appositive_match.start(1)
                options.append(
                    (position, _Candidate(name, long_name, descriptor, index, offset + position))
                )
        if options:
            found.append(min(options, key=lambda pair: pair[0])[1])
    return found


def _phrase_before_naming(before: str) -> str | None:
    """The noun phrase that a "called X" or ", X," names: "a scalable protocol"."""
    before = before.rstrip(" ,")
    verbs = list(_CONTRIBUTION.finditer(before))
    if verbs:
        verb = verbs[-1]
        before = before[verb.end() :]
    else:
        determiners = list(re.finditer(r"\b(?:a|an|the)\s", before, re.I))
        if not determiners:
            return None
        before = before[determiners[-1].start() :]
    phrase = before.strip()
    return phrase or None


def _method(text: str, sents: list[str], scans: _Scans) -> _Candidate | None:
    read = sents[:MAX_SENTENCES]
    hints = _hinted(text, read, scans.verbs)
    pairs = enumerate(zip(read, hints, strict=True))
    candidates = [
        c for i, (s, hinted) in pairs for c in _candidates_in(s, i, hinted, scans.searched)
    ]
    if not candidates:
        return None
    return max(
        candidates, key=lambda c: (_count(c.name, text), -c.position - 10_000 * c.sentence_index)
    )


def _contribution(sents: list[str], scans: _Scans) -> tuple[int, str] | None:
    """The first sentence that states the main contribution, and the words after its verb.

    An add-on ("We also propose several practical enhancements ...", "Finally, we ...")
    is taken only when no sentence states a main contribution.
    """
    add_on: tuple[int, str] | None = None
    searched, known = scans.searched, scans.verbs
    verbs = [
        known[index] if index in known else _may_have(_HAS_VERB, sentence)
        for index, sentence in enumerate(sents)
    ]
    for pattern in (_CONTRIBUTION, _COORDINATED, _FINDING, _INVESTIGATE):
        if pattern is _INVESTIGATE and add_on:
            return add_on  # an add-on still beats a motivation ("to understand how")
        for index, sentence in enumerate(sents):
            # Necessary parts of each pattern first (_FINDING and _INVESTIGATE are
            # case-sensitive): a sentence without them cannot match.
            if pattern is _FINDING:
                if " that" not in sentence:
                    continue
            elif pattern is _INVESTIGATE:
                if "to " not in sentence:
                    continue
            elif not verbs[index]:
                continue
            if pattern is _CONTRIBUTION and index in searched:
                match = searched[index]
            else:
                match = pattern.search(sentence)
            if match and not _ANAPHORIC.match(sentence[match.end() :].strip()):
                if not _ADD_ON.search(sentence):
                    return index, sentence[match.end() :].strip()
                add_on = add_on or (index, sentence[match.end() :].strip())
    return add_on


def _key_sentence(sents: list[str], method: _Candidate | None, scans: _Scans) -> str:
    """The sentence for the TL;DR: the one introducing the method, if it says enough."""
    if method is not None:
        index = method.sentence_index
        sentence = sents[index]
        searched = scans.searched
        match = searched[index] if index in searched else _CONTRIBUTION.search(sentence)
        if match and len(sentence) >= 60:
            return sentence
    found = _contribution(sents, scans)
    if found is not None:
        return sents[found[0]]
    if method is not None:
        return sents[method.sentence_index]
    return sents[0] if sents else ""


_NAMED_CONCEPT = re.compile(
    r"\b(?:we )?(?:name|call|term) (?:this|it)(?: (?:issue|problem|phenomenon|effect))?"
    r"(?: as)? (?P<concept>[a-z][\w-]*(?: [a-z][\w-]*){1,4})(?= and\b|[,.;]|$)"
)


def _headline(sents: list[str], scans: _Scans) -> str:
    """A headline for an abstract that names no method: what it names or contributes."""
    for sentence in sents:
        concept = _NAMED_CONCEPT.search(sentence.lower()) if "this" in sentence else None
        if concept:
            # "We name this issue task representation shift": that is the paper's subject.
            phrase = sentence[concept.start("concept") : concept.end("concept")]
            return phrase[:1].upper() + phrase[1:]
    found = _contribution(sents, scans)
    if found is not None:
        phrase = tidy_phrase(found[1])
        if len(phrase.split()) >= 2:
            return phrase
    return tidy_phrase(sents[0]) if sents else ""


def _finish_title(title: str) -> str:
    title = title.strip()
    if len(title) > TITLE_LIMIT:
        title = title[:TITLE_LIMIT].rsplit(" ", 1)[0]
        title = _TRAILING_STOPWORDS.sub("", title).rstrip(" ,;:-–—")
    return title


_PREAMBLE = re.compile(
    r"^(?!we\b|this\b|our\b)(?:[^;()]|\([^()]*\)){0,160}?,\s+"
    r"(?=(?:we|this paper|this work|our|in this)\b)",
    re.I,
)


_IN_THIS_PAPER = re.compile(r"^(?:In this (?:paper|work|study)|Here)\s*,?\s+", re.I)


def tldr_from(sentence: str) -> str:
    """A key sentence as a TL;DR: lead-in phrases dropped, about 200 characters at most."""
    sentence = _PREAMBLE.sub("", sentence)
    sentence = _IN_THIS_PAPER.sub("", sentence)
    sentence = sentence[:1].upper() + sentence[1:]
    return shorten(sentence, TLDR_LIMIT)


def derive(abstract: str, *, titled: bool = False) -> Derived:
    """Derive the method name, display title and TL;DR of an abstract (Markdown/LaTeX ok).

    `titled`: the paper has a real title, so none is derived (`title` is ""): finding a
    headline would cost enrichment time for nothing."""
    text = plain_text(abstract)
    if len(text) > DERIVE_MAX_CHARS:
        cut = text.rfind(" ", DERIVE_MAX_CHARS // 2, DERIVE_MAX_CHARS)
        text = text[: cut if cut > 0 else DERIVE_MAX_CHARS]
    sents = sentences(text)
    scans = _Scans()
    method = _method(text, sents, scans)
    if titled:
        title = ""
    elif method is not None:
        descriptor = method.long_name or method.descriptor
        described = tidy_phrase(descriptor) if descriptor else ""
        if described.casefold() == method.name.casefold():
            described = ""
        title = f"{method.name}: {described}" if described else method.name
    else:
        title = _headline(sents, scans)
    if not titled:
        title = _finish_title(title) or shorten(text, 80, ellipsis="").strip() or "Untitled"
    tldr = tldr_from(_key_sentence(sents, method, scans) or text)
    return Derived(
        title=title,
        method=method.name if method else None,
        long_name=tidy_phrase(method.long_name) if method and method.long_name else None,
        tldr=tldr,
    )
