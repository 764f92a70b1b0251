"""Time-constrained questions over dated, encyclopedia-style paragraphs (fictional, generated).

Non-chat evaluation data of our own making, to check that recall (and the learned reranker)
does not only learn LoCoMo's chat habits. Fictional people (footballers, researchers,
politicians, musicians, executives) each get a biography split into paragraphs like an
encyclopedia article: an introduction, one paragraph per career stint (with its years and a
dated event or two inside it), and a personal-life paragraph. Organisations are shared between
people, so every question has hard negatives: the same person's other stints, and other people
at the same organisation. Questions name a time the way people ask:

* ``year``: "Which team did Oskar Vell play for in 2005?" (the year lies strictly inside one
  stint; sometimes the paragraph states it, sometimes only the stint's bounds are written);
* ``season-month``: "... in spring 2011?", "... in March 2008?";
* ``relative``: "Which club did Oskar Vell join last year?" (query time 2024-06-01);
* ``untimed``: "Where was Oskar Vell born?" (no date: a control).

``dated-hard`` (the set reported since the plain one saturated at R@10) is the same generator
made harder in two principled ways: longer paragraphs (more of the undated filler that
encyclopedia prose carries), and distractor paragraphs about the same person and the same
organisation in *other* years ("In 2011, Oskar Vell returned to Brackwater Rovers for a
testimonial ..."; "In 1996, Oskar Vell turned down an offer from FC Almsted ..."), so the words
of a question match several paragraphs and only its time tells them apart.

Each question's gold evidence is exactly one paragraph. Everything comes from a seeded
``random.Random``: the same command always builds the same text (no LoCoMo text, no download).

    .venv/bin/python benchmarks/dated_paragraphs.py                 # ours vs BM25 vs hybrid
    .venv/bin/python benchmarks/dated_paragraphs.py --dataset dated-hard
    .venv/bin/python benchmarks/dated_paragraphs.py --dataset wiki-test   # benchmarks/wiki_paragraphs.py
    .venv/bin/python benchmarks/dated_paragraphs.py --show 3        # print a sample
    .venv/bin/python benchmarks/dated_paragraphs.py --systems ours ours:passthrough \\
        --out docs/benchmarks/dated_paragraphs.json --md docs/benchmarks/dated_paragraphs.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import Conversation, Question, QuestionResult, Turn
from life_chats import LIFE_CATEGORIES, LIFE_UNTIMED, life_chats
from said_questions import said_chats
from when_questions import when_notes
from wiki_paragraphs import UNTIMED as WIKI_UNTIMED
from wiki_paragraphs import WIKI_CATEGORIES, wiki_conversations

from shared_core.text import MONTH_NAMES

__all__ = ["CATEGORIES", "DATASETS", "build_dataset"]

SEED = 20261130
BANKS = 5
PEOPLE_PER_BANK = 24
QUERY_TIME = dt.datetime(2024, 6, 1, 12, 0)
# Every paragraph was "ingested" at the same moment, as a document would be.
INGESTED = dt.datetime(2024, 5, 20, 9, 0)

# 5: "When did X ...?" over dated notes, the when-notes set (benchmarks/when_questions.py)
# 6-8: the said-chats set (benchmarks/said_questions.py): evidence told without a date, dated by
# when it was said, beside the same questions over dated evidence ("when", 5, and 8)
CATEGORIES: dict[int, str] = {
    1: "year",
    2: "season-month",
    3: "relative",
    4: "untimed",
    5: "when",
    6: "when, undated gold",
    7: "names a day, undated gold",
    8: "names a day, dated gold",
    # 9-12: encyclopedia articles of an independent generator (benchmarks/wiki_paragraphs.py)
    **WIKI_CATEGORIES,
    # 13-17: everyday chats between friends (benchmarks/life_chats.py)
    **LIFE_CATEGORIES,
}
# the kinds whose question names no time (the "timed" group leaves them out)
UNTIMED_CATEGORIES = frozenset({4, WIKI_UNTIMED, *LIFE_UNTIMED})

_ONSETS = [
    "Al",
    "Bren",
    "Cas",
    "Dor",
    "El",
    "Fen",
    "Gar",
    "Hal",
    "Is",
    "Jor",
    "Kel",
    "Lor",
    "Mar",
    "Nor",
    "Os",
    "Per",
    "Quin",
    "Ros",
    "Sel",
    "Tor",
    "Ul",
    "Ves",
    "Wen",
    "Yar",
    "Zel",
    "Bar",
    "Cor",
    "Dag",
    "Em",
    "Far",
]
_CODAS = [
    "a",
    "an",
    "en",
    "in",
    "o",
    "is",
    "et",
    "ia",
    "ric",
    "wyn",
    "mund",
    "ela",
    "ard",
    "ine",
    "uel",
    "ora",
    "ik",
    "as",
    "ey",
    "ulf",
]
_SUR_A = [
    "Ash",
    "Brack",
    "Cold",
    "Dun",
    "Elm",
    "Fair",
    "Grim",
    "Hart",
    "Ivy",
    "Kes",
    "Lang",
    "Mor",
    "North",
    "Oak",
    "Pel",
    "Quar",
    "Raven",
    "Stan",
    "Thorn",
    "Vel",
    "Whit",
    "Yew",
]
_SUR_B = [
    "berg",
    "by",
    "combe",
    "dale",
    "field",
    "ford",
    "gate",
    "ham",
    "holt",
    "ley",
    "mere",
    "stow",
    "ton",
    "wick",
    "worth",
    "ridge",
    "mont",
    "strand",
]
_PLACES = [
    "Velmora",
    "Ostrakan",
    "Lindqvale",
    "Port Serrin",
    "Caldermouth",
    "Hesketh Bay",
    "Ardenfall",
    "Mirovka",
    "Tallow Cross",
    "San Irmo",
    "Brevik",
    "Quillon",
    "Dunhallow",
    "Estrella Nova",
    "Korsgaard",
    "Pellham",
]


@dataclass(frozen=True, slots=True)
class _Domain:
    kind: str  # "a professional footballer"
    orgs: tuple[str, ...]
    join: tuple[str, ...]  # "signed for {org}"
    stay: tuple[str, ...]  # "played for {org}"
    events: tuple[str, ...]  # "helped the club win the {cup}"
    ask: tuple[str, ...]  # "Which team did {name} play for {when}?"
    ask_join: str  # "Which club did {name} join {when}?"


_DOMAINS: tuple[_Domain, ...] = (
    _Domain(
        kind="a professional footballer who played as a {role}",
        orgs=(
            "Brackwater Rovers",
            "FC Almsted",
            "Dunmere Athletic",
            "Sporting Velmora",
            "Caldermouth United",
            "Real Ostrakan",
            "Hesketh Bay Wanderers",
            "AC Lindqvale",
            "Port Serrin City",
            "Korsgaard FK",
            "Ardenfall Town",
            "Quillon Olympique",
        ),
        join=("signed for {org}", "joined {org}", "moved to {org}", "transferred to {org}"),
        stay=("played for {org}", "turned out for {org}", "was a regular at {org}"),
        events=(
            "scored {n} league goals",
            "helped the side reach the national cup final",
            "was named the club's player of the season",
            "captained the team for the first time",
            "suffered a serious knee injury that kept {obj} out for {n} weeks",
        ),
        ask=(
            "Which team did {name} play for {when}?",
            "Which club was {name} with {when}?",
            "Who was {name} playing for {when}?",
        ),
        ask_join="Which club did {name} join {when}?",
    ),
    _Domain(
        kind="a {role} known for work on {topic}",
        orgs=(
            "the University of Calderon",
            "the Velsingen Institute of Technology",
            "Mirovka State University",
            "the Brevik Research Centre",
            "Pellham College",
            "the Estrella Nova Observatory",
            "the Dunhallow Laboratory for Applied Physics",
            "Tallow Cross University",
            "the Korsgaard Institute",
            "San Irmo Polytechnic",
        ),
        join=(
            "took up a post at {org}",
            "was appointed to {org}",
            "moved to {org}",
            "accepted a position at {org}",
        ),
        stay=("worked at {org}", "taught at {org}", "led a research group at {org}"),
        events=(
            "published an influential paper on {topic}",
            "received a national research prize",
            "supervised {n} doctoral students",
            "founded a laboratory for {topic}",
            "spent a sabbatical term abroad",
        ),
        ask=(
            "Which institution was {name} affiliated with {when}?",
            "Where did {name} work {when}?",
            "Which university employed {name} {when}?",
        ),
        ask_join="Which institution did {name} move to {when}?",
    ),
    _Domain(
        kind="a {role} and public servant",
        orgs=(
            "the Velmora city council",
            "the Ministry of Transport",
            "the Ministry of Health",
            "the Ostrakan regional assembly",
            "the national parliament",
            "the Port Serrin harbour authority",
            "the Ministry of Culture",
            "the Lindqvale district court",
            "the Audit Office",
            "the Caldermouth mayor's office",
        ),
        join=("was elected to {org}", "joined {org}", "was appointed to {org}", "entered {org}"),
        stay=("served in {org}", "held office at {org}", "sat on {org}"),
        events=(
            "introduced a bill on public housing",
            "chaired a committee on water supply",
            "was re-elected with {n} per cent of the vote",
            "led negotiations over a new rail link",
            "faced a corruption inquiry that cleared {obj}",
        ),
        ask=(
            "Which body did {name} serve in {when}?",
            "Where did {name} hold office {when}?",
            "What institution was {name} part of {when}?",
        ),
        ask_join="Which body did {name} join {when}?",
    ),
    _Domain(
        kind="a {role} and recording artist",
        orgs=(
            "the Harrowgate Philharmonic",
            "the Velmora Chamber Ensemble",
            "the Brevik Opera Orchestra",
            "the Pellham String Quartet",
            "the Ardenfall Jazz Collective",
            "the Quillon Radio Symphony",
            "the Hesketh Bay Sinfonia",
            "the Dunmere Brass Band",
            "the Korsgaard Baroque Players",
            "the San Irmo Festival Orchestra",
        ),
        join=(
            "joined {org}",
            "was engaged by {org}",
            "became a member of {org}",
            "auditioned successfully for {org}",
        ),
        stay=("performed with {org}", "played with {org}", "toured with {org}"),
        events=(
            "recorded {n} albums",
            "gave a celebrated solo recital",
            "premiered a new concerto",
            "toured {n} countries",
            "won a national music award",
        ),
        ask=(
            "Which ensemble did {name} perform with {when}?",
            "Who was {name} playing with {when}?",
            "Which orchestra was {name} a member of {when}?",
        ),
        ask_join="Which ensemble did {name} join {when}?",
    ),
    _Domain(
        kind="a business executive in {topic}",
        orgs=(
            "Norvane Logistics",
            "Caldera Foods",
            "Ostrakan Steelworks",
            "Bellhaven Insurance",
            "Lindqvale Telecom",
            "Serrin Shipping",
            "Mirovka Pharmaceuticals",
            "Tallow Energy",
            "Quarrydale Motors",
            "Estrella Textiles",
            "Korsgaard Bank",
        ),
        join=("joined {org}", "was hired by {org}", "moved to {org}", "was recruited by {org}"),
        stay=("worked for {org}", "ran the European division of {org}", "was finance director at {org}"),
        events=(
            "oversaw the acquisition of a smaller rival",
            "cut costs by {n} per cent",
            "opened {n} new offices",
            "launched a new product line",
            "led a restructuring",
        ),
        ask=(
            "Which company did {name} work for {when}?",
            "Who employed {name} {when}?",
            "Which firm was {name} at {when}?",
        ),
        ask_join="Which company did {name} join {when}?",
    ),
)
_ROLES = {
    0: ("midfielder", "defender", "striker", "goalkeeper"),
    1: ("chemist", "physicist", "historian", "biologist", "economist"),
    2: ("lawyer", "politician", "diplomat"),
    3: ("violinist", "cellist", "pianist", "trumpeter", "saxophonist"),
    4: ("manufacturing", "logistics", "finance", "retail"),
}
_TOPICS = (
    "protein folding",
    "glacier dynamics",
    "medieval trade routes",
    "soil microbes",
    "labour markets",
    "semiconductor lasers",
)
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11)}
_MONTHS = MONTH_NAMES
_NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_FILLER = (
    "Contemporary accounts describe {pron} as meticulous and reserved.",
    "Colleagues later recalled {poss} habit of arriving hours before everyone else.",
    "The move was widely reported in the local press at the time.",
    "{Pron} later said that this period shaped {poss} approach to everything that followed.",
    "Little of {poss} private correspondence from these years has survived.",
    "The circumstances of the decision were the subject of some speculation.",
    "Critics were divided, but the public response was warm.",
    "Friends from that time remember long evenings spent discussing plans for the future, "
    "most of which never came to anything.",
    "{Pron} kept a detailed diary throughout, parts of which were published after {poss} "
    "retirement and caused a minor stir among former colleagues.",
    "The years were not without difficulty: money was often short, and {pron} spent long "
    "stretches away from {poss} family.",
    "Much of what is known about this time comes from interviews {pron} gave decades later, "
    "which do not always agree with one another on the details.",
    "An early biographer called it the most productive stretch of {poss} working life, a "
    "judgement that later writers have mostly accepted.",
    "Press coverage was extensive, and a profile in a national weekly made {poss} name familiar "
    "well beyond the usual circles.",
)


# Hard set: a paragraph about a person and an organisation in a year they were NOT together
# (before joining, or after leaving); the same words as the question, another time.
_VISIT_AFTER = (
    "In {year}, {name} returned to {org} as a guest of honour at an anniversary celebration, "
    "years after {poss} time there had ended.",
    "In {year}, {name} gave a long interview about {poss} years with {org}, recalling the "
    "people {pron} had worked with there.",
    "In {year}, {org} invited {name} back for a single charity event, and {pron} accepted.",
)
_VISIT_BEFORE = (
    "In {year}, {name} turned down an offer from {org}, preferring to stay where {pron} was.",
    "In {year}, {name} first visited {org}, though nothing came of it at the time.",
    "In {year}, talks between {name} and {org} broke down over terms.",
)


def _name(rng: random.Random, used: set[str]) -> str:
    while True:
        first = rng.choice(_ONSETS) + rng.choice(_CODAS)
        last = rng.choice(_SUR_A) + rng.choice(_SUR_B)
        name = f"{first} {last}"
        if name not in used and first.lower() != last.lower():
            used.add(name)
            return name


@dataclass(frozen=True, slots=True)
class _Stint:
    org: str
    start: int
    end: int  # inclusive; QUERY_TIME.year for a current stint
    current: bool


def _career(rng: random.Random, domain: _Domain, born: int, recent: bool) -> list[_Stint]:
    n = rng.randint(3, 5)
    orgs = rng.sample(list(domain.orgs), n)
    year = born + rng.randint(19, 26)
    stints = []
    for i, org in enumerate(orgs):
        length = rng.randint(3, 8)
        end = year + length
        last = i == n - 1
        if last and recent:
            # the "last year" questions need a stint that started the year before the query
            start, end = QUERY_TIME.year - 1, QUERY_TIME.year
            if start <= year:
                start = year + 1
            stints.append(_Stint(org, start, max(end, start), current=True))
            break
        if end >= QUERY_TIME.year - 2:
            break
        stints.append(_Stint(org, year, end, current=False))
        year = end  # the next stint starts the year this one ended
    return stints


def _sentence(rng: random.Random, template: str, name: str, pron: str, poss: str, topic: str) -> str:
    obj = "her" if pron == "she" else "him"
    text = template.format(
        name=name,
        pron=pron,
        poss=poss,
        Pron=pron.capitalize(),
        obj=obj,
        n=rng.choice(_NUMBER_WORDS),
        topic=topic,
    )
    return text[0].upper() + text[1:]


def _stint_paragraph(
    rng: random.Random, domain: _Domain, person: dict[str, Any], stint: _Stint, fillers: tuple[int, int]
) -> tuple[str, list[int]]:
    """The paragraph and the years it states outright."""
    name, pron, poss, topic = person["name"], person["pron"], person["poss"], person["topic"]
    surname = name.split()[1]
    join = rng.choice(domain.join).format(org=stint.org)
    stay = rng.choice(domain.stay).format(org=stint.org)
    month = rng.choice(_MONTHS)
    stated = [stint.start]
    opening = rng.choice(
        (
            f"In {month} {stint.start}, {name} {join}.",
            f"{name} {join} in {stint.start}.",
            f"After months of negotiation, {name} {join} in {month} {stint.start}.",
        )
    )
    sentences = [opening]
    inner = [y for y in range(stint.start + 1, stint.end)]
    if inner and rng.random() < 0.6:
        year = rng.choice(inner)
        stated.append(year)
        event = _sentence(rng, rng.choice(domain.events), name, pron, poss, topic)
        sentences.append(f"In {year} {surname} {event[0].lower() + event[1:]}.")
    for filler in rng.sample(_FILLER, rng.randint(*fillers)):
        sentences.append(_sentence(rng, filler, name, pron, poss, topic))
    if stint.current:
        sentences.append(
            f"As of {QUERY_TIME.year}, {pron} still {stay.replace('was ', 'is ')}".replace(
                "still worked", "still works"
            )
            .replace("still played", "still plays")
            .replace("still performed", "still performs")
            .replace("still served", "still serves")
            + "."
        )
    else:
        years = stint.end - stint.start
        closing = rng.choice(
            (
                f"{pron.capitalize()} left in {stint.end}.",
                f"{surname} {stay} until {stint.end}.",
                f"After {_NUMBER_WORDS[min(years, 12) - 2] if years >= 2 else 'one'} "
                f"years {pron} departed in {stint.end}.",
            )
        )
        sentences.append(closing)
        stated.append(stint.end)
    return " ".join(sentences), stated


def _distractor(rng: random.Random, person: dict[str, Any], stint: _Stint, first: int) -> str | None:
    """A paragraph naming the person and the stint's organisation in a year outside the stint
    (within the person's career, before the query's year), or None if there is no such year."""
    before = list(range(first, stint.start))
    after = list(range(stint.end + 1, QUERY_TIME.year - 1))
    if not before and not after:
        return None
    use_after = bool(after) and (not before or rng.random() < 0.5)
    year = rng.choice(after if use_after else before)
    template = rng.choice(_VISIT_AFTER if use_after else _VISIT_BEFORE)
    text = template.format(year=year, org=stint.org, **{k: person[k] for k in ("name", "pron", "poss")})
    filler = _sentence(
        rng, rng.choice(_FILLER), person["name"], person["pron"], person["poss"], person["topic"]
    )
    return f"{text} {filler}"


def _person(
    rng: random.Random,
    domain_index: int,
    used: set[str],
    recent: bool,
    hard: bool = False,
    long: bool = False,
) -> tuple[dict[str, Any], list[tuple[str, str]], list[tuple[str, int, str]]]:
    """(person, [(paragraph_key, text)], [(question, category, paragraph_key)]).

    ``long`` (with ``hard``): encyclopedia-length paragraphs, see :func:`_lengthen`."""
    domain = _DOMAINS[domain_index]
    name = _name(rng, used)
    female = rng.random() < 0.5
    pron, poss = ("she", "her") if female else ("he", "his")
    born = rng.randint(1940, 1975)
    birthplace = rng.choice(_PLACES)
    role = rng.choice(_ROLES[domain_index])
    topic = rng.choice(_TOPICS)
    person = {"name": name, "pron": pron, "poss": poss, "topic": topic}
    stints = _career(rng, domain, born, recent)
    kind = domain.kind.format(role=role, topic=topic)
    orgs = ", ".join(s.org for s in stints[:-1]) + f" and {stints[-1].org}"
    paragraphs: list[tuple[str, str]] = [
        (
            "intro",
            (
                f"{name} (born {rng.randint(1, 28)} {rng.choice(_MONTHS)} {born} in {birthplace}) is "
                f"{kind}. Over a long career {pron} was associated with {orgs}. "
                + _sentence(rng, rng.choice(_FILLER), name, pron, poss, topic)
            ),
        )
    ]
    questions: list[tuple[str, int, str]] = []
    for i, stint in enumerate(stints):
        key = f"stint{i}"
        fillers = (1, 10) if long else (2, 7) if hard else (0, 4)
        text, stated = _stint_paragraph(rng, domain, person, stint, fillers)
        paragraphs.append((key, text))
        if hard:
            distractor = _distractor(rng, person, stint, stints[0].start)
            if distractor is not None:
                paragraphs.append((f"{key}-other", distractor))
        inner = [y for y in range(stint.start + 1, stint.end)]
        if stint.current:
            questions.append((domain.ask_join.format(name=name, when="last year"), 3, key))
            continue
        if inner:
            # a year inside the stint; a stated one half the time when the paragraph has one
            stated_inner = [y for y in stated if y in inner]
            year = rng.choice(stated_inner) if stated_inner and rng.random() < 0.5 else rng.choice(inner)
            questions.append((rng.choice(domain.ask).format(name=name, when=f"in {year}"), 1, key))
            if rng.random() < 0.5:
                year = rng.choice(inner)
                if rng.random() < 0.5:
                    season = rng.choice(list(_SEASONS))
                    when = f"in {season} {year}"
                else:
                    when = f"in {rng.choice(_MONTHS)} {year}"
                questions.append((rng.choice(domain.ask).format(name=name, when=when), 2, key))
    personal_year = stints[rng.randrange(len(stints))].start + 1
    paragraphs.append(
        (
            "personal",
            (
                f"{name} married {rng.choice(['a teacher', 'an architect', 'a surgeon', 'a journalist'])} "
                f"from {rng.choice(_PLACES)} in {personal_year}; the couple have "
                f"{rng.choice(_NUMBER_WORDS[:4])} children. "
                + _sentence(rng, rng.choice(_FILLER), name, pron, poss, topic)
            ),
        )
    )
    questions.append((f"Where was {name} born?", 4, "intro"))
    if long:
        return person, *_lengthen(rng, person, stints, paragraphs, questions)
    return person, paragraphs, questions


def _lengthen(
    rng: random.Random,
    person: dict[str, Any],
    stints: Sequence[_Stint],
    paragraphs: list[tuple[str, str]],
    questions: list[tuple[str, int, str]],
) -> tuple[list[tuple[str, str]], list[tuple[str, int, str]]]:
    """Reshape one biography the way encyclopedia articles are: one to three career stints per
    paragraph (so the evidence paragraph names several organisations and several years, and
    runs from ~40 to ~400 words), and a long introduction that states the whole career's first
    and last year (it spans every year a question names without answering any). What a model
    trained on chat turns may have learnt wrongly here: that a long text, a text stating many
    years or one whose years span the question's year is the evidence. The other paragraphs
    (the distractors, the personal one) get as much filler as a stint, so length says little
    about which paragraph is the evidence."""
    name, pron, poss, topic = person["name"], person["pron"], person["poss"], person["topic"]
    merged: list[tuple[str, str]] = []
    where: dict[str, str] = {}
    group: list[tuple[str, str]] = []
    size = rng.randint(1, 3)
    stint_keys = [k for k, _ in paragraphs if k.startswith("stint") and not k.endswith("-other")]

    def flush() -> None:
        key = "+".join(k for k, _ in group)
        merged.append((key, " ".join(t for _, t in group)))
        for k, _ in group:
            where[k] = key

    for key, text in paragraphs:
        if key in stint_keys:
            group.append((key, text))
            if len(group) == size or key == stint_keys[-1]:
                flush()
                group, size = [], rng.randint(1, 3)
        elif key == "intro":
            first, last = stints[0].start, stints[-1].end
            extra = " ".join(
                _sentence(rng, f, name, pron, poss, topic) for f in rng.sample(_FILLER, rng.randint(2, 6))
            )
            merged.append((key, f"{text} {pron.capitalize()} was active from {first} to {last}. {extra}"))
        else:  # the distractors and the personal paragraph: as long as the evidence can be
            extra = " ".join(
                _sentence(rng, f, name, pron, poss, topic) for f in rng.sample(_FILLER, rng.randint(1, 10))
            )
            merged.append((key, f"{text} {extra}"))
    return merged, [(q, c, where.get(k, k)) for q, c, k in questions]


# --- dated-prose-train: careers told by offsets (training only, never scored) --------------------
# What dated-train lacks and encyclopedia prose is full of: a stint told by an offset from an
# earlier year ("Four years later she moved to ..."), an introduction whose range brackets the
# whole career, an evidence paragraph writing years that are not its stint's, and paragraphs
# about the same person in other years told the same way. Templates of our own, written for this
# set (not derived from benchmarks/wiki_paragraphs.py, which wiki-dev / wiki-test come from: a
# test set is honest only if the training text does not imitate it).
_PROSE_SPAN = (
    "{name} (born {born}) is {kind}, active from {first} until {last}.",
    "{name}, born in {born}, is {kind} whose working life ran from {first} to {last}.",
    "{name} (born {born} in {place}) is {kind}. Between {first} and {last} {pron} was attached to "
    "{n_orgs} different organisations.",
    "{name} is {kind}. Born in {place} in {born}, {pron} spent the years {first} to {last} with {orgs}.",
)
_PROSE_SPAN_TAIL = (
    "Few of {poss} contemporaries moved as often, or as deliberately.",
    "The arc of that career is usually told through the organisations {pron} served.",
    "{Pron} is remembered less for any single post than for the sum of them.",
)


def _offset_phrase(rng: random.Random, k: int, later: bool = True) -> str:
    """An offset of ``k`` years as prose tells it (text_years.told_years reads every form)."""
    word = "later" if later else "earlier"
    if k == 1:
        return rng.choice(
            ("The following season", "The next year", "A year later")
            if later
            else ("The previous season", "A year earlier")
        )
    if k == 10:
        return f"A decade {word}"
    count = _NUMBER_WORDS[k - 2] if 2 <= k <= 12 and rng.random() < 0.8 else str(k)
    return f"{count.capitalize()} years {word}"


def _prose_chapter(
    rng: random.Random, domain: _Domain, person: dict[str, Any], chapter: Sequence[_Stint], outside: list[int]
) -> tuple[str, list[int]]:
    """One paragraph telling one to three stints: the first by a written year, the next ones by
    an offset from the last year told (written or implied), events told either way, and at the
    end sometimes a year outside the chapter (``outside``: years of the career not in it). Also
    the years the paragraph tells (written or implied) inside its stints."""
    name, pron, poss, topic = person["name"], person["pron"], person["poss"], person["topic"]
    surname = name.split()[1]
    told: list[int] = []
    sentences: list[str] = []
    last = chapter[0].start
    for i, stint in enumerate(chapter):
        join = rng.choice(domain.join).format(org=stint.org)
        if i == 0:
            sentences.append(
                rng.choice(
                    (
                        f"In {stint.start}, {name} {join}.",
                        f"{surname} {join} in {rng.choice(_MONTHS)} {stint.start}.",
                        f"It was in {stint.start} that {surname} {join}.",
                    )
                )
            )
        else:
            offset = _offset_phrase(rng, stint.start - last)
            sentences.append(f"{offset}, {pron} {join}.")
        last = stint.start
        told.append(stint.start)
        inner = list(range(stint.start + 1, stint.end))
        if inner and rng.random() < 0.6:
            year = rng.choice(inner)
            event = _sentence(rng, rng.choice(domain.events), name, pron, poss, topic)
            event = event[0].lower() + event[1:]
            if rng.random() < 0.6:
                sentences.append(f"{_offset_phrase(rng, year - last)} {pron} {event}.")
            else:
                sentences.append(f"In {year} {surname} {event}.")
            last = year
            told.append(year)
        for filler in rng.sample(_FILLER, rng.randint(0, 2)):
            sentences.append(_sentence(rng, filler, name, pron, poss, topic))
    final = chapter[-1]
    if not final.current:
        ending = rng.random()
        if ending < 0.35:
            sentences.append(f"{_offset_phrase(rng, final.end - last)} {pron} left {final.org}.")
            told.append(final.end)
        elif ending < 0.6:
            sentences.append(f"{surname} stayed with {final.org} until {final.end}.")
            told.append(final.end)
        elif ending < 0.8:
            years = final.end - final.start
            count = _NUMBER_WORDS[years - 2] if 2 <= years <= 12 else str(years)
            # a duration, not an offset: the end year is not told
            sentences.append(f"{pron.capitalize()} spent {count} seasons there in all.")
        # else: the paragraph does not say when the stint ended
    else:
        sentences.append(f"{pron.capitalize()} has remained with {final.org} since.")
    if outside and rng.random() < 0.5:
        # a year of the career outside this chapter's stints, after every offset (so it anchors none)
        year = rng.choice(outside)
        sentences.append(
            rng.choice(
                (
                    f"The arrangement was first discussed as early as {year}, "
                    "though nothing was signed then.",
                    f"A newspaper profile written in {year} looked back on this spell as {poss} best.",
                    f"{pron.capitalize()} would speak about these years at length in {year}.",
                )
            )
        )
    return " ".join(sentences), told


def _prose_elsewhere(
    rng: random.Random, person: dict[str, Any], stints: Sequence[_Stint], born: int
) -> list[tuple[str, str]]:
    """Paragraphs about the same person and organisations in years that are no stint's inner
    years (youth before the career, life after it), told by a written year and an offset."""
    name, pron, poss = person["name"], person["pron"], person["poss"]
    surname = name.split()[1]
    out: list[tuple[str, str]] = []
    first = stints[0].start
    youth = rng.randint(born + 12, first - 2) if first - 2 >= born + 12 else None
    if youth is not None:
        k = rng.randint(1, max(1, first - 1 - youth))
        org = rng.choice(stints).org
        out.append(
            (
                "youth",
                f"As a teenager in {youth}, {name} wrote to {org} asking for a trial and was turned "
                f"away. {_offset_phrase(rng, k)} {pron} tried again, with no better luck. "
                + _sentence(rng, rng.choice(_FILLER), name, pron, poss, person["topic"]),
            )
        )
    done = stints[-1]
    if not done.current and done.end + 1 < QUERY_TIME.year - 1:
        year = rng.randint(done.end + 1, QUERY_TIME.year - 2)
        org = rng.choice(stints).org
        k = rng.randint(1, 6)
        out.append(
            (
                "later",
                f"After {poss} last post, {surname} settled in {rng.choice(_PLACES)}. In {year} "
                f"{pron} was guest of honour at {org}, and {_offset_phrase(rng, k).lower()} "
                f"{pron} gave a public talk there about {poss} old colleagues.",
            )
        )
    return out


def _prose_person(
    rng: random.Random, domain_index: int, used: set[str], recent: bool
) -> tuple[list[tuple[str, str]], list[tuple[str, int, str]]]:
    """([(paragraph_key, text)], [(question, category, paragraph_key)]) for one person: a span
    lead (the evidence of the birthplace question only), career chapters of one to three stints
    told by offsets, paragraphs about the same person in other years, a personal paragraph."""
    domain = _DOMAINS[domain_index]
    name = _name(rng, used)
    female = rng.random() < 0.5
    pron, poss = ("she", "her") if female else ("he", "his")
    born = rng.randint(1940, 1975)
    place = rng.choice(_PLACES)
    topic = rng.choice(_TOPICS)
    person = {"name": name, "pron": pron, "poss": poss, "topic": topic}
    surname = name.split()[1]
    stints = _career(rng, domain, born, recent)
    kind = domain.kind.format(role=rng.choice(_ROLES[domain_index]), topic=topic)
    orgs = (
        ", ".join(s.org for s in stints[:-1]) + f" and {stints[-1].org}" if len(stints) > 1 else stints[0].org
    )
    lead = rng.choice(_PROSE_SPAN).format(
        name=name,
        born=born,
        kind=kind,
        first=stints[0].start,
        last=stints[-1].end,
        place=place,
        pron=pron,
        n_orgs=_NUMBER_WORDS[len(stints) - 2] if len(stints) >= 2 else "one",
        orgs=orgs,
    )
    tail = _sentence(rng, rng.choice(_PROSE_SPAN_TAIL), name, pron, poss, topic)
    if place not in lead:
        tail += f" {pron.capitalize()} grew up in {place}."
    paragraphs: list[tuple[str, str]] = [("lead", f"{lead} {tail}")]
    questions: list[tuple[str, int, str]] = []
    i = 0
    while i < len(stints):
        size = rng.randint(1, 3)
        chapter = stints[i : i + size]
        key = f"chapter{i}"
        covered = {y for s in chapter for y in range(s.start, s.end + 1)}
        outside = [y for s in stints for y in range(s.start + 1, s.end) if y not in covered]
        text, told = _prose_chapter(rng, domain, person, chapter, outside)
        paragraphs.append((key, text))
        for stint in chapter:
            inner = list(range(stint.start + 1, stint.end))
            if stint.current:
                questions.append((domain.ask_join.format(name=name, when="last year"), 3, key))
                continue
            if not inner:
                continue
            told_inner = [y for y in told if y in inner]
            year = rng.choice(told_inner) if told_inner and rng.random() < 0.5 else rng.choice(inner)
            questions.append((rng.choice(domain.ask).format(name=name, when=f"in {year}"), 1, key))
        i += size
    paragraphs.extend(_prose_elsewhere(rng, person, stints, born))
    married = rng.randint(stints[0].start, stints[-1].end)
    k = rng.randint(1, 4)
    paragraphs.append(
        (
            "personal",
            f"{surname} married in {married}; {_offset_phrase(rng, k).lower()} the couple moved to "
            f"{rng.choice(_PLACES)}. " + _sentence(rng, rng.choice(_FILLER), name, pron, poss, topic),
        )
    )
    questions.append((f"Where was {name} born?", 4, "lead"))
    return paragraphs, questions


def _prose_bank(rng: random.Random, index: int, prefix: str) -> Conversation:
    used: set[str] = set()
    return _people_bank(
        index,
        prefix,
        (
            _prose_person(rng, p % len(_DOMAINS), used, recent=rng.random() < 0.2)
            for p in range(PEOPLE_PER_BANK)
        ),
    )


def _prose(seed: int, banks: int, prefix: str) -> list[Conversation]:
    rng = random.Random(seed)
    return [_prose_bank(rng, i, prefix) for i in range(banks)]


def _people_bank(
    index: int,
    prefix: str,
    people: Iterable[tuple[Sequence[tuple[str, str]], Sequence[tuple[str, int, str]]]],
) -> Conversation:
    """One bank of ``people``, each (paragraphs as (key, text), questions as (question,
    category, key)): a person's paragraphs are one article (document, "session"), so
    conversation context at retain joins a paragraph to the previous paragraph of the same
    biography, never to another person's. ``people`` is read in order, one person at a time (the
    generators draw from one seeded RNG)."""
    turns: list[Turn] = []
    questions: list[Question] = []
    for p, (paragraphs, qs) in enumerate(people):
        for key, text in paragraphs:
            turns.append(
                Turn(dia_id=f"B{index}:P{p}:{key}", speaker="", text=text, session=p, mentioned_at=INGESTED)
            )
        for question, category, key in qs:
            questions.append(
                Question(question=question, category=category, evidence=(f"B{index}:P{p}:{key}",))
            )
    return Conversation(
        index=index,
        sample_id=f"{prefix}-{index}",
        turns=tuple(turns),
        questions=tuple(questions),
        query_time=QUERY_TIME,
    )


def _bank(
    rng: random.Random, index: int, prefix: str, hard: bool = False, long: bool = False
) -> Conversation:
    used: set[str] = set()
    return _people_bank(
        index,
        prefix,
        (
            _person(rng, p % len(_DOMAINS), used, recent=rng.random() < 0.25, hard=hard, long=long)[1:]
            for p in range(PEOPLE_PER_BANK)
        ),
    )


def _dated(seed: int, banks: int, prefix: str, hard: bool = False, long: bool = False) -> list[Conversation]:
    rng = random.Random(seed)
    return [_bank(rng, i, prefix, hard, long) for i in range(banks)]


DATASETS: dict[str, Callable[[], list[Conversation]]] = {
    # the evaluation set
    "dated": lambda: _dated(SEED, BANKS, "dated"),
    # longer paragraphs, and distractors naming the same person and organisation in other years
    "dated-hard": lambda: _dated(SEED, BANKS, "dated-hard", hard=True),
    # dated-hard reshaped like encyclopedia articles: one to three stints per paragraph (long,
    # several organisations and years in the evidence), a long introduction spanning the whole
    # career; another seed, so nothing tuned on dated-hard carries over by its text
    "dated-long": lambda: _dated(SEED + 2, BANKS, "dated-long", hard=True, long=True),
    # same generator, another seed: training rows for the learned reranker's date features,
    # never scored
    "dated-train": lambda: _dated(SEED + 1, 3, "dated-train"),
    # careers told by offsets, introductions spanning a whole career, evidence writing other
    # years, the same person in other years (_prose_person): training rows for the learned
    # reranker's window-year columns beside dated-train, never scored; its own seed and
    # templates, nothing from benchmarks/wiki_paragraphs.py
    "dated-prose-train": lambda: _prose(SEED + 3, 3, "dated-prose-train"),
    # "When did X ...?" over a journal of short dated notes (benchmarks/when_questions.py):
    # evaluation only, never trained or tuned on
    "when-notes": lambda: when_notes(),
    # chats whose "when" / "on <day>" evidence is often told without a date, dated by when it
    # was said (benchmarks/said_questions.py): evaluation only, never trained or tuned on
    "said-chats": lambda: said_chats(),
    # fictional encyclopedia articles from an independent generator (its own templates, article
    # structure and date phrasing; benchmarks/wiki_paragraphs.py), so neither is in the learned
    # reranker's training distribution: wiki-dev for looking at traces, wiki-test for scoring only
    "wiki-dev": lambda: wiki_conversations(SEED + 10, 2, "wiki-dev"),
    "wiki-test": lambda: wiki_conversations(SEED + 11, 2, "wiki-test"),
    # everyday chats between two friends, a messaging-app style neither LoCoMo nor said-chats
    # has (benchmarks/life_chats.py): -train for training rows and error analysis, -test for
    # scoring only (its own seed and people)
    "life-chats-train": lambda: life_chats("train"),
    "life-chats-test": lambda: life_chats("test"),
    # the same test chats, each memory the message alone (no "Name: "): how much of a margin
    # rests on the speaker's name written in every message
    "life-chats-test-bare": lambda: life_chats("test", named=False),
}


def build_dataset(name: str) -> list[Conversation]:
    """The banks of a generated dataset (deterministic), as LoCoMo-shaped conversations."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    return DATASETS[name]()


