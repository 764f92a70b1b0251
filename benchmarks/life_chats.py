"""Everyday chats between two friends about their lives: the ``life-chats`` sets (issue 11).

Evaluation data of our own making, in a style neither LoCoMo nor said-chats has, to ask whether
what was fitted on LoCoMo carries over to other chats (fictional, rule-generated, seeded; no
LoCoMo text). Each bank is one chat between two people, 4-8 dated sessions written like a
messaging app's log (``Mara: yeah, since March``: one memory per message, said at the session's
time). Each person has a persona (a job at an employer in a city, a sibling living somewhere,
a pet, a hobby, a hometown and a city they live in, a commute, two dated events; about half of
them move house or change job during the chat) told across sessions the way friends text:
short replies to the other's questions ("yeah, since March, every Thursday"), indirect mentions
("restrung four violins today, my fingers are raw" for a luthier), pronouns after the first
mention, plans before the deed, and the same topics coming back in other sessions without the
answer. Both people have every kind of fact, so the other person's job, pet and move are hard
negatives for every question, beside small talk.

Questions, five kinds (:data:`LIFE_CATEGORIES`), each with exactly known gold messages:

* 13, single-hop, little word overlap with the gold ("What does Mara do for a living?" <-
  "Mara: restrung four violins at Ostberg Workshop today, my fingers are raw");
* 14, multi-hop: two messages joined by an entity ("In which city does Mara's employer have its
  office?" <- the message naming her employer + a message placing the employer in a city);
* 15, when: an event told with a date or without one (then the session's date is the answer),
  and "since when" answered by a short reply to the other person's question;
* 16, latest state after a change ("Where does Mara live now?" <- the move, not the flat she had
  before nor the plan to look at flats);
* 17, why / how ("Why did Mara leave Ostberg Workshop?" <- the reason she gave when asked).

``life-chats-train`` (for training and error analysis) and ``life-chats-test`` (scoring only)
have different seeds and different people. The templates were written before any system ran on
them, and nothing here was changed after looking at results.

    .venv/bin/python benchmarks/dated_paragraphs.py --dataset life-chats-test --show 40
    .venv/bin/python benchmarks/dated_paragraphs.py --dataset life-chats-test \\
        --systems ours langchain-ensemble
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from _locomo import Conversation, Question, Turn

__all__ = ["LIFE_CATEGORIES", "LifeBank", "life_banks", "life_chats"]

T = TypeVar("T")

TRAIN_SEED = 20261203
TEST_SEED = 20261204
TRAIN_BANKS = 8
TEST_BANKS = 12

LIFE_CATEGORIES: dict[int, str] = {
    13: "life single-hop",
    14: "life multi-hop",
    15: "life when",
    16: "life latest",
    17: "life why/how",
}
# every kind but "when" names no time
LIFE_UNTIMED = frozenset({13, 14, 16, 17})

# Disjoint pools: the test chats' people are never the train chats' (nor said-chats').
_TRAIN_NAMES = (
    "Mara", "Dario", "Petra", "Yusuf", "Greta", "Oskar", "Lena", "Tomasz", "Priya", "Anton",
    "Hanna", "Rafael",
)  # fmt: skip
_TEST_NAMES = (
    "Ilse", "Marco", "Sunita", "Kofi", "Elin", "Viktor", "Rosa", "Jonas", "Mei", "Farid",
    "Agnes", "Lukas", "Nadia", "Oren", "Clara", "Henrik",
)  # fmt: skip
_SIBLINGS = {
    "sister": ("Ana", "Bea", "Cleo", "Dora", "Eva", "Fay", "Ida", "Juno", "Kira", "Lotte", "Mina", "Nell"),
    "brother": ("Teo", "Bram", "Cas", "Dirk", "Emil", "Finn", "Gus", "Hugo", "Ivo", "Jan", "Kai", "Leo"),
}
_SURNAMES = (
    "Ostberg", "Halvorsen", "Marchetti", "Brandt", "Kowal", "Lindqvist", "Moreau", "Novak", "Pereira",
    "Quist", "Rask", "Sandoval", "Tamm", "Varga", "Weller", "Ziegler", "Abbott", "Castell",
)  # fmt: skip
_CITIES = (
    "Ghent", "Porto", "Bergen", "Lyon", "Tartu", "Graz", "Leeds", "Malmo", "Utrecht", "Bilbao",
    "Krakow", "Aarhus", "Cork", "Turin", "Basel", "Brno", "Dundee", "Gdansk", "Nantes", "Split",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Job:
    suffix: str  # of the employer's name: "Ostberg Workshop"
    needle: str  # the word of the telling that says the job
    tellings: tuple[str, ...]  # {org}: the employer; none says the job's name
    chatter: tuple[str, ...]  # the same topic, another day, not telling the job


_JOBS = (
    _Job(
        "Workshop",
        "violins",
        (
            "restrung four violins at {org} today, my fingers are raw",
            "spent all day gluing the neck back onto a violin at {org}, the violins here are ancient",
        ),
        (
            "long day at work, the varnish smell is in my hair",
            "a customer cried when she got her instrument back today",
        ),
    ),
    _Job(
        "Bakery",
        "loaves",
        (
            "up at 4 again to get the loaves in the oven at {org}",
            "sold out of sourdough loaves by 9 at {org}, I'm shaping loaves in my sleep",
        ),
        ("the ovens at work broke down again, chaos", "my feet hurt so much after today's shift"),
    ),
    _Job(
        "Labs",
        "bug",
        (
            "chased one bug in the checkout code at {org} for the whole day",
            "finally fixed the bug that broke the app at {org}, the code review was brutal",
        ),
        ("the office wifi died and nobody could do anything", "meetings all day, no actual work done"),
    ),
    _Job(
        "Primary",
        "nine-year-olds",
        (
            "my class of nine-year-olds at {org} made me a card today, I nearly cried",
            "marking thirty spelling tests from my nine-year-olds at {org} tonight",
        ),
        ("parents' evening went on until 9", "the heating at work is broken and it's freezing"),
    ),
    _Job(
        "Vets",
        "stitched",
        (
            "stitched up a labrador's paw at {org} this morning, he was such a good boy",
            "stitched a cat after a fight, then two vaccinations, busy morning at {org}",
        ),
        ("so many appointments today", "I need a holiday, we're short-staffed again"),
    ),
    _Job(
        "& Partners",
        "spreadsheets",
        (
            "tax season at {org}, I've seen nothing but spreadsheets and receipts for a week",
            "balanced the last client's books at {org}, my eyes are square from spreadsheets",
        ),
        ("the printer at work hates me", "end of quarter, nobody goes home before 8"),
    ),
    _Job(
        "Kitchen",
        "grill",
        (
            "ran the grill at {org} for a 200-cover service last night, still smell of smoke",
            "burned my arm on the grill at {org} again, occupational hazard",
        ),
        ("Saturday service was insane", "the new menu starts next week"),
    ),
    _Job(
        "Electrics",
        "rewired",
        (
            "rewired a whole flat for {org} today, crawling under floorboards",
            "rewired an old fuse box for a {org} client, nearly got a shock",
        ),
        ("the work van got a flat tyre on the ring road", "long day, so many stairs"),
    ),
    _Job(
        "Translations",
        "translating",
        (
            "translating a 300-page manual into German for {org}, kill me",
            "still translating that contract for {org}, legal German is the worst",
        ),
        ("a new client at work, more deadlines", "my laptop died in the middle of the day"),
    ),
    _Job(
        "Pharmacy",
        "prescriptions",
        (
            "counted out about two hundred prescriptions behind the counter at {org}",
            "a doctor scribbled three prescriptions I couldn't read, classic day at {org}",
        ),
        ("we're open on Sundays now, ugh", "the queue was out the door today"),
    ),
)


@dataclass(frozen=True, slots=True)
class _Pet:
    species: str  # the needle
    names: tuple[str, ...]
    pronoun: str
    intro: tuple[str, ...]  # {p}: its name
    chatter: tuple[str, ...]  # pronoun only, no species, no name
    origin: tuple[str, ...]  # how it came to live with them


_PETS = (
    _Pet(
        "greyhound",
        ("Biscuit", "Comet", "Pilot"),
        "he",
        (
            "{p} chewed through my charger again, that greyhound is a menace",
            "{p} is asleep on my feet, retired greyhounds just sleep all day",
        ),
        ("he stole a whole baguette off the counter", "he refuses to walk in the rain"),
        ("{p} came from a racing track that closed, the greyhound charity found him for us",),
    ),
    _Pet(
        "cat",
        ("Pixel", "Miso", "Tofu"),
        "she",
        ("{p} knocked my coffee off the desk, typical cat", "{p} the cat brought me a dead mouse"),
        ("she's been sitting in the sink all day", "she only likes my partner, rude"),
        ("{p} just walked in through the kitchen window one winter and never left",),
    ),
    _Pet(
        "tortoise",
        ("Gerald", "Boris", "Shelly"),
        "he",
        (
            "{p} the tortoise is out of hibernation, very grumpy",
            "{p} ate a whole strawberry, tortoise heaven",
        ),
        ("he escaped under the fence again", "he's older than me probably"),
        ("{p} was my grandad's, I inherited him with the house keys",),
    ),
    _Pet(
        "parrot",
        ("Kiwi", "Rio", "Mango"),
        "she",
        (
            "{p} learned to copy the microwave beep, worst parrot ever",
            "{p} said hello to the postman, he nearly dropped my parcel",
        ),
        ("she screamed for an hour because I moved her cage", "she's moulting, feathers everywhere"),
        ("{p} belonged to a neighbour who went into a care home, so she came to us",),
    ),
    _Pet(
        "rabbit",
        ("Clover", "Bun", "Nibbles"),
        "she",
        (
            "{p} dug a hole in the sofa cushion, rabbits are chaos",
            "{p} did her happy rabbit jumps all evening",
        ),
        ("she chewed the laptop cable", "she hates the vacuum cleaner"),
        ("{p} was left in a box outside the vet's, we took her home that day",),
    ),
    _Pet(
        "dachshund",
        ("Otto", "Pretzel", "Bruno"),
        "he",
        (
            "{p} tried to fight a swan, tiny dachshund, huge ego",
            "{p} won't climb the stairs, dachshund backs are fragile",
        ),
        ("he barked at his own reflection for ten minutes", "he ate a sock and we had a scary night"),
        ("{p} was the runt of my aunt's litter and nobody else wanted him",),
    ),
)


@dataclass(frozen=True, slots=True)
class _Hobby:
    needle: str
    gerund: str  # the question's words: "Since when has Mara been climbing?"
    tellings: tuple[str, ...]  # none says the gerund
    ask: str  # the friend asks about it
    topic: str  # the word of the friend's question naming it
    chatter: tuple[str, ...]


_HOBBIES = (
    _Hobby(
        "wall",
        "bouldering",
        ("my forearms are destroyed, three hours on the wall at the climbing gym",),
        "still going to that climbing gym?",
        "climbing",
        ("I tore a callus, gross",),
    ),
    _Hobby(
        "clay",
        "doing pottery",
        ("my hands are covered in clay, made a wonky bowl on the wheel",),
        "are you still doing the pottery class?",
        "pottery",
        ("my bowl cracked in the kiln, devastated",),
    ),
    _Hobby(
        "choir",
        "singing",
        ("choir practice ran late, we're learning a Bach piece for the concert",),
        "how's the choir going?",
        "choir",
        ("my voice is gone, too much practice",),
    ),
    _Hobby(
        "chessboard",
        "playing chess",
        ("I was stuck at the chessboard in the club until midnight, lost on time",),
        "still playing at the chess club?",
        "chess",
        ("I keep blundering my queen",),
    ),
    _Hobby(
        "allotment",
        "gardening",
        ("spent Sunday at the allotment, the courgettes are taking over",),
        "how's the allotment?",
        "allotment",
        ("slugs ate everything, I give up",),
    ),
    _Hobby(
        "rowing",
        "rowing",
        ("out on the river at 6am with the rowing club, my hands are blisters",),
        "still doing the rowing club?",
        "rowing",
        ("cold morning on the water, could not feel my fingers",),
    ),
    _Hobby(
        "knitting",
        "knitting",
        ("finished knitting a scarf, only dropped about fifty stitches",),
        "still knitting everything in sight?",
        "knitting",
        ("ran out of wool halfway through a sleeve",),
    ),
    _Hobby(
        "salsa",
        "dancing",
        ("salsa night, I stepped on my partner's foot twice",),
        "you still go to salsa?",
        "salsa",
        ("my legs are sore, we learned a new turn",),
    ),
)


@dataclass(frozen=True, slots=True)
class _Event:
    base: str  # "When did Mara {base}?"
    needle: str
    dated: tuple[str, ...]  # {d}: a past time
    undated: tuple[str, ...]
    plan: str  # before: not the deed
    remark: str  # after: the deed, undated, weeks later
    other: str  # the other person's own, with a date: {d}


_EVENTS = (
    _Event(
        "run a half marathon",
        "half marathon",
        ("ran my first half marathon {d}, legs still dead", "{D} I ran the half marathon, 2 hours 5"),
        ("21 km done!!! first half marathon, can't feel my legs",),
        "thinking of signing up for a half marathon in the autumn",
        "still proud of that half marathon tbh",
        "I did a half marathon {d} too, so slow haha",
    ),
    _Event(
        "pass the driving test",
        "driving test",
        ("passed my driving test {d}!!", "{D} I passed the driving test, third time lucky"),
        ("I PASSED my driving test, third time lucky!!",),
        "driving test is booked, I'm terrified",
        "still can't parallel park even after the driving test",
        "my cousin failed her driving test {d}",
    ),
    _Event(
        "break a wrist",
        "wrist",
        ("broke my wrist {d}, fell off the bike", "{D} I came off the bike and broke my wrist"),
        ("typing one-handed, my wrist is in a cast, I came off the bike",),
        "my wrist has been clicking, should see someone",
        "the wrist is out of the cast, finally",
        "I sprained my wrist {d} at the gym",
    ),
    _Event(
        "buy a car",
        "car",
        ("bought a car {d}, a little blue hatchback", "{D} we bought a car, second-hand but cute"),
        ("we own a car now!! little blue hatchback, second-hand",),
        "we're looking at cars, no idea what we want",
        "the car needs new tyres already",
        "we sold our old car {d}",
    ),
    _Event(
        "get engaged",
        "engaged",
        ("we got engaged {d}!! on the beach", "{D} he proposed, we're engaged!!"),
        ("WE'RE ENGAGED!!! he proposed on the beach, I'm shaking",),
        "I think he's going to propose soon, he keeps asking about rings",
        "wedding planning is already stressing me out",
        "my sister got engaged {d}",
    ),
    _Event(
        "go to the concert in the old quarry",
        "quarry",
        ("went to the concert in the old quarry {d}, the echo was unreal",),
        ("just back from the concert in the old quarry, ears ringing, best night",),
        "got tickets for the quarry concert, can't wait",
        "I keep listening to the band from the quarry night",
        "I saw a show at the quarry {d}, so loud",
    ),
    _Event(
        "adopt a tree at the park",
        "tree",
        ("planted our tree in the park {d}, it has a little plaque",),
        ("our tree in the park has a little plaque with our names now!",),
        "the council lets you sponsor a tree in the park, want to do it",
        "our tree has leaves now",
        "we planted a hedge {d} in the garden",
    ),
    _Event(
        "get a tattoo",
        "tattoo",
        ("got my first tattoo {d}, a tiny swallow", "{D} I got a tattoo, a swallow on my wrist"),
        ("look at my arm, first tattoo, a tiny swallow! it stung",),
        "I want a tattoo but I'm a coward",
        "the tattoo has healed so nicely",
        "I got my ears pierced {d}",
    ),
)

_LEAVE_REASONS = (
    ("commute", "the commute was two hours a day, I was never home"),
    ("manager", "the new manager cut everyone's hours and I couldn't pay rent"),
    ("mould", "the building had mould and I kept getting sick"),
    ("bored", "honestly I was bored out of my mind, same thing every day for six years"),
    ("raise", "they refused me a raise for the third year running"),
)
_MOVE_REASONS = (
    ("hospital", "my partner got a post at the hospital there and I can work from anywhere"),
    ("mum", "my mum isn't well and I wanted to be closer to her"),
    ("rent", "rent where we were doubled, it was that or a shoebox"),
    ("sea", "I've always wanted to live by the sea, life's short"),
)
_COMMUTES = (
    ("canal", "I cycle along the canal to work, 25 minutes, it's the best part of the day"),
    ("ferry", "the ferry to work is my favourite bit, coffee on deck"),
    ("tram", "45 minutes on the number 4 tram each way, I read a lot"),
    ("walk", "it's a 20 minute walk to work through the park, no complaints"),
    ("lift", "my neighbour gives me a lift to work, I pay for petrol"),
)
_CHATTER = (
    "how's your week going?", "haha no way", "that's so you", "omg", "lol", "same tbh",
    "ugh I'm so tired", "the weather is grim again", "did you watch the final?", "I need a holiday",
    "sorry, was in a meeting", "brb", "ok back", "that's amazing", "oh no :(", "we should meet up soon",
    "my phone is dying", "what are you up to this weekend?", "nothing much, just chores", "yesss",
    "tell me everything", "wait really?", "I've been living on toast", "random but I miss school",
)  # fmt: skip
_HELLO = ("hey!!", "hiii", "heyy how are you", "long time!", "morning :)", "hey you")
_BYE = ("gotta run, talk soon x", "ok bed time, night!", "speak soon!", "byeee", "catch up properly soon x")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class LifeBank:
    """One chat, and for each question the word each of its gold messages must contain (in
    the order of its evidence): what the test checks, and ``--show`` prints."""

    conversation: Conversation
    needles: tuple[tuple[str, ...], ...]  # per question, per gold message


class _Pick:
    """Choices for one chat: the two friends never get the same sentence, city, job, pet or
    hobby (their facts differ, as two people's do; the other's are hard negatives, not
    duplicates), while small talk may repeat."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def __call__(self, options: Sequence[T]) -> T:
        fresh = [o for o in options if repr(o) not in self.used] or list(options)
        out = self.rng.choice(fresh)
        self.used.add(repr(out))
        return out

    def sample(self, options: Sequence[T], k: int) -> list[T]:
        return [self(options) for _ in range(k)]


