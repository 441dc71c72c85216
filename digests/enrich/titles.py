"""Display titles, method names and TL;DRs for abstracts that come without a title.

A method is named where the abstract introduces one ("we propose AlphaDPO"; the one it
repeats most wins); the title is "Name: what it is", else a headline cut from the key
sentence that states the contribution, with 3 words that say something (the paper's field
added when it has fewer); the TL;DR is that sentence, about 200 characters, without
clauses that point back at a problem it does not name where it reads without them. Only
the first `DERIVE_MAX_CHARS` characters are read.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
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


def tidy_phrase(phrase: str, limit: int = DESCRIPTOR_LIMIT, *, clauses: bool = True) -> str:
    """Cut a noun phrase down to a headline: no parentheticals, no trailing clause
    (`clauses` False: clauses stay, only `limit` cuts).

    A "that ..." clause stays when the whole phrase still fits in `limit`. The result
    ends on a whole word and never on a dangling "of"/"the"/"and".
    """
    phrase = re.sub(r"\s*\([^()]*\)", "", phrase).strip(" ,.;:“”\"'")
    phrase = re.sub(r"^to use\s+", "", phrase, flags=re.I)
    phrase = _LEADING_FILLER.sub("", phrase)
    match = _CLAUSE_BREAKS.search(phrase) if clauses else None
    head_words = phrase[: match.start()].lower().split() if match else []
    # "the first method to ...": the clause is what the head means.
    if match and len(head_words) >= 2 and not _QUALIFIERS.intersection(head_words[-2:]):
        phrase = phrase[: match.start()]
    head, that, _ = phrase.partition(" that ")
    if clauses and that and len(phrase) > limit and len(head.split()) >= 2:
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
    words = before.split()
    # "based on which we exploit an unbiased risk estimator (URE)": the words the
    # acronym's letters spell, when the clause holds more; not the object of a
    # preposition ("a model based on graph convolutional networks (GCNs)").
    acronym = re.match(r"\(([A-Za-z-]*)\)", window[end:])
    letters = [c.lower() for c in acronym.group(1).rstrip("s") if c.isalpha()] if acronym else []
    for size in range(1, len(words) if len(letters) >= 2 else 0):
        tail = words[-size:]
        if [part[:1].lower() for word in tail for part in word.split("-") if part] == letters:
            if words[-size - 1].lower() not in _PREPOSITIONS:
                words, before = tail, " ".join(tail)
            break
    return before if 1 <= len(words) <= 12 else None


_PREPOSITIONS = frozenset(
    "on with using of for via by to in from over under into through and or".split()  # noqa: SIM905
)
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


# What "these issues" may stand for: a reader of the TL;DR alone never saw it named.
_BACK_NOUN = (
    r"(?:issues?|problems?|challenges?|limitations?|difficult(?:y|ies)|drawbacks?|"
    r"shortcomings?|gaps?|questions?|concerns?|obstacles?|weakness(?:es)?|"
    r"deficienc(?:y|ies)|bottlenecks?|needs?|goals?|requirements?|limits?|hope)"
)
_REFERS_BACK = re.compile(
    rf"\b(?:these|those|this|such|the above|the aforementioned|both)\s+"
    rf"(?:[\w-]+\s+){{0,2}}?{_BACK_NOUN}\b",
    re.I,
)
_BACK_OBJECT = (
    r"(?:these|those|this|such|the above|the aforementioned|both|the)\s+"
    rf"(?:[\w-]+\s+){{0,2}}?{_BACK_NOUN}"
)
_BACK_VERB = (
    r"(?:address|tackl|overcom|cope|deal|solv|handl|mitigat|resolv|alleviat|remed|fill|"
    r"bridg|clos|fix|answer|circumvent|avoid|remov|eliminat|meet)\w*(?:\s+with)?"
)
# Clauses that only point back ("... to address these issues."): they go; one that goes
# on with "and" leaves what follows ("to address these issues and bring X" -> "to bring X").
# Between "to" and its verb only an adverb ("to better address"): wider, "to GradNorm that
# addresses" would be taken for one clause.
_BACK_TAIL = re.compile(
    r",?\s+(?:(?:(?:in order|so as|aiming|aimed|designed)\s+)?(?P<to>to)\s+(?:\w+ly\s+|better\s+)?"
    rf"{_BACK_VERB}|(?P<that>which|that)\s+{_BACK_VERB}|(?:for|by|adapted to|to)"
    rf"(?:\s+\w+ing)?)\s+{_BACK_OBJECT}(?:(?=\s*[.,;:]|\s*$|\s+(?P<by>by|while|with|through|via)\s)"
    r"|\s+(?P<and>and)\s+(?=\w))",
    re.I,
)
_BACK_LEAD = re.compile(
    rf"^(?:to|in order to|so as to)\s+{_BACK_VERB}\s+{_BACK_OBJECT}\s*[,:]?\s+"
    r"(?:by\s+(?=\w+ing\b))?",
    re.I,
)
# Words before a "to ..." or "that ..." clause that need it: "we propose to solve this
# problem", "our goal is to ...", "as a way to ...", "the first method to ...".
_NEEDS_CLAUSE = frozenset(
    (  # noqa: SIM905
        "propose proposes proposed aim aims aimed seek seeks try tries attempt attempts strive "
        "strives intend intends is are was were be been way ways means how able used needed "
        "first only robust"
    ).split()
)
_QUALIFIERS = frozenset(("first", "only"))
# "such a justification for X" says what it is: "a justification for X". A bare "such an
# adversary" means the one described before, and stays.
_SUCH_A = re.compile(r"\bsuch (an?)(?= [\w-]+ (?:for|of|that|which|to|in|with|on)\b)", re.I)


def _unlinked(tail: re.Match[str], headline: bool = False) -> str:
    """What replaces a clause that points back: nothing, or its link to what follows; the
    clause itself where the sentence needs it (a `headline` needs no verb for a "by ...")."""
    before = tail.string[max(0, tail.start() - 60) : tail.start()].lower().split()
    if before and (before[-1].strip(",") in _NEEDS_CLAUSE or _QUALIFIERS.intersection(before[-3:])):
        return tail.group(0)
    if (tail.group("that") or tail.group("to")) and tail.group("by") and not headline:
        return tail.group(0)  # "X that addresses this problem by Y-ing": "by" is its verb's
    if not tail.group("and"):
        # "an algorithm to address this challenge." ends on the clause that says what for.
        return tail.group(0) if _bare_head(before) and not tail.group("by") else ""
    return " to " if tail.group("to") else " that " if tail.group("that") else " and "


_DETERMINERS = frozenset("a an the two three several some our".split())  # noqa: SIM905


def _bare_head(words: list[str]) -> bool:
    """Do `words` end in a noun phrase that says nothing without its clause ("an
    algorithm", "as a novel approach")?"""
    last = words[-4:]
    starts = [i for i, word in enumerate(last) if word in _DETERMINERS]
    head = [word.strip(",") for word in last[starts[-1] + 1 :]] if starts else []
    return bool(head) and all(word in _FUNCTION_WORDS for word in head)


def _without_back_references(sentence: str, *, headline: bool = False) -> str:
    """`sentence` without clauses that only point back, where it reads without them, and
    "such a X for Y" made "a X for Y"; a `headline` is a phrase, not a sentence."""
    if "such" not in sentence and _REFERS_BACK.search(sentence) is None:
        return sentence  # most sentences: nothing to do
    sentence = _BACK_LEAD.sub("", sentence)
    sentence = _BACK_TAIL.sub(lambda tail: _unlinked(tail, headline), sentence)
    sentence = _SUCH_A.sub(r"\1", sentence)
    return sentence[:1].upper() + sentence[1:]


def _tldr_sentence(sents: list[str], chosen: str) -> str:
    """The key sentence made readable on its own, or another contribution sentence when
    it still points back at something it never names, or says too little without it; the
    key sentence as it is when neither reads on its own."""
    if _NAMING_ISSUE.match(chosen):  # "We name this issue X and ..." names what it means
        return _NAMING_ISSUE.sub("We identify ", chosen, count=1)
    cleaned = _without_back_references(chosen)
    if cleaned == chosen:
        return chosen
    if _REFERS_BACK.search(cleaned) is None and len(tldr_from(cleaned)) >= 60:
        return cleaned
    others = [s if s is not chosen else "" for s in sents]
    found = _contribution([_without_back_references(s) for s in others], _Scans())
    if found is not None:
        other = others[found[0]]
        # "This significantly improves ..." points back as much as the key sentence.
        if _REFERS_BACK.search(other) is None and not _ANAPHORIC.match(other):
            return other
    return chosen


def _key_sentence(sents: list[str], method: _Candidate | None, scans: _Scans) -> str:
    """The sentence for the TL;DR: the one introducing the method, if it says enough."""
    if method is not None:
        index = method.sentence_index
        sentence = sents[index]
        searched = scans.searched
        match = searched[index] if index in searched else _CONTRIBUTION.search(sentence)
        if match and len(sentence) >= 60:
            return sentence
    else:
        named = next(filter(None, map(_naming_and_result, sents)), None)
        if named:
            return named
    found = _contribution(sents, scans)
    if found is not None:
        return sents[found[0]]
    if method is not None:
        return sents[method.sentence_index]
    return sents[0] if sents else ""


def _naming_and_result(sentence: str) -> str | None:
    """A sentence that names the paper's subject and goes on with what it shows ("We name
    this issue X and prove that ..."): it states the contribution and its result."""
    if not _NAMING_LEAD.match(sentence):
        return None
    concept = _named_concept(sentence)
    return sentence if concept and sentence[concept.end() :].startswith(" and ") else None


def _named_concept(sentence: str) -> re.Match[str] | None:
    """`_NAMED_CONCEPT` searched in `sentence` lower-cased ("We call it X", "name this")."""
    if "this" not in sentence and " it " not in sentence:
        return None  # most sentences: neither word
    return _NAMED_CONCEPT.search(sentence.lower())


_NAMED_CONCEPT = re.compile(
    r"\b(?:we )?(?:name|call|term) (?:this|it)(?: (?:issue|problem|phenomenon|effect))?"
    r"(?: as)? (?P<concept>[a-z][\w-]*(?: [a-z][\w-]*){1,4})(?= and\b|[,.;]|$)"
)
# "... and show it halves forgetting": what a named subject does, after its name.
_NAMED_RESULT = re.compile(
    r" and (?:\w+ly )?(?:show|prove|demonstrate|find)s? (?:that )?(?:it|this|they) (.+)", re.I
)
# "We name this issue X and prove ...": stated without pointing back.
_NAMING_LEAD = re.compile(
    r"^(?:we )?(?:name|call|term) (?:this|it)(?: (?:issue|problem|phenomenon|effect))?(?: as)? ",
    re.I,
)
# What the TL;DR says as "We identify X": a named issue, never a named method or setup
# ("We call this new setup Pareto-Front Learning" stays as it is).
_NAMING_ISSUE = re.compile(
    r"^(?:we )?(?:name|call|term) (?:this|it) (?:issue|problem|phenomenon|effect)(?: as)? ",
    re.I,
)

# Words that alone say nothing about a paper; a title needs 3 words besides them.
_FUNCTION_WORDS = frozenset(
    (  # noqa: SIM905
        "a an the of for and or to in on with by from via as at into over under through "
        "towards toward is are be can do does not no its it this that these their our we "
        "using use based new novel beyond than when what how why which while without vs "
        "between among about against more most less all any each other one two such "
        "simple effective efficient general generic practical principled unified first "
        "proposed improved better alternative several various model models method methods "
        "approach approaches framework frameworks technique techniques algorithm algorithms "
        "scheme schemes strategy system systems procedure paradigm solution solutions tool "
        "way ways type class family set paper work study analysis results problem task"
    ).split()
)
_WORD_PIECE = re.compile(r"[a-z0-9]+")
# A phrase that starts like these is a sentence's opening, not a headline.
_OPENING_WORDS = frozenset(
    (  # noqa: SIM905
        "in we it to when while although though paper recent recently empirically there "
        "this these our here since as if however moreover it's existing most many despite "
        "given although unlike by based so with for specifically furthermore additionally "
        "finally thus hence then worse current"
    ).split()
)


def specific_words(phrase: str) -> int:
    """How many words of `phrase` say something on their own (not "of", "novel", "method")."""
    return sum(w not in _FUNCTION_WORDS for w in _WORD_PIECE.findall(phrase.lower()))


def _reads_alone(title: str) -> bool:
    """Does `title` (or, in "Name: what it is", what it is) start like a headline, and
    point back at nothing it does not name ("... that addresses this problem")?"""
    described = title.split(": ", 1)[-1]
    first = described.split(maxsplit=1)[0].lower() if described.strip() else ""
    return first.strip("“\"'") not in _OPENING_WORDS and _REFERS_BACK.search(title) is None


def _says_enough(title: str) -> bool:
    return specific_words(title) >= 3 and _reads_alone(title)


_DEFINED = re.compile(r"\(([A-Za-z][A-Za-z0-9-]{1,11})\)")


def _field(text: str) -> str | None:
    """The long form of the first acronym the abstract defines, the paper's field or
    subject as it names it: "Offline meta reinforcement learning (OMRL)"."""
    for match in _DEFINED.finditer(text, 0, 3_000):
        letters = [c.lower() for c in match.group(1).rstrip("s") if c.isalpha()]
        if not 2 <= len(letters) <= 6 or sum(c.isupper() for c in match.group(1)) < 2:
            continue
        before = text[max(0, match.start() - 160) : match.start()].split()
        initials: list[str] = []
        taken = 0
        for word in reversed(before):
            parts = [p for p in re.split(r"[-/]", word.strip("“”\"'")) if p]
            if not parts or not parts[0][:1].isalpha():
                break
            taken += 1
            if word.lower() in ("of", "and", "for", "the"):
                continue
            initials[:0] = [p[0].lower() for p in parts]
            if len(initials) >= len(letters):
                break
        if initials == letters and taken >= 2:
            return " ".join(before[-taken:]).strip("“”\"'")
    return None


def _with_field(phrase: str, field_name: str | None) -> str:
    """ "Task representation shift" -> "... in offline meta reinforcement learning"."""
    if not field_name or not phrase:
        return phrase
    have = set(_WORD_PIECE.findall(phrase.lower()))
    new = [w for w in _WORD_PIECE.findall(field_name.lower()) if w not in _FUNCTION_WORDS]
    if not new or all(w in have for w in new):
        return phrase
    if all(word[:1].islower() for word in field_name.split()[1:]):
        field_name = field_name[:1].lower() + field_name[1:]  # "Offline meta RL" -> "offline ..."
    return f"{phrase} in {field_name}"


_AFTER_NAME = re.compile(
    r"^\s*(?:\([^()]*\)\s*)?(?:,\s*)?(?:(?P<verb>which|that)\s+(?P<clause>.+)"
    r"|(?:(?:as|is)\s+|[^,()]{3,80},\s*)?(?P<noun>(?:an?|the)\s.+)|(?P<purpose>for\s.+))",
    re.I,
)


def _after_name(sentence: str, method: _Candidate, head: str) -> str:
    """What the method's sentence says after its name: "BiGCN, which represents a graph
    ..." -> "Model that represents a graph ..." (`head`: the generic noun, if any)."""
    start = sentence.find(method.name)
    found = _AFTER_NAME.match(sentence[start + len(method.name) :]) if start >= 0 else None
    if found is None:
        return ""
    if found.group("noun"):
        return tidy_phrase(found.group("noun"))
    if found.group("purpose"):
        rest = found.group("purpose")
        return tidy_phrase(f"{head} {rest}" if head else rest[4:])
    clause = found.group("clause")
    return tidy_phrase(f"{head} that {clause}" if head else clause)


_LATER_BREAKS = re.compile(
    r"[,;:]| — | – | whereby | thereby | so that | where | while | via | by (?=\w+ing\b)"
)


def _extended(phrase: str, limit: int = 90) -> str:
    """A contribution's phrase with its first clause kept: "distinguishability query,
    enabling humans to ..." -> "Distinguishability query enabling humans to ..."."""
    phrase = _without_back_references(phrase, headline=True)
    phrase = re.sub(r"\s*\([^()]*\)", "", phrase)
    phrase = re.sub(r",?\s+which (?:is|are)\s+", " ", phrase)
    phrase = re.sub(r",?\s+(?:which|that)\s+", " that ", phrase)
    phrase = re.sub(r",\s+(?=\w+ing\b)", " ", phrase)
    ends = [cut.start() for cut in _LATER_BREAKS.finditer(phrase)] + [len(phrase)]
    head = ""
    for end in ends:  # the shortest head that says enough
        head = tidy_phrase(phrase[:end], limit, clauses=False)
        if _says_enough(head) or len(head) >= limit * 0.8:
            break
    return head


def _object(sentence: str) -> str:
    """What a sentence is about, as a phrase: its lead-in and "we show that" dropped."""
    sentence = _IN_THIS_PAPER.sub("", _PREAMBLE.sub("", sentence))
    sentence = re.sub(
        r"^(?:we|this (?:paper|work|study)|our (?:paper|work))\s+(?:\w+ly\s+)?[a-z]+\s+"
        r"(?:that\s+|how\s+|whether\s+)?",
        "",
        sentence,
        flags=re.I,
    )
    return sentence


class _Field:
    """The abstract's field (`_field`), found once and only when a title needs it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.found: str | None = None
        self.done = False

    def __call__(self) -> str | None:
        if not self.done:
            self.found, self.done = _field(self.text), True
        return self.found


def _phrases(sents: list[str], scans: _Scans) -> Iterator[str]:
    """Headline candidates, best first: the contribution's phrase, cut short, then with
    its first clause; then what each of the first sentences is about."""
    found = _contribution(sents, scans)
    if found is not None:
        yield tidy_phrase(found[1])
        yield _extended(found[1])
    for sentence in sents[:3]:
        yield _extended(_object(sentence))


def _headline(sents: list[str], scans: _Scans, field_name: _Field) -> str:
    """A headline for an abstract that names no method: what it names or contributes,
    with its field when the phrase alone says too little."""
    named: list[tuple[str, str, int]] = []
    for sentence in sents:
        concept = _named_concept(sentence)
        if concept:
            # "We name this issue task representation shift": that is the paper's subject.
            phrase = sentence[concept.start("concept") : concept.end("concept")]
            phrase = phrase[:1].upper() + phrase[1:]
            named.append((phrase, sentence, concept.end("concept")))
            if _says_enough(widened := _with_field(phrase, field_name())):
                return widened
    for phrase, sentence, end in named:
        # "We call it Elastic Replay and show it halves forgetting": what it does.
        result = _NAMED_RESULT.match(sentence, end)
        does = tidy_phrase(result.group(1)) if result else ""
        if does and _says_enough(done := f"{phrase} {does[:1].lower()}{does[1:]}"):
            return done
    seen = [phrase for phrase, _, _ in named]
    for phrase in _phrases(sents, scans):
        if _says_enough(phrase):
            return phrase
        seen.append(phrase)
    for phrase in seen:
        widened = _with_field(phrase, field_name())
        if _says_enough(widened):
            return widened
    # Nothing says enough: a phrase that reads as a headline, else the field.
    readable = (phrase for phrase in seen if len(phrase.split()) >= 2 and _reads_alone(phrase))
    fallback = next(readable, None) or field_name()
    fallback = fallback[:1].upper() + fallback[1:] if fallback else fallback
    return fallback or next((p for p in seen if len(p.split()) >= 2), seen[0] if seen else "")


def _method_title(sents: list[str], method: _Candidate, scans: _Scans, field_name: _Field) -> str:
    """ "Name: what it is", from its long form, its description, or what its sentence says
    after the name; else the field, or the abstract's headline."""
    descriptor = method.long_name or method.descriptor
    described = tidy_phrase(descriptor) if descriptor else ""
    if described.casefold() == method.name.casefold():
        described = ""
    title = f"{method.name}: {described}" if described else method.name
    if _says_enough(title):
        return title
    after = _after_name(sents[method.sentence_index], method, described)
    if after and _says_enough(f"{method.name}: {after}"):
        return f"{method.name}: {after}"
    if described:
        widened = f"{method.name}: {_with_field(described, field_name())}"
        if _says_enough(widened):
            return widened
    headline = _headline(sents, scans, field_name)
    if headline.startswith(method.name) and _says_enough(headline):
        return headline  # "GShard scaling with conditional computation"
    if _says_enough(headline):
        return f"{method.name}: {headline[:1].upper()}{headline[1:]}"
    in_field = _with_field(method.name, field_name())
    if _says_enough(in_field):
        return in_field
    if _reads_alone(title):
        return title
    if headline and _reads_alone(headline):
        return f"{method.name}: {headline[:1].upper()}{headline[1:]}"
    return method.name


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
        title = _method_title(sents, method, scans, _Field(text))
    else:
        title = _headline(sents, scans, _Field(text))
    if not titled:
        title = _finish_title(title) or shorten(text, 80, ellipsis="").strip() or "Untitled"
    key = _key_sentence(sents, method, scans)
    tldr = tldr_from(_tldr_sentence(sents, key) if key else text)
    return Derived(
        title=title,
        method=method.name if method else None,
        long_name=tidy_phrase(method.long_name) if method and method.long_name else None,
        tldr=tldr,
    )
