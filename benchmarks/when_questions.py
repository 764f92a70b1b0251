""""When did X ...?" questions over dated notes (fictional, rule-generated): the ``when-notes`` set.

Evaluation data of our own making for issue 11's temporal questions without a date in them, in
a form that is neither LoCoMo's chat transcript nor an encyclopedia paragraph: a household
journal of short third-person notes about a circle of people ("Ilse Marr ran the city half
marathon last Saturday."). Each question asks when one person did one thing; its only evidence
is the note stating when (a relative date resolved against the note's own time, a weekday, or
a day and month). Every question has hard negatives built the way a real log has them:

* notes about the same person and the same thing that say no time ("Ilse Marr keeps talking
  about the city half marathon.", "Ilse Marr would like to run the city half marathon again.");
* the same thing done by someone else, dated ("Tomas Brell ran the city half marathon two
  days ago.");
* the same person's other dated events (the evidence of other questions), and undated filler.

The question uses the verb's base form and the evidence its past tense ("When did Ilse Marr run
...?" / "... ran ..."), as people ask. Nothing here was tuned on: the templates were written
before any system ran on them, from a seeded ``random.Random`` (same command, same text).
Registered as the ``when-notes`` dataset of :mod:`dated_paragraphs` (category 5, "when"):

    .venv/bin/python benchmarks/dated_paragraphs.py --dataset when-notes \\
        --systems ours ours:no-temporal ours:passthrough llamaindex-bm25 langchain-ensemble
"""

from __future__ import annotations

import datetime as dt
import random

from _locomo import Conversation, Question, Turn

__all__ = ["WHEN_CATEGORY", "when_notes"]

WHEN_CATEGORY = 5
SEED = 20261201
BANKS = 3
PEOPLE_PER_BANK = 8
EVENTS_PER_PERSON = 5
QUERY_TIME = dt.datetime(2024, 1, 10, 12, 0)
_YEAR = 2023

_FIRST = (
    "Ilse", "Tomas", "Priya", "Goran", "Anouk", "Felix", "Maren", "Oskar", "Lidia", "Rafael",
    "Yusuf", "Greta", "Hana", "Jonas", "Carmen", "Nils", "Elena", "Mateo", "Sanne", "Kofi",
    "Astrid", "Dario", "Wren", "Leona",
)  # fmt: skip
_LAST = (
    "Marr", "Brell", "Okafor", "Lindqvist", "Vasquez", "Dunmore", "Keller", "Rowan", "Sato",
    "Halvorsen", "Pellegrini", "Abara", "Moreau", "Tiernan", "Novak", "Quist",
)  # fmt: skip

# (base form, past tense, the thing): what a question asks and what the evidence writes.
_EVENTS = (
    ("go to the pottery workshop", "went to the pottery workshop", "the pottery workshop"),
    ("run the city half marathon", "ran the city half marathon", "the city half marathon"),
    ("adopt a puppy from the shelter", "adopted a puppy from the shelter", "the shelter puppy"),
    ("start the new job at the bakery", "started the new job at the bakery", "the bakery job"),
    ("move into the flat on Elm Street", "moved into the flat on Elm Street", "the flat on Elm Street"),
    ("buy the second-hand piano", "bought the second-hand piano", "the second-hand piano"),
    ("visit the aquarium", "visited the aquarium", "the aquarium"),
    ("fly to Lisbon", "flew to Lisbon", "the trip to Lisbon"),
    ("pass the driving test", "passed the driving test", "the driving test"),
    ("sell the old van", "sold the old van", "the old van"),
    ("join the climbing club", "joined the climbing club", "the climbing club"),
    ("paint the kitchen", "painted the kitchen", "the kitchen paint job"),
    ("break a wrist", "broke a wrist", "the broken wrist"),
    ("see the comet", "saw the comet", "the comet"),
    ("win the chess tournament", "won the chess tournament", "the chess tournament"),
    ("give a talk at the library", "gave a talk at the library", "the library talk"),
    ("plant the apple tree", "planted the apple tree", "the apple tree"),
    ("finish the patchwork quilt", "finished the patchwork quilt", "the patchwork quilt"),
    ("meet the new neighbours", "met the new neighbours", "the new neighbours"),
    ("cook dinner for the book club", "cooked dinner for the book club", "the book club dinner"),
    ("lose the house keys", "lost the house keys", "the house keys"),
    ("fix the garden fence", "fixed the garden fence", "the garden fence"),
    ("take the ferry to the island", "took the ferry to the island", "the island ferry"),
    ("sing at the open-mic night", "sang at the open-mic night", "the open-mic night"),
)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
# Notes about the thing that say no time: the same words as the question, no answer.
_UNDATED = (
    "{name} keeps talking about {thing}.",
    "{name} would like to {base} again some day.",
    "{name} said {thing} was worth every minute.",
    "Everyone asks {name} about {thing}.",
    "{name} has photos of {thing} on the fridge.",
    "{name} still laughs about {thing}.",
)
_FILLER = (
    "{name} is learning to bake sourdough bread.",
    "{name} prefers tea to coffee in the mornings.",
    "{name} is reading a long novel about sailors.",
    "{name} thinks the bus timetable changed again.",
    "{name} has been sleeping badly because of the heat.",
    "{name} lent an umbrella to a neighbour.",
    "{name} wants to repaint the bicycle green.",
    "{name} found a good recipe for lentil soup.",
)