# --- evaluation harness -----------------------------------------------------------------------
def aggregate(
    results: Sequence[QuestionResult], ks: Sequence[int] = (1, 5, 10)
) -> dict[str, dict[str, float]]:
    """Mean recall in percent per category and overall."""
    groups: dict[str, list[QuestionResult]] = {"overall": list(results), "timed": []}
    for r in results:
        groups.setdefault(CATEGORIES[r.category], []).append(r)
        if r.category not in UNTIMED_CATEGORIES:
            groups["timed"].append(r)
    return {
        g: {f"R@{k}": round(100 * sum(r.recall[k] for r in rs) / len(rs), 1) for k in ks} | {"n": len(rs)}
        for g, rs in groups.items()
        if rs
    }


def markdown(table: dict[str, dict[str, dict[str, float]]]) -> str:
    first = next(iter(table.values()))
    # the groups the set has (when-notes asks only "when"): one separator cell per column
    groups = [g for g in ("overall", "timed", *CATEGORIES.values()) if g in first]
    head = " | ".join(f"{g} (n={first[g]['n']:.0f})" for g in groups)
    lines = [f"| system (R@1 / R@10) | {head} |", "|---|" + "---:|" * len(groups)]
    for name, t in table.items():
        cells = [f"{t[g]['R@1']:.1f} / {t[g]['R@10']:.1f}" for g in groups if g in t]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import shlex

    from _peers import EmbeddingCache, SystemUnavailableError
    from _report import write_json, write_text
    from locomo import make_system, run_system

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--dataset", default="dated", choices=sorted(DATASETS))
    p.add_argument(
        "--systems",
        nargs="+",
        default=["llamaindex-bm25", "langchain-ensemble", "ours"],
        help="llamaindex-bm25 (plain BM25), langchain-ensemble (equal-weight "
        "dense + BM25 RRF), ours[:<config>] (benchmarks/locomo.py)",
    )
    p.add_argument("--show", type=int, default=0, help="print N sample paragraphs and exit")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--md", type=Path, default=None)
    p.add_argument("--cache-dir", default="default")
    args = p.parse_args(argv)
    convs = build_dataset(args.dataset)
    if args.show:
        for t in convs[0].turns[: args.show]:
            print(f"[{t.dia_id}] {t.text}\n")
        for q in convs[0].questions[: args.show * 2]:
            print(f"Q ({CATEGORIES[q.category]}): {q.question} -> {q.evidence[0]}")
        return 0
    cache = EmbeddingCache(cache_dir=args.cache_dir)
    cache.ensure([t.text for c in convs for t in c.turns] + [q.question for c in convs for q in c.questions])
    cache.save()
    table: dict[str, dict[str, dict[str, float]]] = {}
    for name in args.systems:
        try:
            system = make_system(name, cache)
        except SystemUnavailableError as exc:
            print(f"skipping {name}: {exc}", file=sys.stderr)
            continue
        results, _ = run_system(system, convs)
        table[getattr(system, "label", name)] = aggregate(results)
        print(f"{name}: {table[getattr(system, 'label', name)]['overall']}", file=sys.stderr, flush=True)
    text = markdown(table)
    print(text)
    report = {
        "dataset": args.dataset,
        "seed": SEED,
        "banks": len(convs),
        "paragraphs": sum(len(c.turns) for c in convs),
        "questions": sum(len(c.questions) for c in convs),
        "command": "python benchmarks/dated_paragraphs.py "
        + shlex.join(sys.argv[1:] if argv is None else list(argv)),
        "systems": table,
    }
    if args.out:
        write_json(args.out, report)
    if args.md:
        write_text(
            args.md,
            f"# Dated paragraphs: R@1 / R@10\n\nCommand: `{report['command']}`"
            f"\n\n{report['banks']} banks, {report['paragraphs']} paragraphs, "
            f"{report['questions']} questions.\n\n{text}\n",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
