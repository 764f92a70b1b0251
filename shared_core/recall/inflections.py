"""English irregular inflections, for lexical matching at recall time.

Postgres' ``english`` configuration stems with Snowball, which strips regular endings
("goes", "going" -> "go"; "workshops" -> "workshop") but cannot know that "went" is a form of
"go", "bought" of "buy" or "children" of "child". Questions are usually asked in the present
("When did Mara go to the workshop?") about memories told in the past ("Mara went to a pottery
workshop"), so a keyword arm that matches by stem alone misses the memory that answers. This
module holds the irregular verbs and plurals as data and turns a query word into the group of
its forms: the keyword arm ORs a group's forms and ranks the group as one query term.

Why a table of our own rather than a package: ``lemminflect`` (MIT, bundled data) was the one
candidate; its last release is from 2022 and it carries the full English inflection data (about
a hundred thousand words, regular forms included) where Snowball already handles the regular
ones. A few hundred lines of data, reviewed by hand, are smaller and can leave out forms that
are mostly another word (below).

Left out on purpose, because the other word is common and the group would match it: "bit"
(bite; "a bit"), "bore"/"born" (bear; "boring" stems to "bore"), "rose" (rise; the flower),
"wound" (wind), "ground" (grind), "lay"/"lain" (lie; "lay" is its own verb), "dove" (dive),
"found" as a verb of its own, the plurals "lives" and "leaves" (life, leaf: Snowball stems
them to "live", "leav", the verbs). Verbs whose forms are all alike (put, cut, hit, read, set, ...) and the
stop-word verbs (be, have, do: Postgres drops them) need no entry.

>>> inflection_group("went")
('went', 'go', 'goes', 'going', 'gone')
>>> inflection_group("children")
('children', 'child')
>>> inflection_group("pottery")
('pottery',)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

__all__ = ["IRREGULAR_PLURALS", "IRREGULAR_VERBS", "inflection_group", "inflection_groups"]

# One verb a line: base, past, past participle; "a/b" gives alternatives, "-" a form left out
# (above). The third person and the -ing form are added by rule (_regular) so that a question
# written with them finds the group; Snowball stems them to the base, the past forms it cannot.
_VERBS: Final = """
arise arose arisen
awake awoke awoken
become became become
begin began begun
bend bent bent
bind bound bound
bite - bitten
bleed bled bled
blow blew blown
break broke broken
breed bred bred
bring brought brought
build built built
burn burnt/burned burnt/burned
buy bought bought
catch caught caught
choose chose chosen
cling clung clung
come came come
creep crept crept
deal dealt dealt
dig dug dug
draw drew drawn
dream dreamt/dreamed dreamt/dreamed
drink drank drunk
drive drove driven
eat ate eaten
fall fell fallen
feed fed fed
feel felt felt
fight fought fought
find found found
flee fled fled
fling flung flung
fly flew flown
forbid forbade forbidden
forget forgot forgotten
forgive forgave forgiven
freeze froze frozen
get got got/gotten
give gave given
go went gone
grow grew grown
hang hung hung
hear heard heard
hide hid hidden
hold held held
keep kept kept
kneel knelt knelt
know knew known
lead led led
leap leapt/leaped leapt/leaped
learn learnt/learned learnt/learned
leave left left
lend lent lent
light lit lit
lose lost lost
make made made
mean meant meant
meet met met
mislead misled misled
mistake mistook mistaken
mow mowed mown
overcome overcame overcome
oversleep overslept overslept
overtake overtook overtaken
pay paid paid
prove proved proven
rebuild rebuilt rebuilt
rewrite rewrote rewritten
ride rode ridden
ring rang rung
rise - risen
run ran run
say said said
see saw seen
seek sought sought
sell sold sold
send sent sent
sew sewed sewn
shake shook shaken
shine shone shone
shoot shot shot
show showed shown
shrink shrank shrunk
sing sang sung
sink sank sunk
sit sat sat
slay slew slain
sleep slept slept
slide slid slid
sling slung slung
speak spoke spoken
speed sped sped
spend spent spent
spill spilt/spilled spilt/spilled
spin spun spun
spit spat spat
spoil spoilt/spoiled spoilt/spoiled
spring sprang sprung
stand stood stood
steal stole stolen
stick stuck stuck
sting stung stung
stink stank stunk
stride strode stridden
strike struck struck
string strung strung
strive strove striven
swear swore sworn
sweep swept swept
swell swelled swollen
swim swam swum
swing swung swung
take took taken
teach taught taught
tear tore torn
tell told told
think thought thought
throw threw thrown
tread trod trodden
undergo underwent undergone
understand understood understood
undertake undertook undertaken
wake woke woken
wear wore worn
weave wove woven
weep wept wept
win won won
withdraw withdrew withdrawn
wring wrung wrung
write wrote written
"""

# One noun a line: singular, plural.
_PLURALS: Final = """
analysis analyses
cactus cacti
calf calves
child children
crisis crises
criterion criteria
foot feet
fungus fungi
goose geese
grandchild grandchildren
half halves
knife knives
loaf loaves
louse lice
man men
mouse mice
ox oxen
person people
phenomenon phenomena
shelf shelves
thesis theses
thief thieves
tooth teeth
wife wives
wolf wolves
woman women
"""


def _parse(table: str) -> tuple[tuple[str, ...], ...]:
    rows: list[tuple[str, ...]] = []
    for line in table.strip().splitlines():
        forms: dict[str, None] = {}
        for cell in line.split():
            for form in cell.split("/"):
                if form != "-":
                    forms.setdefault(form)
        rows.append(tuple(forms))
    return tuple(rows)


_VOWELS: Final = frozenset("aeiou")


def _regular(base: str) -> tuple[str, str]:
    """The third person and -ing form of ``base`` by the spelling rules (right for every verb
    of the table; tests/unit/test_inflections.py checks a sample): a question asks "When is
    Mara going ...?" as often as "When did Mara go ...?", and the word is looked up as written."""
    if base.endswith(("s", "sh", "ch", "x", "z", "o")):
        third = base + "es"
    elif base.endswith("y") and base[-2] not in _VOWELS:
        third = base[:-1] + "ies"
    else:
        third = base + "s"
    if base.endswith("e") and not base.endswith("ee"):
        ing = base[:-1] + "ing"
    elif (
        len(base) >= 3
        and base[-1] not in _VOWELS | {"w", "x", "y"}
        and base[-2] in _VOWELS
        and base[-3] not in _VOWELS
    ):
        ing = base + base[-1] + "ing"  # run, swim, begin, forget: the last consonant doubles
    else:
        ing = base + "ing"
    return third, ing


