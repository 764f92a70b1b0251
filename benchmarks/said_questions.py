"""Time questions over chats whose evidence tells the event without a date: the ``said-chats`` set.

Evaluation data of our own making for issue 11's temporal machinery (fictional, rule-generated,
seeded; no LoCoMo text). In a chat, much of what people tell carries no date of its own: "I just
got back from the pottery class, my hands are still covered in clay." said in a session on a
known day. When that is the evidence, its time is *when it was said*; a retrieval that favours
memories stating their own date pushes it below the same speaker's dated talk about other or
related things. Each bank is a multi-session chat between two people (one memory per turn,
``<speaker> said, "<text>"``, said at the session's time), and asks four kinds of question:

* category 6, "when, undated gold": "When did Mara go to the pottery class?", answered by a turn
  telling it with no date (its said time is the answer);
* category 5, "when, dated gold": the same question, answered by a turn stating when ("I went to
  the pottery class last Saturday.", resolved at retain against the turn's time);
* category 7, "names a day, undated gold": "What did Mara bake on 14 March 2023?", answered by
  a turn said that day telling it without a date ("Look, I baked a lemon tart!");
* category 8, "names a day, dated gold": the same question, answered by a turn stating the day
  ("I baked a lemon tart yesterday.", said the day after).

Hard negatives, mixed through every bank: the same speaker's dated turns about other things
(the evidence of other questions, plans with a date, errands "on Tuesday"), dated and undated
turns about the same thing that do not tell when it happened ("I'm going back to the pottery
class next week.", "That pottery class was the best thing I did all year." said weeks later),
the other speaker doing the same thing on another day, with a date, and the same speaker doing
another thing of the same kind (baking rye bread) on other days, dated or not. Templates,
speakers and activities vary; nothing here was tuned on, and the templates were written before
any system ran on them. Registered as the ``said-chats`` dataset of :mod:`dated_paragraphs`:

    .venv/bin/python benchmarks/dated_paragraphs.py --dataset said-chats \\
        --systems ours ours:no-temporal ours:passthrough llamaindex-bm25 langchain-ensemble
"""

from __future__ import annotations

import datetime as dt
import random

from _locomo import Conversation, Question, Turn

__all__ = ["SAID_CATEGORIES", "said_chats"]

SEED = 20261202
BANKS = 6
SESSIONS = 28
WHEN_EVENTS = 6  # "when" questions per speaker, half told without a date
KINDS = 2  # kinds of windowed activity per speaker (baking, buying, ...)
OBJECTS = 3  # things of one kind per speaker, each on its own day
_YEAR = 2023

SAID_CATEGORIES: dict[int, str] = {
    5: "when",
    6: "when, undated gold",
    7: "names a day, undated gold",
    8: "names a day, dated gold",
}

_FIRST = (
    "Mara", "Tobias", "Ines", "Jarek", "Noor", "Callum", "Freya", "Bastian", "Lucia", "Emeka",
    "Signe", "Hugo", "Talia", "Ruben", "Aiko", "Milos",
)  # fmt: skip