def _past(rng: random.Random, said: dt.datetime) -> str:
    """A past time a reader resolves against the message's time."""
    kind = rng.randrange(3)
    if kind == 0:
        return "yesterday"
    if kind == 1:
        day = said - dt.timedelta(days=rng.randint(2, 6))
        return f"last {_WEEKDAYS[day.weekday()]}"
    day = said - dt.timedelta(days=rng.randint(3, 12))
    return f"on {day.day} {_MONTHS[day.month - 1]}"


def _cap(s: str) -> str:
    return s[0].upper() + s[1:]


# A beat: consecutive messages of one exchange, each (speaker 0/1 relative to the person, key
# or None, text). Placed whole into one session.
_Msg = tuple[int, str | None, str]


def _person_beats(
    rng: random.Random, pick: _Pick, name: str, tag: str, n_sessions: int, times: list[dt.datetime]
) -> tuple[list[tuple[int, list[_Msg]]], list[tuple[str, int, tuple[str, ...], tuple[str, ...]]]]:
    """(session, beat) pairs for one person (speaker 0 = the person, 1 = the friend), and
    questions (text, category, gold keys, needles)."""
    beats: list[tuple[int, list[_Msg]]] = []
    qs: list[tuple[str, int, tuple[str, ...], tuple[str, ...]]] = []
    last = n_sessions - 1

    def key(s: str) -> str:
        return f"{tag}:{s}"

    cities = pick.sample(_CITIES, 5)  # hometown, home, new home, employer's city, sibling's city
    # --- job and employer (and a change of job in about half the chats' people)
    job, job2 = pick.sample(_JOBS, 2)
    org = f"{pick(_SURNAMES)} {job.suffix}"
    org2 = f"{pick(_SURNAMES)} {job2.suffix}"
    change = rng.random() < 0.5
    s_job = rng.randrange(0, 2)
    s_change = rng.randrange(s_job + 1, last + 1) if change else None
    beats.append(
        (
            s_job,
            [
                (1, None, rng.choice(("how's work?", "work ok?", "still surviving work?"))),
                (0, key("job"), pick(job.tellings).format(org=org)),
            ],
        )
    )
    # the same topic another day, without the job
    beats.append((rng.randrange(n_sessions), [(0, key("job-chat"), pick(job.chatter).format(org=org))]))
    if not change:
        qs.append(
            (
                rng.choice(
                    (
                        f"What does {name} do for a living?",
                        f"What is {name}'s line of work?",
                        f"What kind of work does {name} do?",
                    )
                ),
                13,
                (key("job"),),
                (job.needle,),
            )
        )
        s_city = rng.randrange(n_sessions)
        emp, emp_key = org, key("job")
    else:
        assert s_change is not None
        reason_word, reason = pick(_LEAVE_REASONS)
        beats.append(
            (
                s_change,
                [
                    (
                        0,
                        key("change"),
                        rng.choice(
                            (
                                f"big news: I quit {org}, starting at {org2} on Monday",
                                f"so I left {org}... first week at {org2} done!",
                            )
                        ),
                    ),
                    (1, None, rng.choice(("wait what?? why?", "whoa, what happened?", "why though??"))),
                    (0, key("reason"), reason),
                ],
            )
        )
        if s_change < last:  # the new job told without its name, a later session
            beats.append(
                (
                    rng.randrange(s_change + 1, last + 1),
                    [(0, key("job2"), pick(job2.tellings).format(org="the new place"))],
                )
            )
        qs.append(
            (
                rng.choice(
                    (f"Where does {name} work now?", f"Which company is {name} working for these days?")
                ),
                16,
                (key("change"),),
                (org2,),
            )
        )
        qs.append(
            (
                rng.choice((f"Why did {name} leave {org}?", f"What made {name} quit {org}?")),
                17,
                (key("reason"),),
                (reason_word,),
            )
        )
        s_city = rng.randrange(s_change, n_sessions)
        emp, emp_key = org2, key("change")
    city = cities[3]
    v = rng.randrange(3)
    if v == 1:  # the friend's question names both, the short reply confirms: both are gold
        where: list[_Msg] = [
            (1, key("org-city-ask"), f"isn't {emp} the one in {city}?"),
            (0, key("org-city-yes"), "yep, right by the station"),
        ]
        city_keys, city_needles = (key("org-city-ask"), key("org-city-yes")), (city, "yep")
    else:
        text = (
            f"{emp} is moving the whole office to a new building in {city}, ugh",
            f"I have to go to the {emp} office in {city} every Tuesday now",
        )[v // 2]
        where = [(0, key("org-city"), text)]
        city_keys, city_needles = (key("org-city"),), (city,)
    beats.append((s_city, where))
    q_emp = rng.choice(
        (
            f"In which city does {name}'s employer have its office?",
            f"Which city is the company {name} works for based in?",
        )
    )
    qs.append((q_emp, 14, (emp_key, *city_keys), (emp, *city_needles)))
    # --- commute (how)
    c_word, commute = pick(_COMMUTES)
    beats.append(
        (
            rng.randrange(n_sessions),
            [(1, None, "how do you even get to work these days?"), (0, key("commute"), commute)],
        )
    )
    qs.append(
        (
            rng.choice((f"How does {name} get to work?", f"How does {name} travel to the office?")),
            17,
            (key("commute"),),
            (c_word,),
        )
    )
    # --- home, and a move in about half the people (independent of the job)
    home, new_home, hometown = cities[1], cities[2], cities[0]
    move = rng.random() < 0.5 and n_sessions >= 4
    s_home = rng.randrange(0, 2)
    beats.append(
        (
            s_home,
            [
                (
                    0,
                    key("home"),
                    pick(
                        (
                            f"rent in {home} went up again, unbelievable",
                            f"the trams in {home} never come on time",
                            f"our street in {home} is being dug up for the third time",
                        )
                    ),
                )
            ],
        )
    )
    if move:
        s_move = rng.randrange(s_home + 2, last + 1) if s_home + 2 <= last else last
        s_plan = rng.randrange(s_home + 1, s_move)  # strictly between: after the old home, before the move
        beats.append(
            (
                s_plan,
                [(0, key("move-plan"), f"we went to look at flats in {new_home} but nothing decided yet")],
            )
        )
        m_word, m_reason = pick(_MOVE_REASONS)
        beats.append(
            (
                s_move,
                [
                    (
                        0,
                        key("move"),
                        rng.choice(
                            (
                                f"we finally moved to {new_home}!! boxes everywhere",
                                f"first night in the new flat in {new_home}, sleeping on a mattress lol",
                            )
                        ),
                    ),
                    (1, None, f"why {new_home} of all places?"),
                    (0, key("move-why"), m_reason),
                ],
            )
        )
        qs.append(
            (
                rng.choice((f"Where does {name} live now?", f"Which city is {name} living in these days?")),
                16,
                (key("move"),),
                (new_home,),
            )
        )
        qs.append((f"Why did {name} move to {new_home}?", 17, (key("move-why"),), (m_word,)))
    else:
        qs.append(
            (
                rng.choice((f"Which city does {name} live in?", f"Where is {name}'s home?")),
                13,
                (key("home"),),
                (home,),
            )
        )
    beats.append(
        (
            rng.randrange(n_sessions),
            [
                (1, None, "where are you from originally?"),
                (0, key("hometown"), f"{hometown}! tiny place, everyone knew everyone"),
            ]
            if rng.random() < 0.5
            else [(0, key("hometown"), f"back in {hometown} when I was a kid we walked everywhere")],
        )
    )
    qs.append(
        (
            rng.choice((f"Where did {name} grow up?", f"What is {name}'s hometown?")),
            13,
            (key("hometown"),),
            (hometown,),
        )
    )
    # --- a sibling, and where they live (a bridge by the sibling's name)
    rel = pick(("sister", "brother"))
    sib = pick(_SIBLINGS[rel])
    pron = "she" if rel == "sister" else "he"
    s_sib = rng.randrange(0, n_sessions - 1)
    beats.append(
        (
            s_sib,
            [
                (
                    0,
                    key("sibling"),
                    pick(
                        (
                            f"my {rel} {sib} is staying with us this weekend",
                            f"{sib} (my {rel}) just called, {pron} says hi",
                        )
                    ),
                )
            ],
        )
    )
    s_sib2 = rng.randrange(s_sib + 1, n_sessions)
    beats.append(
        (
            s_sib2,
            [
                (1, None, f"how's {sib}?"),
                (
                    0,
                    key("sibling-city"),
                    f"{sib} is settling in well in {cities[4]}, {pron} loves the new flat",
                ),
            ],
        )
    )
    qs.append(
        (
            rng.choice((f"Which city does {name}'s {rel} live in?", f"Where is {name}'s {rel} living?")),
            14,
            (key("sibling"), key("sibling-city")),
            (sib, cities[4]),
        )
    )
    # --- a pet: what it is (single-hop), how it came (how)
    pet = pick(_PETS)
    pet_name = rng.choice(pet.names)
    s_pet = rng.randrange(n_sessions)
    beats.append((s_pet, [(0, key("pet"), pick(pet.intro).format(p=pet_name))]))
    beats.append((rng.randrange(n_sessions), [(0, key("pet-chat"), pick(pet.chatter))]))
    beats.append(
        (
            rng.randrange(n_sessions),
            [
                (1, None, f"how did you end up with {pet_name} anyway?"),
                (0, key("pet-origin"), pet.origin[0].format(p=pet_name)),
            ],
        )
    )
    qs.append(
        (
            rng.choice((f"What kind of animal does {name} have at home?", f"What pet does {name} keep?")),
            13,
            (key("pet"),),
            (pet.species,),
        )
    )
    qs.append((f"How did {name} come to have {pet_name}?", 17, (key("pet-origin"),), (pet_name,)))
    # --- a hobby: what (single-hop), since when (a short reply to the friend's question)
    hobby = pick(_HOBBIES)
    s_h = rng.randrange(n_sessions)
    beats.append((s_h, [(0, key("hobby"), pick(hobby.tellings))]))
    s_since = rng.randrange(n_sessions)
    since = _MONTHS[(times[s_since].month - 1 - rng.randint(3, 9)) % 12]
    beats.append(
        (
            s_since,
            [
                (1, key("hobby-ask"), hobby.ask),
                (
                    0,
                    key("hobby-since"),
                    rng.choice((f"yeah, since {since}, every Thursday", f"yep! since {since}")),
                ),
            ],
        )
    )
    beats.append((rng.randrange(n_sessions), [(0, key("hobby-chat"), pick(hobby.chatter))]))
    qs.append(
        (
            rng.choice((f"What does {name} do in their free time?", f"What is {name}'s hobby?")),
            13,
            (key("hobby"),),
            (hobby.needle,),
        )
    )
    qs.append(
        (
            f"Since when has {name} been {hobby.gerund}?",
            15,
            (key("hobby-ask"), key("hobby-since")),
            (hobby.topic, since),
        )
    )
    return beats, qs


def _events(
    rng: random.Random,
    pick: _Pick,
    name: str,
    tag: str,
    n_sessions: int,
    times: list[dt.datetime],
    events: list[_Event],
) -> tuple[list[tuple[int, list[_Msg]]], list[tuple[str, int, tuple[str, ...], tuple[str, ...]]]]:
    """Two dated events of one person: told with a date or without, a plan before, a remark
    after; the friend's own (a hard negative) is added by the caller."""
    beats: list[tuple[int, list[_Msg]]] = []
    qs: list[tuple[str, int, tuple[str, ...], tuple[str, ...]]] = []
    for e, ev in enumerate(events):
        k = f"{tag}:event{e}"
        s = rng.randrange(1, n_sessions)
        if rng.random() < 0.5:
            d = _past(rng, times[s])
            text = pick(ev.dated).format(d=d, D=_cap(d))
        else:
            text = pick(ev.undated)
        beats.append(
            (s, [(0, k, text), (1, None, rng.choice(("amazing!!", "omg congrats", "no way!", "wow")))])
        )
        beats.append((rng.randrange(0, s), [(0, f"{k}-plan", ev.plan)]))
        if s < n_sessions - 1:
            beats.append((rng.randrange(s + 1, n_sessions), [(0, f"{k}-remark", ev.remark)]))
        qs.append((f"When did {name} {ev.base}?", 15, (k,), (ev.needle,)))
    return beats, qs


def _bank(
    rng: random.Random, index: int, names: tuple[str, ...], prefix: str, named: bool = True
) -> LifeBank:
    a, b = rng.sample(names, 2)
    people = (a, b)
    n_sessions = rng.randint(4, 8)
    t = dt.datetime(rng.choice((2022, 2023, 2024)), rng.randint(1, 6), rng.randint(1, 28))
    times = []
    for _ in range(n_sessions):
        t = t + dt.timedelta(days=rng.randint(6, 35))
        times.append(t.replace(hour=rng.randint(8, 22), minute=rng.randrange(60)))
    placed: list[tuple[int, int, list[tuple[int, str | None, str]]]] = []  # (session, person, beat)
    questions: list[tuple[str, int, tuple[str, ...], tuple[str, ...]]] = []
    events = rng.sample(_EVENTS, 4)
    pick = _Pick(rng)
    for p, name in enumerate(people):
        tag = f"L{index}:P{p}"
        beats, qs = _person_beats(rng, pick, name, tag, n_sessions, times)
        ebeats, eqs = _events(rng, pick, name, tag, n_sessions, times, events[2 * p : 2 * p + 2])
        placed += [(s, p, beat) for s, beat in beats + ebeats]
        questions += qs + eqs
        # the friend did something of the same kind, with a date (a hard negative)
        for e, ev in enumerate(events[2 * p : 2 * p + 2]):
            if rng.random() < 0.5:
                s = rng.randrange(n_sessions)
                d = _past(rng, times[s])
                placed.append((s, 1 - p, [(0, f"{tag}:event{e}-other", ev.other.format(d=d))]))
    turns: list[Turn] = []
    for s, when in enumerate(times):
        here = [(p, beat) for (ss, p, beat) in placed if ss == s]
        for c in range(rng.randint(4, 9)):  # small talk between the beats
            here.append((rng.randrange(2), [(0, f"L{index}:S{s}:chat{c}", rng.choice(_CHATTER))]))
        rng.shuffle(here)
        first = rng.randrange(2)
        msgs: list[tuple[str, str, str]] = [
            (people[first], f"L{index}:S{s}:hello", rng.choice(_HELLO)),
            (people[1 - first], f"L{index}:S{s}:hello2", rng.choice(_HELLO)),
        ]
        for p, beat in here:
            for rel, k, text in beat:
                speaker = people[p if rel == 0 else 1 - p]
                msgs.append((speaker, k or f"L{index}:S{s}:m{len(msgs)}", text))
        msgs.append((people[rng.randrange(2)], f"L{index}:S{s}:bye", rng.choice(_BYE)))
        for i, (speaker, k, text) in enumerate(msgs):
            turns.append(
                Turn(
                    dia_id=k,
                    speaker=speaker,
                    text=f"{speaker}: {text}" if named else text,
                    session=s + 1,
                    mentioned_at=when + dt.timedelta(minutes=i),
                )
            )
    qs_out = tuple(Question(question=q, category=c, evidence=ev) for q, c, ev, _ in questions)
    conv = Conversation(
        index=index,
        sample_id=f"{prefix}-{index}",
        turns=tuple(turns),
        questions=qs_out,
        query_time=times[-1] + dt.timedelta(days=1),
    )
    return LifeBank(conversation=conv, needles=tuple(n for *_, n in questions))


def life_banks(split: str, *, named: bool = True) -> list[LifeBank]:
    """The chats of ``split`` ("train" or "test") with their needles (deterministic).
    ``named=False``: the same chats with each message's text alone (the speaker only in the
    turn's ``speaker``, as an app that stores the sender beside the text would)."""
    if split == "train":
        rng, n, names = random.Random(TRAIN_SEED), TRAIN_BANKS, _TRAIN_NAMES
    elif split == "test":
        rng, n, names = random.Random(TEST_SEED), TEST_BANKS, _TEST_NAMES
    else:
        raise ValueError(f"unknown split {split!r}")
    prefix = f"life-chats-{split}" + ("" if named else "-bare")
    return [_bank(rng, i, names, prefix, named) for i in range(n)]


def life_chats(split: str, *, named: bool = True) -> list[Conversation]:
    """The ``life-chats-<split>`` conversations (deterministic)."""
    return [b.conversation for b in life_banks(split, named=named)]


def main() -> None:
    """Print every question of the first chat of each split with its gold messages."""
    import sys

    for split in sys.argv[1:] or ["train", "test"]:
        bank = life_banks(split)[0]
        texts = {
            t.dia_id: f"[S{t.session} {t.mentioned_at:%Y-%m-%d}] {t.text}" for t in bank.conversation.turns
        }
        for q, needles in zip(bank.conversation.questions, bank.needles, strict=True):
            print(f"Q ({LIFE_CATEGORIES[q.category]}): {q.question}")
            for k, n in zip(q.evidence, needles, strict=True):
                print(f"    {texts[k]}    <- needle {n!r}")


if __name__ == "__main__":
    main()