#: Irregular verbs: (base, third person, -ing form, past and participle forms), a few hundred.
IRREGULAR_VERBS: Final = tuple(
    tuple(dict.fromkeys((row[0], *_regular(row[0]), *row[1:]))) for row in _parse(_VERBS)
)
#: Irregular plurals: (singular, plural).
IRREGULAR_PLURALS: Final = _parse(_PLURALS)


def _index(groups: Iterable[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    index: dict[str, tuple[str, ...]] = {}
    for group in groups:
        for form in group:
            # one group per form: a form of two words would join unrelated questions
            if index.setdefault(form, group) is not group:
                raise ValueError(f"{form!r} is in two inflection groups")
    return index


_GROUP_OF: Final = _index((*IRREGULAR_VERBS, *IRREGULAR_PLURALS))


def inflection_group(word: str) -> tuple[str, ...]:
    """``word`` (lower-cased) first, then its other irregular forms; ``(word,)`` if none."""
    group = _GROUP_OF.get(word)
    if group is None:
        return (word,)
    return (word, *(form for form in group if form != word))


def inflection_groups(words: Iterable[str]) -> list[tuple[str, ...]]:
    """The groups of ``words`` in order, one per word; a word whose group an earlier word
    already brought ("saw" after "see") adds none.

    >>> inflection_groups(["see", "saw", "bowl"])
    [('see', 'sees', 'seeing', 'saw', 'seen'), ('bowl',)]
    """
    seen: set[str] = set()
    out: list[tuple[str, ...]] = []
    for word in words:
        group = inflection_group(word)
        if word in seen:
            continue
        seen.update(group)
        out.append(group)
    return out