# (base form, past tense, the thing, told without a date, a plan about it with a date, a later
# undated remark, told without a date and without the question's words): a "when" event. {w}
# in a plan is a future time ("next week").
_WHEN_EVENTS = (
    (
        "go to the pottery class",
        "went to the pottery class",
        "the pottery class",
        "I just got back from the pottery class, my hands are still covered in clay.",
        "I'm going back to the pottery class {w}, I want to try the wheel again.",
        "That pottery class was the most relaxing thing I've done in ages.",
        "My hands are still covered in clay, I made my first bowl on the wheel!",
    ),
    (
        "run the harbour 10k",
        "ran the harbour 10k",
        "the harbour 10k",
        "I finally ran the harbour 10k! My legs are jelly but I finished.",
        "I'm thinking of doing the harbour 10k again {w}.",
        "People keep asking me about the harbour 10k, I'm still proud of it.",
        "Ten kilometres along the water and I crossed the finish line, my legs are jelly.",
    ),
    (
        "adopt the kitten",
        "adopted a kitten",
        "the kitten",
        "Meet Pepper! I adopted a kitten from the rescue centre, she's asleep on my lap.",
        "The kitten has her vet check-up {w}.",
        "The kitten has taken over the whole sofa by now.",
        "Meet Pepper! She's tiny and grey and already asleep on my lap.",
    ),
    (
        "move into the new flat",
        "moved into the new flat",
        "the new flat",
        "I'm writing this from a floor full of boxes, I moved into the new flat!",
        "My parents are coming to see the new flat {w}.",
        "The new flat still feels strange, but I love the light.",
        "The keys are finally mine and the movers just left, I'm sitting on a box eating noodles.",
    ),
    (
        "visit the glass museum",
        "visited the glass museum",
        "the glass museum",
        "I went to the glass museum with my cousin, the blown-glass birds were unreal.",
        "I'll take my nephew to the glass museum {w}.",
        "I keep thinking about those birds at the glass museum.",
        "The blown-glass birds were unreal, my cousin and I stayed until closing.",
    ),
    (
        "start the evening Spanish course",
        "started the evening Spanish course",
        "the Spanish course",
        "Guess what, I started the evening Spanish course, the teacher is so funny.",
        "My first Spanish exam is {w}, wish me luck.",
        "The Spanish course is harder than I thought, so many verbs.",
        "Lesson one done: hola, me llamo... that's all I've got so far.",
    ),
    (
        "sing at the open-mic night",
        "sang at the open-mic night",
        "the open-mic night",
        "I actually sang at the open-mic night and nobody threw anything!",
        "There's another open-mic night {w}, maybe I'll sing again.",
        "My friends still tease me about the open-mic night.",
        "I got up on stage in front of strangers with my guitar and nobody threw anything!",
    ),
    (
        "sell the old motorbike",
        "sold the old motorbike",
        "the old motorbike",
        "The old motorbike is gone, I sold it to a student who was thrilled.",
        "I have to sign the papers for the old motorbike {w}.",
        "I kind of miss the old motorbike, silly as that is.",
        "A student just rode off on my old bike, he was thrilled, I'm a little sad.",
    ),
    (
        "go camping by the lake",
        "went camping by the lake",
        "the camping trip",
        "Back from camping by the lake, I smell like a campfire and I'm so happy.",
        "We're planning another camping trip by the lake {w}.",
        "The camping trip by the lake was exactly what I needed.",
        "Two nights in a tent by the water, I smell like a campfire and I'm so happy.",
    ),
    (
        "plant the vegetable garden",
        "planted the vegetable garden",
        "the vegetable garden",
        "My back hurts, I planted the whole vegetable garden, tomatoes, beans, everything.",
        "I need to buy more seeds for the vegetable garden {w}.",
        "The vegetable garden is the best thing on the balcony.",
        "My back hurts, tomatoes, beans and courgettes are all in the ground now.",
    ),
    (
        "win the chess tournament",
        "won the chess tournament",
        "the chess tournament",
        "I won the chess tournament at the club, I still can't believe it!",
        "The next chess tournament at the club is {w}.",
        "Winning the chess tournament gave me so much confidence.",
        "Five games at the club and my opponent in the final resigned, first prize is mine!",
    ),
    (
        "get the new tattoo",
        "got a new tattoo",
        "the tattoo",
        "Look at my arm! I got a new tattoo, a little swallow.",
        "I'm going back to the studio {w} so they can touch up the tattoo.",
        "The tattoo has healed nicely, I love it.",
        "Look at my arm! A little swallow, it stung but it's beautiful.",
    ),
    (
        "fly out to see grandma",
        "flew out to see grandma",
        "the visit to grandma",
        "I'm at my grandmother's now, I flew in to see her and she made soup.",
        "I'm flying to see my grandmother again {w}.",
        "Seeing my grandmother did me a world of good.",
        "Grandma made soup the minute I landed and won't stop feeding me.",
    ),
    (
        "paint the bedroom",
        "painted the bedroom",
        "the bedroom",
        "The bedroom is sage green now! I painted it myself, there's paint in my hair.",
        "I'll put the shelves up in the bedroom {w}.",
        "The green bedroom makes mornings so calm.",
        "The walls are sage green now and there's paint in my hair.",
    ),
)

