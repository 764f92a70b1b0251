"""The graph arm bridges two memories through a shared entity, in a tiny bank and a large one,
and retain links lower-case mentions of entities a bank already knows (real server, real
models; the large bank's filler memories carry precomputed vectors and explicit entities so it
is cheap to build, while the bridge memories and the question go through the real embedder,
NER and the full recall pipeline)."""

from __future__ import annotations

import random
import uuid

import numpy as np
import psycopg
import pytest

from shared_core import EngineConfig, MemoryEngine, MemoryItem

# Two unrelated bridge stories, so nothing passes for one wording by accident.
BRIDGES = [
    pytest.param(
        "Ilse Marquardt works at Quillon Dynamics.",
        "Quillon Dynamics is headquartered in Ghent.",
        "In which city does Ilse Marquardt work?",
        id="employer-city",
    ),
    pytest.param(
        "Tobias Renner studies at the Kelmscott Conservatory.",
        "The Kelmscott Conservatory stands on the shore of Lake Constance.",
        "Near which lake does Tobias Renner study?",
        id="school-lake",
    ),
]
UNRELATED = [
    "The ferry timetable changes every October.",
    "Sourdough needs a warm kitchen to rise well.",
]


def _bank(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _graph_ids(result: object) -> list[str]:
    trace = result.trace  # type: ignore[attr-defined]
    assert trace is not None
    return [i for i, _ in trace.arms["graph"]]


@pytest.mark.parametrize(("first", "second", "question"), BRIDGES)
def test_graph_arm_bridges_two_memories_in_a_four_memory_bank(
    engine: MemoryEngine, first: str, second: str, question: str
) -> None:
    bank = _bank("bridge-small")
    ids = engine.retain([first, *UNRELATED, second], bank=bank)
    result = engine.recall(question, bank=bank, k=3, trace=True)
    assert ids[3] in [m.id for m in result.memories]
    assert ids[3] in _graph_ids(result), "the graph arm did not reach the second memory"


# --- a 10,000-memory bank ------------------------------------------------------------------------

_SYLLABLES = (
    "ka",
    "lo",
    "mi",
    "ren",
    "sa",
    "tu",
    "vel",
    "dor",
    "an",
    "is",
    "ber",
    "gon",
    "hal",
    "mar",
    "nev",
    "or",
    "pel",
    "qui",
    "ros",
    "tam",
)
_TOPICS = (
    "budget",
    "hiring",
    "roadmap",
    "audit",
    "migration",
    "launch",
    "offsite",
    "survey",
    "pricing",
    "onboarding",
)
_TEMPLATES = [
    "{p} met {o} about the {t} plan.",
    "{p} sent {o} the {t} notes.",
    "{p} thinks {o} will change the {t} process.",
    "{p} and the team at {o} discussed {t} over lunch.",
    "{p} asked {o} for help with the {t} review.",
]
FILLER = 10_000


def _name(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts)).capitalize()


@pytest.fixture(scope="module")
def large_bank(engine: MemoryEngine) -> tuple[str, dict[str, str]]:
    """10,000 filler memories over 400 people and 150 organisations, one hub person in a third
    of them (a chat speaker), and both bridge stories, whose people and organisations also
    appear in a few fillers each (so neither entity is unique to its bridge)."""
    rng = random.Random(11)
    people = sorted({f"{_name(rng, 2)} {_name(rng, 3)}" for _ in range(400)})
    orgs = sorted({f"{_name(rng, 3)} {rng.choice(['Labs', 'Partners', 'Group'])}" for _ in range(150)})
    hub = "Dana Okafor"
    extra = {
        "Ilse Marquardt": 3,
        "Quillon Dynamics": 4,
        "Tobias Renner": 3,
        "Kelmscott Conservatory": 4,
    }
    vectors = np.random.default_rng(11).normal(size=(FILLER, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    items: list[MemoryItem] = []
    names = [n for n, count in extra.items() for _ in range(count)]
    for i in range(FILLER):
        person = names[i] if i < len(names) else (hub if rng.random() < 0.33 else rng.choice(people))
        org = rng.choice(orgs)
        text = rng.choice(_TEMPLATES).format(p=person, o=org, t=rng.choice(_TOPICS))
        items.append(MemoryItem(text=text, entities=[person, org], embedding=vectors[i].tolist()))
    bank = _bank("bridge-large")
    # The fillers bring their own vectors and entities and name no dates: nothing to extract.
    filler = MemoryEngine(engine.dsn, config=EngineConfig(extract_dates=False, extract_entities=False))
    try:
        filler.retain(items, bank=bank, progress=False)
    finally:
        filler.close()
    texts = [str(p.values[0]) for p in BRIDGES] + [str(p.values[1]) for p in BRIDGES]
    ids = engine.retain(texts, bank=bank)  # real embeddings and real entity extraction
    return bank, dict(zip(texts, ids, strict=True))


@pytest.mark.slow  # one 10,000-memory retain per module (precomputed vectors, no extraction)
@pytest.mark.parametrize(("first", "second", "question"), BRIDGES)
def test_graph_arm_bridges_two_memories_in_a_ten_thousand_memory_bank(
    engine: MemoryEngine, large_bank: tuple[str, dict[str, str]], first: str, second: str, question: str
) -> None:
    bank, ids = large_bank
    result = engine.recall(question, bank=bank, k=10, trace=True)
    recalled = [m.id for m in result.memories]
    assert ids[first] in recalled
    assert ids[second] in recalled
    assert ids[second] in _graph_ids(result), "the graph arm did not reach the second memory"


# --- lower-case mention linking -----------------------------------------------------------------


def _entity_names(engine: MemoryEngine, bank: str, unit_id: str) -> set[str]:
    with psycopg.connect(engine.dsn) as conn:
        rows = conn.execute(
            "SELECT e.canonical_name FROM unit_entities ue JOIN entities e"
            " ON e.bank_id = ue.bank_id AND e.id = ue.entity_id"
            " WHERE ue.bank_id = %s AND ue.unit_id = %s",
            (bank, unit_id),
        ).fetchall()
    return {r[0] for r in rows}


def test_a_lower_case_mention_links_to_the_entity_the_bank_already_knows(engine: MemoryEngine) -> None:
    bank = _bank("mentions")
    (first,) = engine.retain(["Priyanka Desai joined Vantorix in March."], bank=bank)
    assert "Vantorix" in _entity_names(engine, bank, first)
    later, untouched, explicit = engine.retain(
        [
            "vantorix announced a new office by the harbour.",
            "She said the vantorixes of this world are rare.",  # not the whole word
            MemoryItem(text="vantorix posted results.", entities=[]),  # explicit: kept as given
        ],
        bank=bank,
    )
    assert "Vantorix" in _entity_names(engine, bank, later)
    assert "Vantorix" not in _entity_names(engine, bank, untouched)
    assert _entity_names(engine, bank, explicit) == set()
    memory = next(m for m in engine.recall("vantorix office", bank=bank).memories if m.id == later)
    assert "Vantorix" in memory.entities


def test_mentions_link_to_entities_created_in_the_same_retain(engine: MemoryEngine) -> None:
    bank = _bank("mentions-batch")
    ids = engine.retain(
        ["Priyanka Desai joined Vantorix in March.", "the vantorix cafeteria is great"], bank=bank
    )
    assert "Vantorix" in _entity_names(engine, bank, ids[1])
