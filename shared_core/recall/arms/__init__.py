"""The four retrieval arms, one module each: its SQL and its sub-plan.

An arm is two steps around one shared round trip:

* ``start(query)`` returns the arm's first statement (or ``None`` when the arm has nothing to
  do, e.g. keyword search without words). The pipeline runs the first statements of all arms
  :class:`~shared_core.storage.plan.Concurrently`, each on its own connection;
* ``finish(query, rows, watch)`` is a sub-plan from those rows (or the exception that
  statement raised) to the arm's ranked :class:`~shared_core.recall.fusion.ArmHit` list. It
  may run more statements (the graph arm's fallback on timeout, the temporal arm's spread).

An arm that builds on other arms' results names them in ``needs``: it starts in a second round,
once they have finished, and reads their ranked hits from ``query.prior`` (the graph arm seeds
its spread from the semantic and keyword hits instead of searching for them again).

An arm whose first statement needs no vector (keyword search) says so (``vector_free``): the
pipeline :class:`~shared_core.storage.plan.Launch`-es it before the query is embedded and
collects it with the first round.

An arm may also ``prepare`` the query before any round: a sub-plan (its statements each on a
pooled connection of its own, as every arm statement before the graph's is collected) that
returns the query refined (the semantic arm asks the planner how many memories a filter
matches, to pick its statement before it starts).

Every arm reads the same typed :class:`ArmQuery`; arms whose rows are ``(id, score)`` read them
as :class:`ScoredRow`. A new arm is a module here with an
:data:`Arm` value, listed in :data:`ARMS` (and a name in :data:`shared_core.types.ArmName`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from psycopg import sql

from shared_core.recall.filters import MATCH_ALL, CompiledFilter
from shared_core.recall.fusion import ArmHit
from shared_core.recall.hydrate import MemoryRow
from shared_core.recall.query import TagsMatch
from shared_core.recall.settings import RecallSettings
from shared_core.recall.timing import Stopwatch
from shared_core.slots import builder
from shared_core.storage.dimensions import Dimension
from shared_core.storage.plan import Plan, Query
from shared_core.types import FACT_TYPES, ArmName, FactType, TimeWindow

__all__ = [
    "TYPES_TEST",
    "Arm",
    "ArmQuery",
    "ArmResult",
    "ScoredRow",
    "arm_hit",
    "best_first",
    "ranked",
    "rows_or_raise",
    "tag_clause",
    "type_clause",
]

TYPES_TEST = sql.SQL("u.fact_type = ANY(%(types)s::text[])")
"""The fact-type test of an arm statement over ``u`` (memory_units), on ``%(types)s``."""


def tag_clause(
    tags: Sequence[str] | None, mode: TagsMatch, *, column: sql.Composable | None = None
) -> sql.Composable:
    """The tag filter (semantics of the reference's tags_match), as SQL using ``%(tags)s``
    over ``column`` (default ``u.tags``: every statement aliases memory_units as u).

    ``any``/``all`` let untagged memories through; the ``_strict`` modes do not; ``exact``
    wants the same set, and with no tags means "untagged only".

    >>> tag_clause(None, "any").as_string()
    'TRUE'
    >>> tag_clause(["a"], "any_strict", column=sql.Identifier("tags")).as_string()
    '"tags" && %(tags)s::text[]'
    """
    col = column if column is not None else sql.Identifier("u", "tags")
    if not tags:
        if mode == "exact":
            return sql.SQL("{} = '{{}}'").format(col)
        return sql.SQL("TRUE")
    templates = {
        "any": "({c} = '{{}}' OR {c} && %(tags)s::text[])",
        "all": "({c} = '{{}}' OR {c} @> %(tags)s::text[])",
        "any_strict": "{c} && %(tags)s::text[]",
        "all_strict": "{c} @> %(tags)s::text[]",
        "exact": "({c} @> %(tags)s::text[] AND {c} <@ %(tags)s::text[])",
    }
    return sql.SQL(templates[mode]).format(c=col)


@dataclass(frozen=True, slots=True, kw_only=True)
class ArmQuery:
    """What every arm searches with: one analysed, validated query.

    ``n`` is the per-arm candidate budget; ``words`` / ``bigrams`` are the keyword terms;
    ``window`` the query's time window (parsed or given), if any; ``asks_when`` whether the
    query asks when something happened (the temporal arm answers it without a window);
    ``prior`` the ranked hits of the arms already finished (empty in the first round): what an
    arm that ``needs`` them starts from; ``matching_estimate`` the planner's estimate of the
    memories of the asked types that the filter lets through (None: not estimated, e.g. no
    filter), set by the semantic arm's ``prepare``; ``filter_index`` the name of an HNSW index
    an application declared for this filter that the planner would walk (semantic.py's
    ``declare_filter_index``), set there too.
    """

    bank: str
    vector: npt.NDArray[np.float32]
    words: tuple[str, ...]
    bigrams: tuple[str, ...]
    types: tuple[FactType, ...]
    tags: tuple[str, ...] | None
    tags_match: TagsMatch
    n: int
    window: TimeWindow | None
    settings: RecallSettings
    filter: CompiledFilter = MATCH_ALL
    asks_when: bool = False
    prior: Mapping[ArmName, Sequence[ArmHit]] = field(default_factory=dict)
    matching_estimate: float | None = None
    filter_index: str | None = None

    @property
    def where_sql(self) -> sql.Composable:
        """The memory filter every arm statement applies to ``u``: tags and metadata (its
        parameters are in :meth:`params`). Filtering inside each arm, before fusion and the
        token cut, is what lets a filtered recall fill its ``k`` with matching memories."""
        return sql.SQL("({} AND {})").format(tag_clause(self.tags, self.tags_match), self.filter.clause)

    @staticmethod
    def unfiltered_where() -> sql.Composable:
        """:attr:`where_sql` of every query that is not :attr:`filtered` (no tags, no metadata
        filter, not ``exact``): the arms compose their unfiltered statements once from it.

        >>> print(ArmQuery.unfiltered_where().as_string())
        (TRUE AND TRUE)
        """
        return sql.SQL("({} AND {})").format(tag_clause(None, "any"), MATCH_ALL.clause)

    @property
    def filtered(self) -> bool:
        """Whether :attr:`where_sql` restricts the memories: a metadata filter, tags, or the
        ``exact`` match (which, with no tags, keeps the untagged memories only)."""
        return self.filter is not MATCH_ALL or bool(self.tags) or self.tags_match == "exact"

    @property
    def filtered_all_types(self) -> bool:
        """Whether the memories are filtered (:attr:`filtered`) and every fact type is asked
        (the default): the statements' type test is then vacuous, and :func:`type_clause`
        leaves it out."""
        return self.filtered and set(self.types) >= set(FACT_TYPES)

    @property
    def dimension(self) -> Dimension:
        """The query vector's dimension: the SQL naming its HNSW indexes (migration 0006)."""
        return Dimension(int(self.vector.shape[0]))

    def params(self, **extra: Any) -> dict[str, Any]:
        """The parameters every arm statement shares, plus ``extra``."""
        return {
            "bank": self.bank,
            "qvec": self.vector,
            "types": list(self.types),
            "tags": list(self.tags or ()),
            "n": self.n,
            **self.filter.params,
            **extra,
        }


def type_clause(query: ArmQuery) -> sql.Composable:
    """The fact-type test of ``query``'s arm statements: ``TRUE`` under a filter asking every
    fact type (:attr:`ArmQuery.filtered_all_types`), else :data:`TYPES_TEST`.

    The column's CHECK constraint (migration 0001) admits the three types only, so with all of
    them asked the test keeps every row; but the planner estimates ``fact_type = ANY(all
    three)`` below 1 (0.786 on the 100k bench bank: ``scalararraysel`` falls back to the
    independent-events formula when the sampled frequencies sum to a hair over 1), and under a
    filter that estimate combined with the filter's made it intersect a bitmap of the bank's
    whole type index (measured at 100k: the semantic arm's exact read 0.74x of server CPU
    without it, the temporal entry's ``fmatching`` 0.83-0.87x; the other statements' plans did
    not change, and drop it so that it cannot mislead them). Unfiltered statements keep the test:
    their plans (HNSW scans, the postings) do not hinge on it, and they stay the statements
    they always were (docs/benchmarks/filt3_statements.md, docs/benchmarks/filt_bitmapand.md).

    >>> import dataclasses
    >>> import numpy as np
    >>> from shared_core.recall.filters import compile_filter
    >>> q = ArmQuery(bank="b", vector=np.zeros(3, np.float32), words=(), bigrams=(),
    ...              types=FACT_TYPES, tags=None, tags_match="any", n=5, window=None,
    ...              settings=RecallSettings(), filter=compile_filter({"team": "er"}))
    >>> type_clause(q).as_string()
    'TRUE'
    >>> type_clause(dataclasses.replace(q, types=("world",))).as_string()
    'u.fact_type = ANY(%(types)s::text[])'
    >>> type_clause(dataclasses.replace(q, filter=MATCH_ALL)).as_string()
    'u.fact_type = ANY(%(types)s::text[])'
    """
    return sql.SQL("TRUE") if query.filtered_all_types else TYPES_TEST


@dataclass(frozen=True, slots=True, kw_only=True)
class ArmResult:
    """An arm's ranked hits (best first) and what the trace should say about it."""

    hits: list[ArmHit] = field(default_factory=list)
    notes: tuple[str, ...] = ()
    #: The hits whose ranking fields the arm's statement read (the semantic arm's), by id:
    #: hydration reads only the other candidates.
    rows: Mapping[str, MemoryRow] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoredRow:
    """One row of an arm statement that ranks memories by one score (semantic, keyword, graph)."""

    id: str
    score: float


R = TypeVar("R")


@dataclass(frozen=True, slots=True, kw_only=True)
class Arm:
    """One retrieval arm: its first statement and the sub-plan that ranks its rows.

    ``finish`` receives the rows of ``start``'s statement, typed by that query's ``row_type``.
    ``needs`` names the arms whose hits ``start`` reads from :attr:`ArmQuery.prior`: the arm
    starts after them (they run even when not asked for, and need nothing themselves).
    ``prepare``, if any, runs before the first round (whenever the arm runs) and returns the
    query every arm then reads. ``vector_free``: ``start`` reads neither the query's vector nor
    its time window nor what a ``prepare`` adds, so its statement starts before the query is
    embedded (with a query whose vector is empty and window None) and runs meanwhile.
    """

    start: Callable[[ArmQuery], Query | None]
    finish: Callable[[ArmQuery, Sequence[Any] | BaseException, Stopwatch], Plan[ArmResult]]
    needs: frozenset[ArmName] = frozenset()
    prepare: Callable[[ArmQuery, Stopwatch], Plan[ArmQuery]] | None = None
    vector_free: bool = False


def rows_or_raise(result: Sequence[R] | BaseException) -> Sequence[R]:
    """The rows of a concurrent statement, or the error it raised, re-raised."""
    if isinstance(result, BaseException):
        raise result
    return result


def ranked(rows: Sequence[ScoredRow]) -> list[ArmHit]:
    """Scored rows as hits, best score first (ties by id)."""
    # float(): Postgres may hand a score over as numeric (a Decimal).
    return best_first(arm_hit(row.id, float(row.score), None) for row in rows)


def best_first(hits: Iterable[ArmHit]) -> list[ArmHit]:
    """``hits`` best score first, ties by id (the order of :func:`ranked`).

    >>> [h.id for h in best_first([ArmHit(id="b", score=1.0), ArmHit(id="a", score=1.0),
    ...                            ArmHit(id="c", score=2.0)])]
    ['c', 'a', 'b']
    """
    return sorted(hits, key=lambda h: (-h.score, h.id))


# Built without calling the frozen class (shared_core.slots): ~1,200 hits per recall at 100k.
arm_hit: Callable[[str, float, float | None], ArmHit] = builder(ArmHit, ("id", "score", "temporal_proximity"))
"""An :class:`ArmHit` from its ``id``, ``score`` and ``temporal_proximity``, positional."""