# The question and evidence of a question naming a day: (question verb, kinds of object,
# undated-telling templates, dated-telling templates). {o}: the object; {d}: a past time.
_KINDS = (
    (
        "bake",
        ("a lemon tart", "rye bread", "cinnamon buns", "a carrot cake", "an apple pie", "oat cookies"),
        ("Look, I baked {o}! The kitchen smells amazing.", "Look what came out of the oven: {o}!"),
        ("I baked {o} {d}, it was gone in an hour.", "{D} I baked {o} for the neighbours."),
    ),
    (
        "buy",
        (
            "a second-hand cello",
            "a red kayak",
            "new hiking boots",
            "a vintage lamp",
            "a telescope",
            "a sewing machine",
        ),
        ("I bought {o}, I'm so excited to use it.", "{O} is mine now, it was a bargain!"),
        ("I bought {o} {d}, a real bargain.", "{D} I finally bought {o}."),
    ),
    (
        "visit",
        (
            "the botanical garden",
            "an old lighthouse",
            "the flea market",
            "the castle ruins",
            "the city zoo",
            "a cider farm",
        ),
        ("We spent the afternoon at {o}, look at these photos.", "I'm just back from {o}, what a place."),
        ("I visited {o} {d}, the weather was perfect.", "{D} we went to {o}."),
    ),
    (
        "watch",
        (
            "a play about sailors",
            "a documentary on volcanoes",
            "an old silent film",
            "a puppet show",
            "the ballet",
            "a jazz concert",
        ),
        ("I watched {o}, I'm still thinking about it.", "Just saw {o}, it was wonderful."),
        ("I watched {o} {d}, it was wonderful.", "{D} I saw {o} with a friend."),
    ),
    (
        "cook",
        (
            "a big pot of curry",
            "fresh pasta",
            "a fish stew",
            "dumplings",
            "a mushroom risotto",
            "stuffed peppers",
        ),
        ("I cooked {o} for everyone, not a crumb left.", "{O} for dinner, not a crumb left!"),
        ("I cooked {o} {d} for the whole family.", "{D} I made {o} for friends."),
    ),
    (
        "read",
        (
            "a novel about whalers",
            "a biography of a chemist",
            "a book of ghost stories",
            "a travel memoir",
            "a poetry collection",
            "a mystery set in Oslo",
        ),
        ("I finished {o}, I couldn't put it down.", "I just read {o} in one sitting."),
        ("I finished {o} {d}, what an ending.", "{D} I read {o} cover to cover."),
    ),
)

# Dated chit-chat about other things: the same speaker's hard negatives for every question.
_DATED_FILLER = (
    "I had a dentist appointment {d}, all fine.",
    "My sister is coming to stay {w}.",
    "{D} the power was out for three hours.",
    "I have a job interview {w}, fingers crossed.",
    "The car broke down {d}, so annoying.",
    "I'm helping a friend move house {w}.",
    "{D} I met an old school friend by chance.",
    "My landlord is fixing the boiler {w}.",
    "I went to the gym {d} for the first time in months.",
    "{D} I cleaned out the whole garage.",
    "We had a family dinner {d}, my uncle told the same jokes.",
    "I'm going to a wedding {w}, I need a suit.",
    "I took the train to the coast {d}, just for the day.",
    "{D} I finally called the bank about my card.",
    "My best friend's birthday party is {w}.",
    "I repaired my bike {d}, the brakes work again.",
    "{D} we had a picnic in the park.",
    "I got my hair cut {d}, it's very short now.",
    "There's a street festival {w}, want to come?",
    "I started a new puzzle {d}, a thousand pieces.",
)
_FILLER = (
    "How have you been?",
    "That sounds lovely, tell me more.",
    "Haha, that's so you.",
    "I've been so tired lately, work is a lot.",
    "The weather has been grey all week.",
    "Did you ever finish that show we talked about?",
    "I'm glad you're doing well.",
    "We should meet up soon.",
    "My neighbour's dog keeps barking at night.",
    "I'm trying to drink less coffee.",
    "Anyway, enough about me, how's work?",
    "That made me laugh out loud.",
)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip


def _past(rng: random.Random, said: dt.datetime) -> tuple[str, dt.date]:
    """A past time the date parser resolves against the turn's time ``said``, and its day."""
    kind = rng.randrange(4)
    if kind == 0:
        return "yesterday", (said - dt.timedelta(days=1)).date()
    if kind == 1:
        return "two days ago", (said - dt.timedelta(days=2)).date()
    if kind == 2:
        back = rng.randint(2, 6)
        day = said - dt.timedelta(days=back)
        return f"last {_WEEKDAYS[day.weekday()]}", day.date()
    day = said - dt.timedelta(days=rng.randint(3, 12))
    return f"on {day.day} {_MONTHS[day.month - 1]}", day.date()


def _future(rng: random.Random) -> str:
    return rng.choice(("next week", "next month", "next Saturday", "in two weeks", "next Friday"))


def _fill(template: str, rng: random.Random, said: dt.datetime, **kw: str) -> str:
    when, _ = _past(rng, said)
    return template.format(d=when, D=when[0].upper() + when[1:], w=_future(rng), **kw)


def _day(day: dt.date, rng: random.Random) -> str:
    month = _MONTHS[day.month - 1]
    return rng.choice((f"on {day.day} {month} {day.year}", f"on {month} {day.day}, {day.year}"))


