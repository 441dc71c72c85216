"""The `/papers` grammar, declared once: the parser, `help`, the Slack usage hint and
the Discord command group are all built from `VERBS`.
"""

from __future__ import annotations

import bisect
import difflib
import logging
import re
import shlex
from dataclasses import dataclass, field

from digests.safe_text import strip_unsafe

log = logging.getLogger(__name__)

COMMAND = "/papers"
ME_FLAG = "--me"
MAX_INPUT = 2000
# Typed quotes as plain ones, one character for one, so they quote: English and German
# double and single quotes (`„…“`, `‚…‘`), guillemets (`«…»`, `‹…›`) and the full-width
# `＂` of Chinese and Japanese keyboards.
_SMART_QUOTES = str.maketrans(
    {
        "“": '"', "”": '"', "„": '"', "‟": '"', "«": '"', "»": '"', "＂": '"',
        "‘": "'", "’": "'", "‚": "'", "‛": "'", "‹": "'", "›": "'", "＇": "'",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Param:
    name: str
    help: str
    required: bool = True
    rest: bool = False  # takes all the remaining text
    # A search query: any text is one, a quote left open too (`find The "Bitter Lesson`,
    # a title pasted in part); nothing is stored, so there is no guess to refuse.
    query: bool = False
    choices: tuple[str, ...] = ()
    # This word makes a `changes` verb a change: without it the verb only reads
    # (`feedback` shows, `feedback reset` clears; see `Command.changes`).
    changes: bool = False
    mine: str = ""  # `help` where commands act on the user's own digest; empty: `help`

    @property
    def usage(self) -> str:
        shown = "|".join(self.choices) if self.choices else self.name
        return f"<{shown}>" if self.required else f"[{shown}]"

    def help_for(self, personal: bool) -> str:
        """What `help` says of it: on a personal digest (`mine`), or a channel's."""
        return (self.mine or self.help) if personal else self.help


@dataclass(frozen=True)
class Verb:
    name: str
    help: str
    params: tuple[Param, ...] = ()
    example: str = ""
    changes: bool = False  # changes the channel's settings: adapters check permission
    slow: bool = False  # may take more than a moment: adapters acknowledge first
    # Takes `--me`: the command acts on the user's own digest (a direct message) instead of
    # the channel's; anyone may, so adapters skip the permission check (`Command.needs_manager`).
    personal: bool = False
    # What `help` says where every command acts on the user's own digest (typed in a Slack
    # DM): "this channel" there would be wrong. Empty: `help` says it already.
    mine: str = ""
    # Words people type for this verb that are not it (`search` for `find`): an unknown
    # command that is one of them is told this verb, never run as it.
    also: tuple[str, ...] = ()

    @property
    def usage(self) -> str:
        return self.usage_for(personal=False)

    def usage_for(self, personal: bool) -> str:
        """The usage; where every command is already about the user's own digest
        (`personal`), without `[--me]`."""
        flag = [f"[{ME_FLAG}]"] if self.personal and not personal else []
        return " ".join([COMMAND, self.name, *flag, *(param.usage for param in self.params)])

    def help_for(self, personal: bool) -> str:
        """What `help` says of it: on a personal digest (`mine`), or a channel's."""
        return (self.mine or self.help) if personal else self.help


VERBS: tuple[Verb, ...] = (
    Verb("help", "Show the commands, or how to use one.",
         (Param("command", "A command to explain", required=False),), "help subscribe"),
    Verb("find", "Find papers by words, an author's name, a method name or an acronym; "
         "-word leaves papers out.",
         (Param("query", "Words to look for, e.g. diffusion policy, Sergey Levine, or "
                "offline rl -diffusion", rest=True, query=True),),
         "find offline rl -diffusion", slow=True, also=("search", "lookup")),
    Verb("show", "Show one paper: title, venue, TL;DR, abstract and links.",
         (Param("id", "A paper id from find or a digest, e.g. p380c62ca5bf30379"),),
         "show p380c62ca5bf30379"),
    Verb("similar", "Find papers similar to one paper.",
         (Param("id", "A paper id from find or a digest"),), "similar p380c62ca5bf30379",
         slow=True),
    Verb("topics", "List the topics this channel can subscribe to.",
         mine="List the topics your personal digest can follow."),
    Verb("subscribe", "Follow a topic from the catalog, or any free text in quotes.",
         (Param("topic", 'A topic id such as offline-rl, or "free text"', rest=True),),
         'subscribe offline-rl', changes=True, personal=True, also=("follow", "sub", "add")),
    Verb("unsubscribe", "Stop following a topic (its id, or its number from list).",
         (Param("topic", "A topic id, or a subscription number from list", rest=True),),
         "unsubscribe offline-rl", changes=True, personal=True,
         also=("unfollow", "unsub", "remove")),
    Verb("list", "Show this channel's subscriptions and schedule.", personal=True,
         mine="Show what your personal digest follows, and when it comes."),
    Verb("schedule", "Set when this channel's digest comes: daily, weekdays or one weekday.",
         (Param("weekday", "daily, weekdays (Monday to Friday), or monday .. sunday"),
          Param("time", "24-hour time, e.g. 09:00"),
          Param("timezone", "An IANA timezone, e.g. Europe/Berlin (default: the current one)",
                required=False)),
         "schedule monday 09:00 Europe/Berlin", changes=True, personal=True,
         mine="Set when your personal digest comes: daily, weekdays or one weekday."),
    Verb("backlog", "Let older, never-sent papers fill a digest's empty slots (default: off).",
         (Param("state", "on or off", choices=("on", "off")),), "backlog on", changes=True,
         personal=True,
         mine="Let older, never-sent papers fill your personal digest's empty slots "
              "(default: off)."),
    Verb("digest", "Preview this channel's digest for the current period.",
         (Param("mode", "preview, the default: nothing is recorded or sent", required=False,
                choices=("preview",)),), "digest preview",
         slow=True, personal=True,
         mine="Preview your personal digest for the current period."),
    Verb("status", "Show the paper store, this channel's schedule and its last digest.",
         personal=True,
         mine="Show the paper store, your personal digest's schedule and its last digest."),
    Verb("resume", "Resume delivery to this channel after a pause, once its cause is fixed.",
         changes=True, personal=True,
         mine="Resume your personal digest after a pause, once I may send you messages."),
    Verb("sources", "List where new papers come from: each source, its last fetch and errors."),
    Verb("why", "Explain why a paper was picked for this channel: topic, terms, feedback.",
         (Param("id", "A paper id, or its number in the digest (3 or #3): the last one "
                      "built, or before any, the preview"),), "why p380c62ca5bf30379",
         personal=True,
         mine="Explain why a paper was picked for you: topic, terms, feedback."),
    Verb("feedback", "Show this channel's 👍/👎 per topic; reset clears a topic's feedback.",
         (Param("action", "reset: clear a topic's feedback (changes the channel)",
                required=False, choices=("reset",), changes=True,
                mine="reset: clear a topic's feedback"),
          Param("topic", "The topic to reset: its id, or its number from list",
                required=False, rest=True)),
         "feedback reset offline-rl", changes=True, personal=True,
         mine="Show your 👍/👎 per topic; reset clears a topic's feedback."),
    Verb("saved", "List your saved papers (only you see them); export gives them as BibTeX.",
         (Param("action", "export: a BibTeX file of them", required=False,
                choices=("export",)),), "saved export"),
    Verb("bibtex", "Give one paper's BibTeX entry.",
         (Param("id", "A paper id from a digest or find"),), "bibtex p380c62ca5bf30379"),
)  # fmt: skip

VERBS_BY_NAME = {verb.name: verb for verb in VERBS}


@dataclass(frozen=True)
class Command:
    verb: Verb
    args: dict[str, str] = field(default_factory=dict)
    quoted: bool = False  # the rest argument was given in quotes (free text)
    me: bool = False  # `--me`: the user's own digest, not the channel's

    @property
    def changes(self) -> bool:
        """Whether this command changes the channel: its verb's `changes`, and when the verb
        marks a sub-word (`Param.changes`), only with that word given (`feedback` reads,
        `feedback reset` changes). Adapters that check `Verb.changes` alone ask for a
        manager for the reading form too: stricter, never looser."""
        marked = [param.name for param in self.verb.params if param.changes]
        return self.verb.changes and (not marked or any(name in self.args for name in marked))

    @property
    def needs_manager(self) -> bool:
        """Whether adapters check that the user may change the channel: a personal
        command changes only the user's own digest, which anyone may."""
        return self.changes and not self.me


class ParseError(ValueError):
    """Text that is not a valid command. `message` says why; `verb` is known if any, and
    then `given` is the text after it (without `--me`; `me`: it had one)."""

    def __init__(
        self,
        message: str,
        verb: Verb | None = None,
        suggestion: str | None = None,
        given: str = "",
        me: bool = False,
    ):
        super().__init__(message)
        self.message = message
        self.verb = verb
        self.suggestion = suggestion
        self.given = given
        self.me = me


# `--me` as typed: any case, and with the dashes autocorrect makes of `--` (an em or en
# dash: macOS and iOS "smart punctuation"), or one hyphen. A word of its own, outside quotes.
_ME_WORD = re.compile(r"[-\u2010-\u2015\u2212]{1,2}me", re.IGNORECASE)
# The flag typed against a quote, without the space (`--me"diffusion policy"`,
# `"diffusion policy"--me`): the flag beside the quoted text, not part of a free text.
_ME_GLUED = re.compile(
    rf"(?<!\S)({_ME_WORD.pattern})(?=[\"'])|(?<=[\"'])({_ME_WORD.pattern})(?!\S)", re.IGNORECASE
)


def is_me_flag(word: str) -> bool:
    """Whether the word is the `--me` flag as people type it (`--ME`, `—me`)."""
    return _ME_WORD.fullmatch(word) is not None


def _take_me(text: str) -> tuple[str, bool]:
    """The command without its `--me` flags (`is_me_flag`), and whether it had one. A
    flag counts anywhere outside quotes (as `parse` finds them: `_quotes`), once or more;
    inside quotes it is text. The text around a flag is kept as typed."""
    text = _ME_GLUED.sub(lambda glued: f" {glued.group()} ", text)
    inside, _ = _quotes(text)
    flags = [
        word
        for word in re.finditer(r"\S+", text)
        if is_me_flag(word.group()) and not any(a <= word.start() <= b for a, b in inside)
    ]
    for word in reversed(flags):
        text = text[: word.start()].rstrip() + " " + text[word.end() :].lstrip()
    return text.strip(), bool(flags)


def _closing(text: str, start: int) -> int | None:
    """Where the quote opened at `start` closes: the next same quote; a `'` only where no
    letter or digit follows it (in `'Bellman's equation'` the apostrophe closes nothing)."""
    quote = text[start]
    for end in range(start + 1, len(text)):
        if text[end] == quote and (
            quote == '"' or end + 1 == len(text) or not text[end + 1].isalnum()
        ):
            return end
    return None


def _quotes(text: str) -> tuple[list[tuple[int, int]], str | None]:
    """The closed quotes in `text` (smart quotes already made plain), as (opening,
    closing) positions, and the `"` opened and never closed, or None. A quote opens where
    no letter or digit comes before it: the apostrophe of `Bellman's` or `policies'`
    opens nothing. A `'` never closed is an apostrophe, not a quote: `'til dawn`, `'90s`,
    `rock 'n roll` (and macOS's `‘90s`) mean just that; only a `"` (`“`, `„`, `«`) left
    open is surely a quote."""
    closed: list[tuple[int, int]] = []
    # Where each quote can close (`_closing`'s rule), looked up instead of scanned for:
    # a scan from each `'` that never closes is quadratic.
    closers = {
        quote: [
            at
            for at, char in enumerate(text)
            if char == quote and (quote == '"' or at + 1 == len(text) or not text[at + 1].isalnum())
        ]
        for quote in "\"'"
    }
    at = 0
    while at < len(text):
        if text[at] in "\"'" and (at == 0 or not text[at - 1].isalnum()):
            after = closers[text[at]]
            found = bisect.bisect_right(after, at)
            end = after[found] if found < len(after) else None
            if end is not None:
                closed.append((at, end))
                at = end + 1
                continue
            if text[at] == '"':
                return closed, '"'
        at += 1
    return closed, None


def unclosed_quote(text: str) -> str | None:
    """The quote opened in `text` and never closed, or None: only a `"` (a `'` never
    closed is an apostrophe; `_quotes`)."""
    return _quotes(text)[1]


def _unquoted(text: str) -> str:
    """A rest argument given in quotes, without them: the text between the opening quote
    and its closing one when that ends it (kept whole: `'Bellman's equation'`, as smart
    quotes make `‘Bellman’s equation’`, is Bellman's equation), else shlex's words."""
    if _closing(text, 0) == len(text) - 1:
        return text[1:-1]
    return " ".join(_split(text))


def field_text(value: str) -> str:
    """A value typed into a field of its own (a Discord command option), as command
    text the grammar reads back whole: in quotes when it has spaces or double quotes, or
    reads as `--me`, else as it is (a topic id stays an id). A pair of quotes around all
    of it is dropped, and a double quote inside becomes `'`."""
    value = " ".join(value.split())
    plain = value.translate(_SMART_QUOTES)
    around = len(plain) > 1 and plain[0] in "\"'" and _closing(plain, 0) == len(plain) - 1
    if around:
        value, plain = value[1:-1].strip(), plain[1:-1].strip()
    # A `--me` the grammar would read in it (`--me`, `'--me`: `_take_me`) is the value's.
    if around or any(char.isspace() for char in value) or '"' in plain or _take_me(plain)[1]:
        return '"' + "".join("'" if char == '"' else char for char in plain) + '"'
    return value


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote: read it as plain words
        return text.replace('"', " ").replace("'", " ").split()


def parse(text: str, personal: bool = False) -> Command:
    """Parse command text (with or without a leading `/papers`). Raises ParseError.

    `personal`: typed where every command acts on the user's own digest (a personal
    reference, as in the Slack DM with the app): usage in errors is without `[--me]`. A
    double quote opened and never closed (`subscribe "diffusion policy`) is refused: read
    as plain words it would store a guess; a `'` never closed is an apostrophe (`'90s`).
    `help --me` is `help` worded for one's own digest.
    """
    typed = text.strip()
    text = typed.translate(_SMART_QUOTES)  # one character for one: `typed` lines up
    if len(text) > MAX_INPUT:
        raise ParseError(f"That command is too long ({len(text)} characters; {MAX_INPUT} at most).")
    text = re.sub(rf"^{re.escape(COMMAND)}\b\s*", "", text)
    typed = typed[len(typed) - len(text) :]  # as typed, without `/papers`
    if not text:
        return Command(VERBS_BY_NAME["help"])
    text, me = _take_me(text)
    if not text:  # `/papers --me`: as `help --me`
        return Command(VERBS_BY_NAME["help"], me=True)
    name, _, rest = text.partition(" ")
    verb = VERBS_BY_NAME.get(name.lower())
    if verb is None:
        shown = name[:40].replace("`", "'")
        raise ParseError(f"I don't know `{shown}`.", suggestion=verb_meant(name.lower()), me=me)
    rest = rest.strip()
    try:
        return _parse_args(verb, rest, text, typed, me, personal)
    except ParseError as exc:
        exc.given, exc.me = rest, me
        raise


def verb_meant(typed: str) -> str | None:
    """The verb a word that is none was likely meant to be: a verb it is a typo of
    (`subscirbe`), or one whose `also` it is (`search`)."""
    synonym = next((verb.name for verb in VERBS if typed in verb.also), None)
    if synonym is not None:
        return synonym
    # 0.7: a swapped or missing letter passes; "stop" is not taken for "topics".
    close = difflib.get_close_matches(typed, list(VERBS_BY_NAME), n=1, cutoff=0.7)
    return close[0] if close else None


def _parse_args(verb: Verb, rest: str, text: str, typed: str, me: bool, personal: bool) -> Command:
    """The rest of `parse`, once the verb is known: `rest` is the text after it."""
    searches = bool(verb.params) and verb.params[-1].query
    if (quote := unclosed_quote(text)) is not None and not searches:
        shown = " ".join(typed.replace("`", "'").split())
        shown = shown if len(shown) <= 60 else shown[:59] + "…"
        raise ParseError(
            f"A quote is not closed: `{shown}` — close it with `{quote}`, or leave the quotes out.",
            verb,
        )
    usage = verb.usage_for(personal)
    # `help --me` is `help` worded for one's own digest (`Verb.mine`), as in the Slack DM.
    if me and not verb.personal and verb.name != "help":
        takers = ", ".join(v.name for v in VERBS if v.personal)
        raise ParseError(f"`{verb.name}` has no {ME_FLAG}; only {takers} do.", verb)
    args: dict[str, str] = {}
    quoted = False
    if verb.params and verb.params[-1].rest:
        # The words before a rest parameter (`feedback reset`) are one word each; the
        # rest is all the text after them, so `feedback reset diffusion policy` names
        # the free-text topic as `unsubscribe diffusion policy` does.
        positional = list(verb.params[:-1])
        words = []
        for _ in positional:
            word, _, remainder = rest.partition(" ")
            if word[:1] in ('"', "'") and _closing(rest, 0) is not None:
                # quoted where a word goes: one word, unquoted
                split = _split(rest)
                word, remainder = (split[0], " ".join(split[1:])) if split else ("", "")
            if not word:
                break
            words.append(word)
            rest = remainder.strip()
        # A `'` that never closes is an apostrophe (`'90s hip hop`): the text as typed.
        quoted = rest[:1] in ('"', "'") and _closing(rest, 0) is not None
        # Quotes around nothing but spaces (`find " "`) give nothing: the verb asks for it.
        value = " ".join((_unquoted(rest) if quoted else rest).split())
        if value:
            args[verb.params[-1].name] = value
    else:
        positional = list(verb.params)
        words = _split(rest)
    if len(words) > len(positional):
        raise ParseError(f"`{verb.name}` takes {_count(positional)}; usage: `{usage}`", verb)
    for param, word in zip(positional, words, strict=False):
        if param.choices and word.lower() not in param.choices:
            raise ParseError(
                f"`{word[:40]}` is not one of {', '.join(param.choices)}; usage: `{usage}`"
                + _choice_hint(verb, param, word[:40]),
                verb,
            )
        args[param.name] = word
    missing = [param for param in verb.params if param.required and param.name not in args]
    if missing:
        raise ParseError(
            f"`{verb.name}` needs {missing[0].name} ({missing[0].help_for(personal)}). "
            f"Usage: `{usage}`" + (f", e.g. `{COMMAND} {verb.example}`" if verb.example else ""),
            verb,
        )
    return Command(verb, args, quoted, me)


# A lone word where a sub-command goes, that is not one of its choices (`feedback
# offline-rl`): what the verb does without it, and how to say the sub-command.
_LONE_WORD = {
    "feedback": "`{command} feedback` shows every topic's feedback; to clear {word}'s: "
    "`{command} feedback reset {word}`.",
}


def _choice_hint(verb: Verb, param: Param, word: str) -> str:
    """After "`x` is not one of ...": the choice the word was likely meant to be
    (`saved exprt`), or what the verb means without a choice (`feedback offline-rl`)."""
    close = difflib.get_close_matches(word.lower(), list(param.choices), n=1, cutoff=0.6)
    if close:
        return f". Did you mean `{COMMAND} {verb.name} {close[0]}`?"
    if verb.name in _LONE_WORD:
        return ". " + _LONE_WORD[verb.name].format(command=COMMAND, word=word)
    return ""


def _count(params: list[Param]) -> str:
    if not params:
        return "no arguments"
    return f"at most {len(params)} argument{'s' if len(params) != 1 else ''}"


def as_personal(text: str) -> str:
    """The command with `--me` when its verb takes it and it has none; anything else
    (another verb, text that does not parse) unchanged. For a command typed where only
    the user's own digest makes sense: their direct message with the app. Read as
    `handle` reads it, without invisible characters (a zero-width space pasted into
    `list` must not leave it the channel's `list`, which says "This channel follows")."""
    try:
        command = parse(strip_unsafe(text))
    except ParseError:
        return text
    if not command.verb.personal or command.me:
        return text
    body = re.sub(rf"^{re.escape(COMMAND)}\b\s*", "", text.translate(_SMART_QUOTES).strip())
    name, _, rest = body.partition(" ")
    return f"{name} {ME_FLAG} {rest.strip()}".strip()


def usage_hint() -> str:
    """The one-line hint Slack shows under `/papers` (from the app manifest)."""
    return " | ".join(verb.usage.removeprefix(COMMAND + " ") for verb in VERBS)


def help_lines(personal: bool = False) -> list[str]:
    """One line per verb: usage and what it does; `personal`: where every command acts on
    the user's own digest (a Slack DM), so worded for it and without `[--me]`."""
    return [f"`{verb.usage_for(personal)}`  {verb.help_for(personal)}" for verb in VERBS]
