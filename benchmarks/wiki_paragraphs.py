"""Fictional encyclopedia articles with time-constrained questions: a generator independent of
``dated_paragraphs`` (its own templates, article structure and date phrasing).

Why a second generator: the learned reranker is trained on ``dated-train`` rows, and
``dated-hard`` / ``dated-long`` come from the same generator on other seeds, so they are
in-distribution for it (and saturated at R@10 for every system). The field's warning is that a
model of this kind lifts R@1 but cuts R@10 on long encyclopedia paragraphs, because length,
recency and position carry chat priors. This set is built to show that risk if it is there:

* each bank holds a few hundred paragraphs (40 articles of 6-10 paragraphs; 80-250 words each);
* an article is written like an encyclopedia page: a lead naming the organisations of the whole
  career, an early-life paragraph, career paragraphs covering one to three stints each, a
  legacy paragraph and a personal-life paragraph; after the lead a person is mostly called by
  the surname or a pronoun, and surnames and first names repeat across a bank;
* organisations are shared by many people of a bank (10 per field, 10 people per field), and
  filler sentences name other organisations and stray years, so an organisation's name or a
  year alone says little;
* dates are written many ways: years, "the following season", "three years later", ranges
  ("from 1998 to 2002", "1998–2002", "between 1998 and 2002"), "by the early 2000s", seasons
  ("the 2004–05 season"); a career paragraph always anchors its first stint to a year, so the
  paragraph alone answers its questions;
* questions are phrased variously and of four kinds (:data:`WIKI_CATEGORIES`): a year the gold
  paragraph writes, a year it only implies (inside a range, or reached by a relative phrase), a
  span (a season or "between <y1> and <y2>"), and no time at all ("Which club did X join after
  leaving Y?", "Where did X begin ...?").

Each question's gold evidence is exactly one paragraph, and it holds the answer (the
organisation, and for a timed question a stint covering the time); :func:`wiki_articles` keeps
the answers so a test can check that. Everything comes from a seeded ``random.Random`` (no
download, no LoCoMo text).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from dataclasses import dataclass

from _locomo import Conversation, Question, Turn

__all__ = ["WIKI_CATEGORIES", "WikiArticleSet", "WikiQuestion", "wiki_articles", "wiki_conversations"]

QUERY_TIME = dt.datetime(2024, 6, 1, 12, 0)
INGESTED = dt.datetime(2024, 5, 20, 9, 0)
PEOPLE_PER_BANK = 36
ORGS_PER_FIELD = 10
# kinds of question, numbered after dated_paragraphs' 1-8 so one table can hold every set
WIKI_CATEGORIES: dict[int, str] = {
    9: "wiki year, stated",
    10: "wiki year, implied",
    11: "wiki span",
    12: "wiki untimed",
}
UNTIMED = 12
MIN_WORDS, MAX_WORDS = 80, 250

_FIRST = [
    "Anders",
    "Bruno",
    "Cecile",
    "Dario",
    "Edda",
    "Felix",
    "Greta",
    "Hugo",
    "Ilse",
    "Jonas",
    "Katrin",
    "Lars",
    "Mira",
    "Nils",
    "Olga",
    "Pavel",
    "Rosa",
    "Stefan",
    "Tilde",
    "Ugo",
    "Vera",
    "Willem",
    "Yana",
    "Zoltan",
    "Agnes",
    "Bela",
    "Carla",
    "Dmitri",
    "Elin",
    "Frida",
]
# few surnames, so about five people of a bank share one (an article calls its subject by the
# surname, and a question's surname alone then matches several articles)
_SURNAMES = ["Almqvist", "Borelli", "Castellan", "Dvorak", "Eskola", "Fairbairn", "Gallo"]
_TOWNS = (
    "Korvala",
    "San Telmo",
    "Brennick",
    "Ostavia",
    "Lake Marrow",
    "Dunmere",
    "Valcastro",
    "Hollin",
    "Pietrany",
    "Esk Harbour",
)
_NATIONS = ("Norvanian", "Estrelan", "Caldonian", "Vosgovian", "Marenese", "Tallic")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Field:
    noun: str  # "footballer"
    org_stems: tuple[str, ...]
    org_forms: tuple[str, ...]  # "{stem} United"
    join: tuple[str, ...]  # "{who} signed for {org}"
    move: tuple[str, ...]  # "{who} moved on to {org}"
    events: tuple[str, ...]  # "{who} scored twenty goals" (a verb phrase after the subject)
    filler: tuple[str, ...]
    ask: tuple[str, ...]  # "Which club did {name} play for {when}?"
    ask_after: str  # "Which club did {name} join after leaving {org}?"
    ask_first: str  # "Where did {name} begin {poss} professional career?"
    legacy: tuple[str, ...]


_FIELDS: tuple[_Field, ...] = (
    _Field(
        noun="footballer",
        org_stems=(
            "Arnholt",
            "Brisvale",
            "Cardow",
            "Dremmen",
            "Elsby",
            "Fornax",
            "Garrow",
            "Hallis",
            "Ivel",
            "Jessop",
            "Kelloway",
        ),
        org_forms=("{stem} United", "FC {stem}", "{stem} Athletic", "Sporting {stem}", "{stem} Rovers"),
        join=(
            "{who} signed for {org}",
            "{who} completed a transfer to {org}",
            "{who} joined {org} on a free transfer",
            "{org} paid a club-record fee to bring {who} in",
        ),
        move=(
            "{who} moved on to {org}",
            "{who} was sold to {org}",
            "{who} agreed terms with {org}",
            "{who} left for {org}",
        ),
        events=(
            "finished as the club's top scorer",
            "was named captain",
            "won the domestic cup",
            "suffered a serious knee injury",
            "made a hundredth league appearance",
            "was voted player of the season",
        ),
        filler=(
            "{surname} was used mainly as a deep-lying forward, a role the coaching staff "
            "built the side around.",
            "A brace against {other} in the cup drew the attention of several larger clubs.",
            "Supporters remember {poss} long-range goal against {other} as one of the finest "
            "seen at the old ground.",
            "The club's stadium, opened in {stray}, was rebuilt during this period to hold twenty thousand.",
            "Injuries to other forwards meant {pron} often played out of position on the left wing.",
            "{pron_cap} formed a productive partnership with the veteran striker of the side.",
            "Newspapers of the time described {poss} style as direct, quick and unselfish.",
            "A dispute over wages was settled after a short stand-off with the board.",
            "Matches against {other} regularly drew the largest crowds of the season.",
            "The manager later wrote that {surname} was the most disciplined player he had coached.",
            "{pron_cap} scored in both legs of a European tie, the club's first in decades.",
            "Training at the time was basic, and {surname} credited a local running club "
            "with {poss} fitness.",
        ),
        ask=(
            "Which team did {name} play for {when}?",
            "Which club was {name} with {when}?",
            "{When}, which club did {name} play for?",
            "{name} was on the books of which club {when}?",
            "Where was {name} playing {when}?",
        ),
        ask_after="Which club did {name} join after leaving {org}?",
        ask_first="Which club gave {name} {poss} first professional contract?",
        legacy=(
            "{surname} is remembered at {org} as one of the most complete forwards of {poss} generation.",
            "Supporters of {org} voted {surname} into the club's all-time eleven.",
        ),
    ),
    _Field(
        noun="physicist",
        org_stems=(
            "Halvard",
            "Ostrem",
            "Lindby",
            "Carrow",
            "Mistral",
            "Peverell",
            "Tamsin",
            "Wexmoor",
            "Ardent",
            "Bellhaven",
            "Quarrington",
        ),
        org_forms=(
            "University of {stem}",
            "{stem} Institute of Technology",
            "{stem} Research Centre",
            "the {stem} Laboratory",
            "{stem} College",
        ),
        join=(
            "{who} took up a lectureship at {org}",
            "{who} accepted a research post at {org}",
            "{who} was appointed to a chair at {org}",
            "{org} recruited {who} to lead a new group",
        ),
        move=(
            "{who} moved to {org}",
            "{who} accepted an offer from {org}",
            "{who} relocated the group to {org}",
            "{who} transferred to {org}",
        ),
        events=(
            "published the paper on low-temperature transport that made {poss} name",
            "was elected a fellow of the national academy",
            "won a major grant for a new cryogenic facility",
            "supervised {poss} twentieth doctoral student",
            "served as head of department",
            "delivered the annual memorial lecture",
        ),
        filler=(
            "Colleagues recall that {surname} insisted on building much of the apparatus by hand.",
            "The group collaborated closely with researchers at {other} on neutron scattering.",
            "{pron_cap} taught the undergraduate course on thermodynamics, which students rated highly.",
            "The department's building, completed in {stray}, housed one of the few dilution "
            "refrigerators in the country.",
            "A visiting year at {other} introduced {surname} to the methods of precision spectroscopy.",
            "Funding was tight, and {pron} relied on industrial partners for equipment.",
            "{pron_cap} wrote a widely used textbook chapter on phase transitions.",
            "Former students describe {surname} as demanding but generous with credit.",
            "A long-running disagreement with a rival group at {other} was conducted mostly "
            "in letters to journals.",
            "{pron_cap} sat on the editorial board of a leading physics journal.",
            "The work drew on data from a detector that {surname} had helped to design.",
            "Much of {poss} time was taken up with administrative duties {pron} later said {pron} regretted.",
        ),
        ask=(
            "Which institution employed {name} {when}?",
            "Where did {name} work {when}?",
            "{When}, where was {name} doing research?",
            "What university or institute was {name} at {when}?",
            "{name} held a post at which institution {when}?",
        ),
        ask_after="Where did {name} go after leaving {org}?",
        ask_first="Which institution gave {name} {poss} first academic post?",
        legacy=(
            "A lecture theatre at {org} was named after {surname}.",
            "{org} holds an annual prize for young physicists in {surname}'s honour.",
        ),
    ),
    _Field(
        noun="jazz musician",
        org_stems=(
            "Copperline",
            "Night Harbour",
            "Blue Ferris",
            "Salt Road",
            "Meridian",
            "Low Tide",
            "Orchid",
            "Velvet Arch",
            "Granite",
            "Red Lantern",
            "Silver Birch",
        ),
        org_forms=(
            "the {stem} Quintet",
            "the {stem} Orchestra",
            "{stem} Records",
            "the {stem} Big Band",
            "the {stem} Ensemble",
        ),
        join=(
            "{who} joined {org} as lead saxophonist",
            "{who} became a member of {org}",
            "{who} was hired by {org}",
            "{org} took {who} on for a national tour",
        ),
        move=(
            "{who} switched to {org}",
            "{who} was poached by {org}",
            "{who} went over to {org}",
            "{who} signed with {org}",
        ),
        events=(
            "recorded the album that became {poss} best seller",
            "toured the eastern provinces for six months",
            "won a national jazz award",
            "played a celebrated residency at a harbour-side club",
            "composed the suite still performed at festivals",
            "appeared on national television for the first time",
        ),
        filler=(
            "Critics praised {poss} warm tone and unhurried phrasing.",
            "{surname} often sat in with musicians from {other} at late-night sessions.",
            "The arrangements of the period leaned on modal harmony and long solos.",
            "A recording made with {other} circulated widely on tape before its official release.",
            "{pron_cap} practised for hours each day, a habit {pron} kept all {poss} life.",
            "The concert hall where the band played most often had opened in {stray}.",
            "Reviewers singled out {poss} ballad playing for particular praise.",
            "Touring conditions were hard, with long drives between small venues.",
            "{surname} wrote several pieces that entered the repertoire of {other}.",
            "Younger players came to hear {surname} and several later became band leaders themselves.",
            "A radio broadcast of one concert brought {poss} playing to a wider audience.",
            "The line-up changed often, but {surname} remained at the centre of the sound.",
        ),
        ask=(
            "Which band did {name} play with {when}?",
            "Who was {name} performing with {when}?",
            "{When}, which group was {name} a member of?",
            "{name} was with which ensemble or label {when}?",
            "What band did {name} belong to {when}?",
        ),
        ask_after="Which group did {name} join after leaving {org}?",
        ask_first="Which group did {name} first play with professionally?",
        legacy=(
            "{org} reissued {surname}'s recordings in a box set.",
            "Alumni of {org} still cite {surname} as a formative influence.",
        ),
    ),
    _Field(
        noun="business executive",
        org_stems=(
            "Vantor",
            "Kessling",
            "Alder",
            "Northwind",
            "Brightwater",
            "Camber",
            "Solace",
            "Tremont",
            "Hexley",
            "Marlowe",
            "Pennant",
        ),
        org_forms=(
            "{stem} Group",
            "{stem} Holdings",
            "{stem} Industries",
            "{stem} Bank",
            "{stem} Logistics",
        ),
        join=(
            "{who} joined {org} as finance director",
            "{who} was appointed chief operating officer of {org}",
            "{who} was hired by {org} to run its overseas division",
            "{org} named {who} as its new chief executive",
        ),
        move=(
            "{who} moved to {org}",
            "{who} was headhunted by {org}",
            "{who} took the top job at {org}",
            "{who} crossed over to {org}",
        ),
        events=(
            "oversaw a merger that doubled the firm's size",
            "led a restructuring that closed three plants",
            "launched the firm's first online service",
            "steered the company through a debt crisis",
            "opened offices in four new countries",
            "was named executive of the year by a trade magazine",
        ),
        filler=(
            "Analysts credited {surname} with a sharp focus on costs.",
            "{pron_cap} negotiated a supply agreement with {other} that ran for many years.",
            "The company's headquarters, built in {stem_year}, was sold and leased back during this time.",
            "Staff surveys from the period describe {surname} as approachable but impatient.",
            "A takeover approach from {other} was rejected after a bitter public exchange.",
            "{pron_cap} sat on the boards of two charities alongside {poss} executive duties.",
            "The share price rose steadily, though critics pointed to rising debt.",
            "{surname} was known for visiting branch offices unannounced.",
            "A competitor, {other}, was growing faster in the same markets.",
            "{pron_cap} championed a graduate scheme that trained several later chief executives.",
            "The business press followed {poss} decisions closely.",
            "Relations with the unions were tense but never broke down into strikes.",
        ),
        ask=(
            "Which company did {name} work for {when}?",
            "Which firm employed {name} {when}?",
            "{When}, which company was {name} at?",
            "{name} was an executive at which company {when}?",
            "Where did {name} work {when}?",
        ),
        ask_after="Which company did {name} join after leaving {org}?",
        ask_first="Which company did {name} first join as an executive?",
        legacy=(
            "Former colleagues at {org} still describe {surname} as the best manager they worked for.",
            "{org} endowed a business scholarship in {surname}'s name.",
        ),
    ),
)

_NUMBERS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Stint:
    org: str
    start: int  # the year joined
    end: int  # the year left (the next stint starts that year)


@dataclass(frozen=True, slots=True, kw_only=True)
class WikiQuestion:
    """A question with its gold paragraph and what makes it answerable there."""

    question: str
    category: int
    evidence: str  # the gold paragraph's id
    answer: str  # the organisation
    years: tuple[int, ...]  # the years the question names (empty for an untimed question)


@dataclass(frozen=True, slots=True, kw_only=True)
class WikiArticleSet:
    """One bank: paragraphs (id, text), the stints each paragraph tells, and the questions."""

    paragraphs: tuple[tuple[str, str], ...]
    stints: dict[str, tuple[_Stint, ...]]
    questions: tuple[WikiQuestion, ...]


def _decade_phrase(year: int) -> str:
    decade = year - year % 10
    part = "early" if year % 10 < 4 else "mid-" if year % 10 < 7 else "late"
    label = f"{decade}s"
    return f"the {part}{'' if part.endswith('-') else ' '}{label}"


def _season(year: int) -> str:
    return f"{year}–{(year + 1) % 100:02d}"


class _Writer:
    """Writes one article's sentences; keeps the person's names and pronouns."""

    def __init__(self, rng: random.Random, field: _Field, name: str, female: bool, bank_orgs: Sequence[str]):
        self.rng, self.field, self.name = rng, field, name
        self.surname = name.split()[-1]
        self.pron, self.poss = ("she", "her") if female else ("he", "his")
        self.orgs = bank_orgs

    def who(self) -> str:
        return self.rng.choice((self.surname, self.surname, self.pron, self.name))

    def filler(self, template: str, avoid: Sequence[str]) -> str:
        others = [o for o in self.orgs if o not in avoid]
        return template.format(
            surname=self.surname,
            pron=self.pron,
            pron_cap=self.pron.capitalize(),
            poss=self.poss,
            other=self.rng.choice(others) if "{other}" in template else "",
            stray=self.rng.randint(1890, 1965),
            stem_year=self.rng.randint(1890, 1965),
        )

    def pad(self, sentences: list[str], avoid: Sequence[str], target: int) -> str:
        """Insert filler sentences (each template once, after the first sentence) until the
        paragraph reaches ``target`` words, never past :data:`MAX_WORDS`."""
        out = list(sentences)
        templates = list(self.field.filler)
        self.rng.shuffle(templates)
        words = sum(len(s.split()) for s in out)
        spare = [o for o in self.orgs if o not in avoid]
        for template in templates:
            if words >= target:
                break
            if "{other}" in template and not spare:
                continue
            sentence = self.filler(template, avoid)
            if words + len(sentence.split()) > MAX_WORDS:
                continue
            out.insert(self.rng.randint(1, len(out)), sentence)
            words += len(sentence.split())
        return " ".join(_cap(s) for s in out)


def _cap(s: str) -> str:
    return s[0].upper() + s[1:]


def _career_paragraph(
    w: _Writer, stints: Sequence[_Stint], previous: _Stint | None, target: int
) -> tuple[str, set[int]]:
    """A paragraph telling ``stints`` (consecutive), its first anchored to a year; the years it
    writes out. Later stints are told by a relative phrase or a range."""
    rng, f = w.rng, w.field
    sentences: list[str] = []
    written: set[int] = set()
    for i, s in enumerate(stints):
        who = w.who() if i else (w.surname if rng.random() < 0.7 else w.name)
        if i == 0:
            verb = rng.choice(f.join if previous is None else f.move).format(who=who, org=s.org)
            if previous is not None and rng.random() < 0.5:
                lead = f"After leaving {previous.org}, "
                verb = verb[0].lower() + verb[1:] if verb.startswith(("He ", "She ")) else verb
            else:
                lead = ""
            style = rng.randrange(5)
            if style == 0:
                sentences.append(f"{lead}in {s.start}, {verb}." if lead else f"In {s.start}, {verb}.")
                written.add(s.start)
            elif style == 1:
                sentences.append(f"{lead}{verb} in the summer of {s.start}.")
                written.add(s.start)
            elif style == 2:
                sentences.append(f"{lead}{verb} ahead of the {_season(s.start)} season.")
                written.add(s.start)
            elif style == 3:
                sentences.append(f"{lead}{verb}, staying from {s.start} to {s.end}.")
                written.update((s.start, s.end))
            else:
                sentences.append(f"{lead}{verb} ({s.start}–{s.end}).")
                written.update((s.start, s.end))
        else:
            prev = stints[i - 1]
            gap = s.start - prev.start
            verb = rng.choice(f.move).format(who=who, org=s.org)
            style = rng.randrange(4)
            if style == 0 and prev.end - prev.start == 1:
                sentences.append(f"The following season {verb}.")
            elif style <= 1:
                sentences.append(f"{_cap(_NUMBERS[gap - 1])} {'year' if gap == 1 else 'years'} later {verb}.")
            elif style == 2:
                sentences.append(f"{verb}, where {w.pron} spent {s.start}–{s.end}.")
                written.update((s.start, s.end))
            else:
                sentences.append(f"{verb} in {s.start}.")
                written.add(s.start)
        inner = list(range(s.start + 1, s.end))
        if inner and rng.random() < 0.55:
            year = rng.choice(inner)
            event = rng.choice(f.events).format(poss=w.poss)
            form = rng.randrange(3)
            if form == 0:
                sentences.append(f"In {year} {w.who()} {event}.")
            elif form == 1:
                sentences.append(f"{w.who()} {event} in {year}.")
            else:
                sentences.append(f"During the {_season(year)} season {w.who()} {event}.")
            written.add(year)
        if i == len(stints) - 1 and rng.random() < 0.5:
            sentences.append(f"{w.surname} stayed at {s.org} until {s.end}.")
            written.add(s.end)
    avoid = [s.org for s in stints] + ([previous.org] if previous else [])
    text = w.pad(sentences, avoid, target)
    # fillers write stray years (buildings' openings); they are before any career
    return text, written


def _career(rng: random.Random, born: int, orgs: Sequence[str]) -> list[_Stint]:
    start = born + rng.randint(18, 22)
    stints: list[_Stint] = []
    pool = list(orgs)
    rng.shuffle(pool)
    for org in pool[: rng.randint(4, 7)]:
        length = rng.choice((1, 2, 3, 3, 4, 4, 5, 6, 7))
        end = start + length
        if end >= QUERY_TIME.year - 1:
            break
        stints.append(_Stint(org=org, start=start, end=end))
        start = end
    return stints


def _article(
    rng: random.Random, p: int, bank: int, field: _Field, orgs: Sequence[str], name: str, female: bool
) -> tuple[list[tuple[str, str, tuple[_Stint, ...]]], list[WikiQuestion]]:
    w = _Writer(rng, field, name, female, orgs)
    born = rng.randint(1935, 1972)
    stints = _career(rng, born, orgs)
    while len(stints) < 3:
        stints = _career(rng, born, orgs)
    key = f"W{bank}:P{p}"
    paras: list[tuple[str, str, tuple[_Stint, ...]]] = []
    town, nation = rng.choice(_TOWNS), rng.choice(_NATIONS)
    famous = rng.sample(stints, 2)
    first, last = stints[0], stints[-1]
    lead = [
        f"{name} (born {born} in {town}) is a {nation} {field.noun}.",
        f"Best known for {w.poss} years at {famous[0].org} and {famous[1].org}, {w.pron} was active "
        f"from {_decade_phrase(first.start)} until {last.end}.",
        f"By {_decade_phrase(stints[len(stints) // 2].start)} {w.pron} was regarded as one of the leading "
        f"figures of {w.poss} field.",
    ]
    paras.append((f"{key}:lead", w.pad(lead, [], rng.randint(MIN_WORDS, 140)), ()))
    early = [
        f"{w.surname} grew up in {town}, where {w.poss} father ran a hardware shop.",
        f"As a teenager {w.pron} spent a year training with {rng.choice(orgs)}'s youth programme "
        "but was not kept on.",
    ]
    paras.append((f"{key}:early", w.pad(early, [], rng.randint(MIN_WORDS, 160)), ()))
    # career paragraphs: one to three stints each
    i, section, previous = 0, 0, None
    questions: list[WikiQuestion] = []
    stint_para: dict[int, str] = {}
    written_by_para: dict[str, set[int]] = {}
    while i < len(stints):
        size = min(rng.choice((1, 1, 2, 2, 3)), len(stints) - i)
        group = stints[i : i + size]
        pid = f"{key}:career{section}"
        text, written = _career_paragraph(w, group, previous, rng.randint(MIN_WORDS + 20, MAX_WORDS))
        paras.append((pid, text, tuple(group)))
        written_by_para[pid] = written
        for j in range(i, i + size):
            stint_para[j] = pid
        previous = group[-1]
        i += size
        section += 1
    legacy_org = rng.choice(stints).org
    legacy = [
        rng.choice(field.legacy).format(org=legacy_org, surname=w.surname, poss=w.poss),
        f"After retiring in {last.end} {w.pron} returned to {town}.",
        f"In {rng.randint(last.end + 1, QUERY_TIME.year)} {w.pron} was given a lifetime award.",
    ]
    paras.append((f"{key}:legacy", w.pad(legacy, [legacy_org], rng.randint(MIN_WORDS, 180)), ()))
    personal = [
        f"{w.surname} married in {rng.randint(first.start, last.end)} and has "
        f"{rng.choice(_NUMBERS[1:4])} children.",
        f"{w.poss.capitalize()} brother also worked for {rng.choice(orgs)} for a time.",
    ]
    paras.append((f"{key}:personal", w.pad(personal, [], rng.randint(MIN_WORDS, 130)), ()))
    # a style section naming organisations without years, and an honours section writing career
    # years without organisations: each shares words with the questions and answers none
    style = [
        f"Contemporaries compared {w.surname} with the best of {w.poss} peers at "
        f"{rng.choice(orgs)} and {rng.choice(orgs)}.",
        f"{w.pron.capitalize()} was noted for consistency rather than flair.",
    ]
    paras.append((f"{key}:style", w.pad(style, [], rng.randint(MIN_WORDS, 160)), ()))
    years = sorted(rng.sample(range(first.start, last.end + 1), min(5, last.end - first.start + 1)))
    honours = [
        f"{w.surname}'s honours include the national award of {years[0]}, a regional prize in "
        f"{years[1]} and recognition from {w.poss} peers in {', '.join(str(y) for y in years[2:])}.",
        f"{w.pron.capitalize()} was shortlisted for the main annual prize in {rng.choice(years)}.",
    ]
    paras.append((f"{key}:honours", w.pad(honours, list(orgs), rng.randint(MIN_WORDS, 140)), ()))

    def ask(when: str) -> str:
        template = rng.choice(field.ask)
        return template.format(name=name, when=when, When=_cap(when))

    for j, s in enumerate(stints):
        pid = stint_para[j]
        inner = list(range(s.start + 1, s.end))
        if inner:
            stated = [y for y in inner if y in written_by_para[pid]]
            unstated = [y for y in inner if y not in written_by_para[pid]]
            if stated and (not unstated or rng.random() < 0.5):
                y = rng.choice(stated)
                questions.append(
                    WikiQuestion(question=ask(f"in {y}"), category=9, evidence=pid, answer=s.org, years=(y,))
                )
            elif unstated:
                y = rng.choice(unstated)
                questions.append(
                    WikiQuestion(question=ask(f"in {y}"), category=10, evidence=pid, answer=s.org, years=(y,))
                )
        if len(inner) >= 2 and rng.random() < 0.5:
            y = rng.choice(inner[:-1])
            when = f"during the {_season(y)} season" if rng.random() < 0.5 else f"between {y} and {y + 1}"
            questions.append(
                WikiQuestion(question=ask(when), category=11, evidence=pid, answer=s.org, years=(y, y + 1))
            )
        if j > 0 and rng.random() < 0.3:
            # the paragraph telling stint j names the previous organisation (same paragraph, or the
            # opening "After leaving ..." of a new one)
            prev_pid = stint_para[j - 1]
            text = next(t for k, t, _ in paras if k == pid)
            if prev_pid == pid or stints[j - 1].org in text:
                q = field.ask_after.format(name=name, org=stints[j - 1].org)
                questions.append(
                    WikiQuestion(question=q, category=UNTIMED, evidence=pid, answer=s.org, years=())
                )
    if rng.random() < 0.4:
        q = field.ask_first.format(name=name, poss=w.poss)
        questions.append(
            WikiQuestion(question=q, category=UNTIMED, evidence=stint_para[0], answer=stints[0].org, years=())
        )
    return paras, questions


def stem_of(org: str, field: _Field) -> str:
    return next(stem for stem in field.org_stems if stem in org)


def _bank_orgs(rng: random.Random, field: _Field) -> list[str]:
    names: list[str] = []
    while len(names) < ORGS_PER_FIELD:
        org = rng.choice(field.org_forms).format(stem=rng.choice(field.org_stems))
        # one organisation per stem, so two names never differ only by their form
        if all(stem_of(org, field) != stem_of(n, field) for n in names):
            names.append(org)
    return names


def wiki_articles(seed: int, banks: int) -> list[WikiArticleSet]:
    """The banks of articles (deterministic for a seed), with the answers kept."""
    rng = random.Random(seed)
    out: list[WikiArticleSet] = []
    for b in range(banks):
        orgs = [_bank_orgs(rng, f) for f in _FIELDS]
        used: list[str] = []
        paragraphs: list[tuple[str, str]] = []
        stints: dict[str, tuple[_Stint, ...]] = {}
        questions: list[WikiQuestion] = []
        for p in range(PEOPLE_PER_BANK):
            fi = p % len(_FIELDS)
            name = f"{rng.choice(_FIRST)} {rng.choice(_SURNAMES)}"
            while name in used:
                name = f"{rng.choice(_FIRST)} {rng.choice(_SURNAMES)}"
            used.append(name)
            paras, qs = _article(rng, p, b, _FIELDS[fi], orgs[fi], name, rng.random() < 0.5)
            for pid, text, told in paras:
                paragraphs.append((pid, text))
                stints[pid] = told
            questions.extend(qs)
        out.append(WikiArticleSet(paragraphs=tuple(paragraphs), stints=stints, questions=tuple(questions)))
    return out


def wiki_conversations(seed: int, banks: int, prefix: str) -> list[Conversation]:
    """The banks as LoCoMo-shaped conversations: one article per session (conversation context
    at retain joins a paragraph to the previous one of the same article, never another's)."""
    convs: list[Conversation] = []
    for b, bank in enumerate(wiki_articles(seed, banks)):
        turns = tuple(
            Turn(dia_id=pid, speaker="", text=text, session=int(pid.split(":")[1][1:]), mentioned_at=INGESTED)
            for pid, text in bank.paragraphs
        )
        questions = tuple(
            Question(question=q.question, category=q.category, evidence=(q.evidence,)) for q in bank.questions
        )
        convs.append(
            Conversation(
                index=b, sample_id=f"{prefix}-{b}", turns=turns, questions=questions, query_time=QUERY_TIME
            )
        )
    return convs