def _bank(rng: random.Random, index: int) -> Conversation:
    a, b = rng.sample(_FIRST, 2)
    speakers = (a, b)
    start = dt.datetime(_YEAR, 1, 9, 0, 0) + dt.timedelta(days=rng.randint(0, 60))
    times: list[dt.datetime] = []
    t = start
    for _ in range(SESSIONS):
        t = t + dt.timedelta(days=rng.randint(5, 16))
        times.append(t.replace(hour=rng.randint(9, 20), minute=rng.choice((0, 15, 30, 45))))
    # (session, speaker index, key, text): the planted turns of each session
    planted: list[tuple[int, int, str, str]] = []
    questions: list[Question] = []
    # windowed questions (speaker, verb, day, question, category, key) and every turn of a kind
    # telling a thing done on a day (speaker, verb, day, key): a day two of them answer is not asked
    asks: list[tuple[int, str, dt.date, str, int, str]] = []
    answers: list[tuple[int, str, dt.date, str]] = []
    when_pool = rng.sample(_WHEN_EVENTS, 2 * WHEN_EVENTS)
    for s, name in enumerate(speakers):
        mine = when_pool[s * WHEN_EVENTS : (s + 1) * WHEN_EVENTS]
        undated = set(rng.sample(range(WHEN_EVENTS), WHEN_EVENTS // 2))
        for e, (base, past, _thing, told, plan, remark, oblique) in enumerate(mine):
            key = f"B{index}:S{s}:W{e}"
            session = rng.randrange(2, SESSIONS - 2)
            if e in undated:
                text = told if rng.random() < 0.5 else oblique
                questions.append(Question(question=f"When did {name} {base}?", category=6, evidence=(key,)))
            else:
                when, _ = _past(rng, times[session])
                text = rng.choice(
                    (f"I {past} {when}.", f"{when[0].upper() + when[1:]} I {past}, it was great.")
                )
                questions.append(Question(question=f"When did {name} {base}?", category=5, evidence=(key,)))
            planted.append((session, s, key, text))
            # the same thing, dated but not when it happened: a plan (before or after)
            planted.append((rng.randrange(SESSIONS), s, f"{key}:plan", plan.format(w=_future(rng))))
            # the same thing, weeks later, undated
            later = min(SESSIONS - 1, session + rng.randint(1, 4))
            planted.append((later, s, f"{key}:remark", remark))
            if rng.random() < 0.5:  # the other speaker did it too, on another day, with a date
                when, _ = _past(rng, times[later])
                planted.append((later, 1 - s, f"{key}:other", f"Funny, I {past} {when} too!"))
        kinds = rng.sample(_KINDS, KINDS)
        for k, (verb, objects, told_t, dated_t) in enumerate(kinds):
            days = rng.sample(range(SESSIONS), OBJECTS + 2)  # distinct sessions, one day each
            things = rng.sample(objects, OBJECTS + 2)
            undated_k = set(rng.sample(range(OBJECTS), OBJECTS // 2 + (k + s) % 2))
            for o in range(OBJECTS + 2):
                key = f"B{index}:S{s}:K{k}:{o}"
                session = days[o]
                asked = o < OBJECTS  # the last two are negatives: other days, never asked
                if o in undated_k or (not asked and rng.random() < 0.5):
                    text = rng.choice(told_t).format(o=things[o], O=things[o][0].upper() + things[o][1:])
                    day = times[session].date()
                    cat = 7
                else:
                    when, day = _past(rng, times[session])
                    text = rng.choice(dated_t).format(o=things[o], d=when, D=when[0].upper() + when[1:])
                    cat = 8
                planted.append((session, s, key, text))
                if asked:
                    asks.append((s, verb, day, f"What did {name} {verb} {_day(day, rng)}?", cat, key))
                answers.append((s, verb, day, key))
            if rng.random() < 0.5:  # the other speaker, the same kind of thing, with a date
                session = rng.randrange(SESSIONS)
                text = rng.choice(dated_t).format(
                    o=rng.choice(objects), d=_past(rng, times[session])[0], D="Last week"
                )
                planted.append((session, 1 - s, f"B{index}:S{s}:K{k}:other", text))
    for s, verb, day, text, cat, key in asks:
        if not any(a == (s, verb, day) and k != key for *a, k in ((*x[:3], x[3]) for x in answers)):
            questions.append(Question(question=text, category=cat, evidence=(key,)))
    turns: list[Turn] = []
    for session, when in enumerate(times):
        here = [(s, key, text) for (ss, s, key, text) in planted if ss == session]
        # dated and undated chit-chat by both speakers around the planted turns
        for f in range(rng.randint(4, 8)):
            s = rng.randrange(2)
            here.append((s, f"B{index}:T{session}:d{f}", _fill(rng.choice(_DATED_FILLER), rng, when)))
        for f in range(rng.randint(3, 6)):
            here.append((rng.randrange(2), f"B{index}:T{session}:f{f}", rng.choice(_FILLER)))
        rng.shuffle(here)
        for i, (s, key, text) in enumerate(here):
            said = when + dt.timedelta(minutes=i)
            turns.append(
                Turn(
                    dia_id=key,
                    speaker=speakers[s],
                    text=f'{speakers[s]} said, "{text}"',
                    session=session + 1,
                    mentioned_at=said,
                )
            )
    return Conversation(
        index=index,
        sample_id=f"said-chats-{index}",
        turns=tuple(turns),
        questions=tuple(questions),
        query_time=times[-1] + dt.timedelta(days=1),
    )


def said_chats() -> list[Conversation]:
    """The ``said-chats`` banks (deterministic)."""
    rng = random.Random(SEED)
    return [_bank(rng, i) for i in range(BANKS)]
