"""Engine-level recall tunables, one frozen object (``EngineConfig.recall``).

Change them with :func:`dataclasses.replace`:

>>> import dataclasses
>>> settings = dataclasses.replace(RecallSettings(), keyword="fulltext", rrf_k=30)
>>> settings.keyword, settings.rrf_k
('fulltext', 30)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from shared_core.config import (
    DEFAULT_ARM_WEIGHTS,
    DEFAULT_BM25_B,
    DEFAULT_BM25_CONTEXT_WEIGHT,
    DEFAULT_BM25_K1,
    DEFAULT_CALIBRATED_MODELS,
    DEFAULT_CROSS_ENCODER_ARM_WEIGHTS,
    DEFAULT_CROSS_ENCODER_RECENCY_ALPHA,
    DEFAULT_CROSS_ENCODER_TEMPORAL_ALPHA,
    DEFAULT_FILTER_WALK_HITS,
    DEFAULT_FILTER_WALK_MIN_ESTIMATE,
    DEFAULT_GRAPH_KEYWORD_SEED_LIMIT,
    DEFAULT_GRAPH_MIN_SCORE,
    DEFAULT_GRAPH_PER_ENTITY_LIMIT,
    DEFAULT_GRAPH_QUERY_ENTITY_WEIGHT,
    DEFAULT_GRAPH_SEED_LIMIT,
    DEFAULT_GRAPH_SEED_MIN_SIMILARITY,
    DEFAULT_GRAPH_SEMANTIC_LINK_FACTOR,
    DEFAULT_GRAPH_TIMEOUT_MS,
    DEFAULT_KEYWORD_BANK_MAX_DF,
    DEFAULT_KEYWORD_BANK_MIN_ROWS,
    DEFAULT_KEYWORD_INFLECTIONS,
    DEFAULT_KEYWORD_MAX_POSTINGS,
    DEFAULT_KEYWORD_MAX_TERMS,
    DEFAULT_KEYWORD_RANKING,
    DEFAULT_LEARNED_TEMPORAL_ALPHA,
    DEFAULT_LEARNED_WHEN_ALPHA,
    DEFAULT_MAX_QUERY_TOKENS,
    DEFAULT_RELATIVE_SEMANTIC_CUT,
    DEFAULT_RERANK_BATCH_SIZE,
    DEFAULT_RERANK_MAX_CANDIDATES,
    DEFAULT_RRF_K,
    DEFAULT_SEMANTIC_MIN_SIMILARITY,
    DEFAULT_TEMPORAL_BUCKETS,
    DEFAULT_TEMPORAL_DECAY,
    DEFAULT_TEMPORAL_ENTRY_POINTS,
    DEFAULT_TEMPORAL_ENTRY_POOL,
    DEFAULT_TEMPORAL_MIN_SIMILARITY,
    DEFAULT_TS_CONFIG,
)
from shared_core.errors import ConfigurationError
from shared_core.recall.boosts import BoostConfig
from shared_core.recall.query import KEYWORD_RANKINGS, KeywordRanking
from shared_core.recall.rerank import RerankerKind
from shared_core.types import ARM_NAMES, ArmName

__all__ = ["RecallSettings"]


def _default_arm_weights() -> dict[ArmName, float]:
    weights: dict[ArmName, float] = {arm: DEFAULT_ARM_WEIGHTS[arm] for arm in ARM_NAMES}
    return weights


def _cross_encoder_arm_weights() -> dict[ArmName, float]:
    weights: dict[ArmName, float] = {arm: DEFAULT_CROSS_ENCODER_ARM_WEIGHTS[arm] for arm in ARM_NAMES}
    return weights


def _cross_encoder_boosts() -> BoostConfig:
    return BoostConfig(
        recency_alpha=DEFAULT_CROSS_ENCODER_RECENCY_ALPHA, temporal_alpha=DEFAULT_CROSS_ENCODER_TEMPORAL_ALPHA
    )


def _learned_boosts() -> BoostConfig:
    # The learned score is the calibrated relevance: recency is left out on purpose (a question
    # about a long history is not about its end), and proof counts are not seen in training.
    # Only a question that names a time boosts it (the temporal boost is neutral otherwise):
    # its training data rarely names one, so the date features alone carry little weight.
    # A "when" question favours memories stating their own date: the learned when_and_dated
    # feature alone is too weak (LoCoMo 0-4, see DEFAULT_LEARNED_WHEN_ALPHA).
    return BoostConfig(
        recency_alpha=0.0,
        temporal_alpha=DEFAULT_LEARNED_TEMPORAL_ALPHA,
        when_alpha=DEFAULT_LEARNED_WHEN_ALPHA,
        proof_alpha=0.0,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallSettings:
    """Engine-level recall tunables (thresholds calibrated for all-MiniLM-L6-v2)."""

    semantic_min_similarity: float = DEFAULT_SEMANTIC_MIN_SIMILARITY
    graph_seed_limit: int = DEFAULT_GRAPH_SEED_LIMIT
    graph_seed_min_similarity: float = DEFAULT_GRAPH_SEED_MIN_SIMILARITY
    graph_per_entity_limit: int = DEFAULT_GRAPH_PER_ENTITY_LIMIT
    graph_timeout_ms: int = DEFAULT_GRAPH_TIMEOUT_MS
    graph_min_score: float = DEFAULT_GRAPH_MIN_SCORE
    graph_semantic_link_factor: float = DEFAULT_GRAPH_SEMANTIC_LINK_FACTOR
    graph_keyword_seed_limit: int = DEFAULT_GRAPH_KEYWORD_SEED_LIMIT
    graph_query_entity_weight: float = DEFAULT_GRAPH_QUERY_ENTITY_WEIGHT
    #: The graph's second round: the learned reranker reads which candidates neighbour its
    #: first stage's top hits in their documents (False: it marks none, for ablations).
    graph_neighbours: bool = True
    keyword: KeywordRanking = DEFAULT_KEYWORD_RANKING
    keyword_max_terms: int = DEFAULT_KEYWORD_MAX_TERMS
    keyword_max_postings: int = DEFAULT_KEYWORD_MAX_POSTINGS
    keyword_bank_max_df: float = DEFAULT_KEYWORD_BANK_MAX_DF
    keyword_bank_min_rows: int = DEFAULT_KEYWORD_BANK_MIN_ROWS
    #: Whether a query word's irregular English forms ("go": went, gone; "child": children)
    #: join it as one keyword term (shared_core.recall.inflections); False: stems alone.
    keyword_inflections: bool = DEFAULT_KEYWORD_INFLECTIONS
    bm25_k1: float = DEFAULT_BM25_K1
    bm25_b: float = DEFAULT_BM25_B
    bm25_context_weight: float = DEFAULT_BM25_CONTEXT_WEIGHT
    temporal_min_similarity: float = DEFAULT_TEMPORAL_MIN_SIMILARITY
    temporal_entry_pool: int = DEFAULT_TEMPORAL_ENTRY_POOL
    temporal_entry_points: int = DEFAULT_TEMPORAL_ENTRY_POINTS
    temporal_buckets: int = DEFAULT_TEMPORAL_BUCKETS
    temporal_decay: float = DEFAULT_TEMPORAL_DECAY
    #: For a "when" question without a date, the temporal arm ranks the matching memories that
    #: state their own date (False: the arm runs only for questions that name a time).
    temporal_when_questions: bool = True
    #: Whether the learned reranker sees the question's time (its window, whether it asks
    #: when): False blinds its date features, for ablations of the temporal machinery.
    date_signals: bool = True
    rerank_max_candidates: int = DEFAULT_RERANK_MAX_CANDIDATES
    rerank_batch_size: int = DEFAULT_RERANK_BATCH_SIZE
    rrf_k: int = DEFAULT_RRF_K
    arm_weights: Mapping[ArmName, float] = field(default_factory=_default_arm_weights)
    max_query_tokens: int = DEFAULT_MAX_QUERY_TOKENS
    ts_config: str = DEFAULT_TS_CONFIG
    #: Boosts after passthrough scores (and the arm weights above are passthrough's and the
    #: learned reranker's: it was trained on candidates fused with them).
    boosts: BoostConfig = field(default_factory=BoostConfig)
    calibrated_models: tuple[str, ...] = DEFAULT_CALIBRATED_MODELS
    """Embedding models the absolute cosine cuts above were tuned for."""
    relative_semantic_cut: float | None = None
    """When set, the semantic arm keeps hits at least this fraction of the best similarity
    (instead of ``semantic_min_similarity``); see :meth:`for_model`."""
    filter_walk_min_estimate: int | None = DEFAULT_FILTER_WALK_MIN_ESTIMATE
    """Opt-in: a filter the planner expects to match at least this many memories sends the
    semantic arm to the bank's HNSW index (iterative scan, ``filter_walk_hits`` hits) instead of
    its exact ranking of every match (None, the default: exact up to ``EXACT_MAX_ROWS``
    matches). Faster under broad filters, at some recall: see ``DEFAULT_FILTER_WALK_MIN_ESTIMATE``
    in ``config.py`` (8,000 measured at 100k)."""
    filter_walk_hits: int = DEFAULT_FILTER_WALK_HITS
    """The walk's hits under such a filter: ``max(filter_walk_hits, n // 3)``, at most n."""

    def for_model(self, model_name: str) -> RecallSettings:
        """These settings for an embedding model: as they are for a calibrated model; for any
        other, the semantic cut relative to the query's best match
        (``DEFAULT_RELATIVE_SEMANTIC_CUT``) and no graph-seed or temporal cosine cut, so a
        model whose cosines run low still gets results.

        >>> RecallSettings().for_model("text-embedding-3-small").relative_semantic_cut
        0.5
        """
        if model_name in self.calibrated_models or self.relative_semantic_cut is not None:
            return self
        return dataclasses.replace(
            self,
            relative_semantic_cut=DEFAULT_RELATIVE_SEMANTIC_CUT,
            semantic_min_similarity=-1.0,
            graph_seed_min_similarity=-1.0,
            temporal_min_similarity=-1.0,
        )

    #: Boosts after the learned reranker: none, so the score stays its calibrated relevance.
    learned_boosts: BoostConfig = field(default_factory=_learned_boosts)
    #: Boosts and arm weights when a cross-encoder scores the candidates.
    cross_encoder_boosts: BoostConfig = field(default_factory=_cross_encoder_boosts)
    cross_encoder_arm_weights: Mapping[ArmName, float] = field(default_factory=_cross_encoder_arm_weights)

    def profile(self, kind: RerankerKind) -> tuple[Mapping[ArmName, float], BoostConfig]:
        """The arm weights and boosts recall uses with this kind of reranker.

        >>> weights, boosts = RecallSettings().profile("cross-encoder")
        >>> weights["keyword"], boosts.recency_alpha
        (1.0, 0.2)
        >>> RecallSettings().profile("learned")[1].recency_alpha
        0.0
        """
        if kind == "cross-encoder":
            return self.cross_encoder_arm_weights, self.cross_encoder_boosts
        if kind == "learned":
            return self.arm_weights, self.learned_boosts
        return self.arm_weights, self.boosts

    def __post_init__(self) -> None:
        if self.filter_walk_hits < 1 or (self.filter_walk_min_estimate or 0) < 0:
            raise ConfigurationError(
                "filter_walk_hits must be >= 1 and filter_walk_min_estimate >= 0 (or None), got"
                f" {self.filter_walk_hits!r} and {self.filter_walk_min_estimate!r}"
            )
        if self.keyword not in KEYWORD_RANKINGS:
            raise ConfigurationError(f"keyword must be one of {list(KEYWORD_RANKINGS)}, got {self.keyword!r}")
        if self.bm25_k1 < 0 or not 0 <= self.bm25_b <= 1:
            raise ConfigurationError(
                f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={self.bm25_k1!r}, b={self.bm25_b!r}"
            )
        if not 0 <= self.bm25_context_weight <= 1:
            raise ConfigurationError(
                f"bm25_context_weight must be in [0, 1], got {self.bm25_context_weight!r}"
            )