def _when(rng: random.Random, said: dt.datetime) -> str:
    """A time the date parser can resolve against the note's own time ``said``."""
    kind = rng.randrange(5)
    if kind == 0:
        return "yesterday"
    if kind == 1:
        return "two days ago"
    if kind == 2:
        return "last week"
    if kind == 3:  # the weekday before the note's day
        back = rng.randint(1, 6)
        return f"last {_WEEKDAYS[(said - dt.timedelta(days=back)).weekday()]}"
    day = said - dt.timedelta(days=rng.randint(3, 20))
    return f"on {day.day} {_MONTHS[day.month - 1]}"


def _dated(rng: random.Random, name: str, past: str, when: str) -> str:
    if rng.random() < 0.5:
        return f"{name} {past} {when}."
    lead = when[0].upper() + when[1:]
    return f"{lead}, {name} {past}."


def _bank(rng: random.Random, index: int) -> Conversation:
    names: list[str] = []
    while len(names) < PEOPLE_PER_BANK:
        name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
        if name not in names and name.split()[0] not in {n.split()[0] for n in names}:
            names.append(name)
    notes: list[tuple[dt.datetime, str, str]] = []  # (said, key, text)
    questions: list[Question] = []
    start = dt.datetime(_YEAR, 1, 15, 9, 0)
    events = [rng.sample(_EVENTS, EVENTS_PER_PERSON) for _ in names]
    for p, name in enumerate(names):
        for e, (base, past, thing) in enumerate(events[p]):
            said = start + dt.timedelta(days=rng.randint(0, 330), hours=rng.randint(0, 10))
            key = f"B{index}:P{p}:E{e}"
            notes.append((said, key, _dated(rng, name, past, _when(rng, said))))
            for u, template in enumerate(rng.sample(_UNDATED, rng.randint(1, 3))):
                later = said + dt.timedelta(days=rng.randint(1, 40), hours=rng.randint(0, 8))
                notes.append((later, f"{key}:u{u}", template.format(name=name, base=base, thing=thing)))
            if rng.random() < 0.6:  # someone else did the same thing, on another day
                # someone who was not asked about it: their note is no second answer
                other = rng.choice([n for q, n in enumerate(names) if (base, past, thing) not in events[q]])
                when_other = said + dt.timedelta(days=rng.randint(-60, 60))
                notes.append((when_other, f"{key}:o", _dated(rng, other, past, _when(rng, when_other))))
            questions.append(
                Question(question=f"When did {name} {base}?", category=WHEN_CATEGORY, evidence=(key,))
            )
        for f, template in enumerate(rng.sample(_FILLER, 3)):
            said = start + dt.timedelta(days=rng.randint(0, 330), hours=rng.randint(0, 10))
            notes.append((said, f"B{index}:P{p}:F{f}", template.format(name=name)))
    notes.sort(key=lambda n: (n[0], n[1]))
    # one document per month of the journal, notes in the order written
    turns = tuple(
        Turn(dia_id=key, speaker="", text=text, session=said.month, mentioned_at=said)
        for said, key, text in notes
    )
    return Conversation(
        index=index,
        sample_id=f"when-notes-{index}",
        turns=turns,
        questions=tuple(questions),
        query_time=QUERY_TIME,
    )


def when_notes() -> list[Conversation]:
    """The ``when-notes`` banks (deterministic)."""
    rng = random.Random(SEED)
    return [_bank(rng, i) for i in range(BANKS)]
