"""The learned reranker: calibrated relevance from signals recall already has, no model to load.

A logistic regression over a few numbers per fused candidate: where each arm ranked it and its
raw score there, its RRF score and position, its cosine with the query (relative to the best
cosine of the query), term and name coverage of the query, whether a date the question names
is stated in or near it (by its own date, or by when it was said where said times tell the
candidates apart: :func:`said_selects`), (for "when" questions) whether it carries a date at
all and where the temporal arm ranked it among the memories stating their own date, whether
its speaker
(``Name said, ...``, or its context) is a person the question names (:func:`speaker_names`),
and whether it sits beside one of the model's own first-stage top hits in its document (the
graph's second round: :meth:`LearnedScorer.seeds`, then ``arms/graph.py``'s
``neighbour_plan``; :func:`mark_neighbours`). The
weights ship with the package (``learned_reranker.json``, beside this module, with the feature
list, what they were trained on and the command that trained them). Scoring builds the
features of all candidates at once (one vectorised pass over their texts,
:mod:`shared_core.recall.text_scan`): deterministic, under 2 ms for 300 candidates whose texts
the process has never seen (``docs/benchmarks/learned_speed.md``).

The output is a probability that the candidate is evidence for the question, calibrated on the
training questions' candidate lists, so a ``score_threshold`` of 0.5 means "more likely
evidence than not" (the precision and recall it gave on held-out conversations are in
docs/benchmarks.md).

Features are deliberately the general kind: no recency (questions about a long history are not
about its end), and what varies with the kind of text (chat turns or encyclopedia paragraphs)
only relative to the other candidates of the same query: the cosine as a z-score and as the
distance to the query's best, coverage of the question over the best coverage among the
candidates, the length as the log word count minus the query's median (a cosine of 0.4 means
little alone, 0.05 below the best cosine of the query means a lot; a paragraph covers more of a
question than a chat turn does just by being longer). The absolute forms are still computed
(:data:`FEATURE_NAMES`) for comparison; which ones the shipped model reads is in its JSON.

>>> import datetime as dt
>>> scorer = LearnedScorer.default()
>>> query = QuerySignals.from_query("Where does Mara work?", window=None)
>>> first = CandidateSignals(position=0, rrf=0.06, ranks={"semantic": 1, "keyword": 1},
...                          arm_scores={"semantic": 0.71, "keyword": 7.2}, cosine=0.71,
...                          text="Mara works in a violin workshop in Cremona.")
>>> second = CandidateSignals(position=1, rrf=0.02, ranks={"semantic": 2},
...                           arm_scores={"semantic": 0.31}, cosine=0.31,
...                           text="The weather was cold.")
>>> a, b = scorer.score(query, [first, second])
>>> 0.0 <= b < a <= 1.0
True
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from shared_core.recall.arms.temporal import asks_when as _asks_when
from shared_core.recall.arms.temporal import temporal_proximity
from shared_core.recall.boosts import _grain_end, _window_years, effective_date
from shared_core.recall.inflections import inflection_group
from shared_core.recall.text_scan import TextScan
from shared_core.recall.text_years import YEAR, narrowest_stint, offsets, told_years, with_implied
from shared_core.types import ARM_NAMES, ArmName, DateGrain, TimeWindow, as_utc

__all__ = [
    "FEATURE_NAMES",
    "NEIGHBOUR_FEATURE",
    "NEIGHBOUR_SPEAKER_FEATURE",
    "SECOND_ROUND",
    "SPEAKER_FEATURE",
    "CandidateSignals",
    "LearnedScorer",
    "QuerySignals",
    "featurize",
    "featurize_told",
    "mark_neighbours",
    "said_selects",
    "speaker_names",
    "unfuse_when_list",
]

_WEIGHTS_FILE: Final = "learned_reranker.json"
_RRF_K: Final = 60.0
_WORD = re.compile(r"[^\W_]+")
_STOP_WORDS = """a an the and or but if of to in on at by for with from about as into over after
before is are was were be been being am do does did done have has had having i me my we our you
your he him his she her it its they them their this that these those what which who whom whose
when where why how there here not no so than then too very can could will would shall should may
might must just also any all some each other such only own same both few more most s t don say
said tell told ever get got"""
_STOP: Final = frozenset(_STOP_WORDS.split())
# Cosines and proportions are bounded; the text length enters as a clipped log.
_MIN_WORDS: Final = 3
_MAX_WORDS: Final = 300


def _content_terms(text: str) -> frozenset[str]:
    """Lower-cased words of 3+ characters that are not stop words, cut to a 6-letter stem."""
    return frozenset(w[:6] for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP)


# An irregular form of a question's word (shared_core.recall.inflections) covers the word's
# term: "When did Mara buy a car?" is covered by "Mara bought a car" as by "Mara buys a car".
# A form of four letters or more matches as a term does (its 6-letter stem as a word prefix);
# a shorter one only as a whole word: "met", "ran", "sat", "won" begin "metal", "random",
# "Saturday", "wonderful".
_FORM_PREFIX_MIN: Final = 4


def _term_forms(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """Per content term of ``text`` with irregular forms: the term and its forms' keys (a
    6-letter prefix, or a short form whole), sorted."""
    out: dict[str, set[str]] = {}
    for w in _WORD.findall(text.lower()):
        if len(w) > 2 and w not in _STOP:
            for form in inflection_group(w)[1:]:
                key = form[:6] if len(form) >= _FORM_PREFIX_MIN else form
                if not (len(key) >= _FORM_PREFIX_MIN and key.startswith(w[:6])):  # "meets": "meet" covers it
                    out.setdefault(w[:6], set()).add(key)
    return tuple((term, frozenset(keys)) for term, keys in sorted(out.items()))


def _names(text: str) -> frozenset[str]:
    """Capitalised words after the first word (likely names), lower-cased."""
    words = _WORD.findall(text)
    return frozenset(w.lower() for w in words[1:] if w[:1].isupper() and w.lower() not in _STOP)


def _alternation(words: frozenset[str], *, whole: bool) -> re.Pattern[str] | None:
    """One regex finding any of ``words`` at a word start (as a whole word if ``whole``): a
    single C-level scan per candidate text instead of tokenising it in Python."""
    if not words:
        return None
    body = "|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w)))
    return re.compile(rf"\b(?:{body})" + (r"\b" if whole else ""))


_RUN = re.compile(r"\w+")

# A chat turn's speaker as transcripts write it: one to three words at the start of the text,
# each starting with a capital letter, then a colon or a verb of speech ("Caroline said, ...",
# "Dr. Rossi: ..."). The capitals are checked in Python (str.isupper: any script with case).
_SPEAKER: Final = re.compile(
    r"\s*((?:[^\W\d_][\w'’.-]*\s+){0,2}[^\W\d_][\w'’.-]*)"
    r"(?:\s*:|\s+(?:said|says|asked|asks|wrote|writes|replied|replies)\b)"
)
_MAX_SPEAKER_WORDS: Final = 3


def speaker_names(text: str, context: str | None = None) -> frozenset[str]:
    """The lower-cased words of who says ``text``: its leading ``Name said`` / ``Name:``, else
    the memory's ``context`` read the same way, or the context itself when it is a bare name of
    one to three capitalised words; empty when neither says.

    >>> sorted(speaker_names('Caroline said, "I went to a support group."'))
    ['caroline']
    >>> sorted(speaker_names("Dr. Rossi: the violin is ready."))
    ['dr', 'rossi']
    >>> sorted(speaker_names("Yes, a cat named Pixel.", context="Mara Bell"))
    ['bell', 'mara']
    >>> speaker_names("the plan said nothing"), speaker_names("Mara repairs violins.")
    (frozenset(), frozenset())
    """
    for source in (text, context):
        if not source:
            continue
        m = _SPEAKER.match(source)
        words = m.group(1).split() if m is not None else []
        if m is None and source is context:
            words = source.split()
            if len(words) > _MAX_SPEAKER_WORDS:
                continue
        if words and all(w[:1].isupper() for w in words):
            return frozenset(_RUN.findall(" ".join(words).lower()))
    return frozenset()


def _plain(words: frozenset[str]) -> bool:
    """Whether every word is made of word characters only (what :class:`TextScan` compares)."""
    return all(_RUN.fullmatch(w) for w in words)


@dataclass(frozen=True, slots=True, kw_only=True)
class QuerySignals:
    """What the scorer needs to know about the question (built once per recall)."""

    terms: frozenset[str]
    names: frozenset[str]
    asks_when: bool
    window: TimeWindow | None
    #: Per term with irregular forms: the keys of its forms (:func:`_term_forms`; a key of
    #: fewer than _FORM_PREFIX_MIN letters matches whole, a longer one as a prefix). A term is
    #: covered when it or any of its forms is found.
    term_forms: tuple[tuple[str, frozenset[str]], ...] = ()
    _terms_re: re.Pattern[str] | None = field(default=None, repr=False, compare=False)
    _names_re: re.Pattern[str] | None = field(default=None, repr=False, compare=False)
    # form key -> the terms it covers, and one regex per kind of key (prefix, whole word)
    _form_terms: dict[str, frozenset[str]] = field(default_factory=dict, repr=False, compare=False)
    _form_prefix_re: re.Pattern[str] | None = field(default=None, repr=False, compare=False)
    _form_whole_re: re.Pattern[str] | None = field(default=None, repr=False, compare=False)
    # Whether :func:`featurize` computes coverage for all candidates at once (TextScan, the
    # same numbers as the regexes): terms and names of word characters only, as from_query
    # makes them.
    _scannable: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_terms_re", _alternation(self.terms, whole=False))
        object.__setattr__(self, "_names_re", _alternation(self.names, whole=True))
        covers: dict[str, set[str]] = {}
        for term, keys in self.term_forms:
            if term in self.terms:
                for key in keys:
                    covers.setdefault(key, set()).add(term)
        object.__setattr__(self, "_form_terms", {k: frozenset(v) for k, v in covers.items()})
        prefix = frozenset(k for k in covers if len(k) >= _FORM_PREFIX_MIN)
        object.__setattr__(self, "_form_prefix_re", _alternation(prefix, whole=False))
        object.__setattr__(self, "_form_whole_re", _alternation(frozenset(covers) - prefix, whole=True))
        scannable = _plain(self.terms) and _plain(self.names) and _plain(frozenset(covers))
        object.__setattr__(self, "_scannable", scannable)

    @classmethod
    def from_query(
        cls, text: str, window: TimeWindow | None, *, asks_when: bool | None = None, inflections: bool = True
    ) -> QuerySignals:
        """``inflections``: a term's irregular forms cover it (:func:`_term_forms`).

        >>> q = QuerySignals.from_query("When did Caroline go to the support group?", None)
        >>> q.asks_when, sorted(q.names), sorted(q.terms)
        (True, ['caroline'], ['caroli', 'group', 'suppor'])
        >>> forms = QuerySignals.from_query("Who did Mara meet when she bought a car?", None).term_forms
        >>> [(term, sorted(keys)) for term, keys in forms]
        [('bought', ['buy', 'buying', 'buys']), ('meet', ['met'])]
        """
        return cls(
            terms=_content_terms(text),
            names=_names(text),
            term_forms=_term_forms(text) if inflections else (),
            asks_when=_asks_when(text) if asks_when is None else asks_when,
            window=window,
        )

    def coverage(self, lowered: str) -> tuple[float, float]:
        """Shares of the query's content terms (as word prefixes) and of its names (as whole
        words) found in a lower-cased text."""
        terms = 0.0
        if self._terms_re is not None:
            found = set(self._terms_re.findall(lowered))
            for pattern in (self._form_prefix_re, self._form_whole_re):
                if pattern is not None:
                    for key in set(pattern.findall(lowered)):
                        found |= self._form_terms[key]
            terms = len(found) / len(self.terms)
        names = (
            len(set(self._names_re.findall(lowered))) / len(self.names) if self._names_re is not None else 0.0
        )
        return terms, names


@dataclass(frozen=True, slots=True, kw_only=True)
class CandidateSignals:
    """What recall knows about one fused candidate before reranking.

    ``position`` is its 0-based place in the fused (RRF) order; ``ranks`` / ``arm_scores`` are
    its 1-based rank and raw score in each arm that found it; ``cosine`` its cosine similarity
    with the query (None when unknown: the semantic arm's score is used if it has one).
    """

    position: int
    rrf: float
    ranks: Mapping[ArmName, int] = field(default_factory=dict)
    arm_scores: Mapping[ArmName, float] = field(default_factory=dict)
    cosine: float | None = None
    text: str = ""
    occurred_start: _dt.datetime | None = None
    occurred_end: _dt.datetime | None = None
    mentioned_at: _dt.datetime | None = None
    date_grain: DateGrain | None = None
    # the memory's context: who says it when its text does not (speaker_names)
    context: str | None = None

    def proximity(self, window: TimeWindow, *, said: bool = False) -> float | None:
        """Closeness of the memory's date (as the temporal boost dates it) to ``window``;
        None if it has no date at all. ``said``: the closer of that date and the time the
        memory was said (:data:`SAID_WINDOW_MAX_SHARE` says when the reranker reads it)."""
        date = effective_date(self.occurred_start, self.occurred_end, self.mentioned_at, self.date_grain)
        if date is None:
            return None
        happened = temporal_proximity(date, window)
        if not said or self.mentioned_at is None:
            return happened
        return max(happened, temporal_proximity(as_utc(self.mentioned_at), window))


# A memory has two times: when what it tells happened (its effective date) and when it was said
# (``mentioned_at``). A question naming a time can mean either: "What did Melanie show Caroline
# on October 13?" is answered by a turn said that day about a painting she made the week before
# (dated to the week before, its window proximity was 0). The reranker's window_proximity is
# the closer of the two, but only where the said times tell the candidates apart: when at most
# this share of them was said inside the window. A bank of documents stored on one day, or "in
# 2023" over a chat held in 2023, has every memory said in the window, which says nothing (as
# the temporal arm ignores said times for "when" questions). Not tuned: a majority, fixed
# before measuring. Offline on LoCoMo 0-4 (the tuning split, shipped weights) temporal R@10
# 92.9 both, overall R@10 81.7 -> 81.8; the dated-paragraph sets unchanged (every paragraph
# said on one day). See docs/benchmarks.md.
SAID_WINDOW_MAX_SHARE: Final = 0.5


def said_selects(candidates: Sequence[CandidateSignals], window: TimeWindow) -> bool:
    """Whether the times the candidates were said tell them apart for ``window``: at most
    :data:`SAID_WINDOW_MAX_SHARE` of them was said inside it (and some were).

    >>> import datetime as dt
    >>> w = TimeWindow(start=dt.datetime(2023, 10, 13), end=dt.datetime(2023, 10, 13, 23, 59))
    >>> said = [dt.datetime(2023, 10, 13, 10), dt.datetime(2023, 9, 1), dt.datetime(2023, 8, 1)]
    >>> said_selects([CandidateSignals(position=i, rrf=0.0, mentioned_at=d) for i, d in enumerate(said)], w)
    True
    >>> said_selects([CandidateSignals(position=0, rrf=0.0, mentioned_at=said[0])], w)
    False
    """
    if not candidates:
        return False
    start, end = as_utc(window.start), as_utc(window.end)
    inside = sum(
        1 for c in candidates if c.mentioned_at is not None and start <= as_utc(c.mentioned_at) <= end
    )
    return 0 < inside <= SAID_WINDOW_MAX_SHARE * len(candidates)


# How many of the temporal arm's "when" list (a "when" question without a window) keep their
# share of the fused score for the learned reranker (unfuse_when_list). Tuned on LoCoMo 0-4
# (offline, the "when" questions without a window, shipped weights, with the relative "when"
# boost of boosts.apply_boosts; head 3 / 5 / 10 / 20 / whole list): R@1 72.6 for every head,
# R@5 89.4 / 88.7 / 88.0 / 88.0 / 88.0, R@10 92.1 / 91.8 / 91.4 / 91.8 / 91.8; on our own sets
# (validation only) when-notes R@1 100 for each, said-chats' undated "when" gold in the top 10
# 75.0 / 75.0 / 75.0 / 66.7 / 63.9 (benchmarks/said_questions.py, docs/benchmarks.md).
WHEN_FUSED_HEAD: Final = 3


def unfuse_when_list(
    candidates: Sequence[CandidateSignals],
    *,
    weight: float,
    k: float,
    offset: int = 0,
    head: int = WHEN_FUSED_HEAD,
) -> list[CandidateSignals]:
    """``candidates`` (in their order) as the learned reranker reads them for a "when" question
    without a window: the temporal arm's "when" list kept whole as candidates and as its own
    column (``dated_evidence_rr``), but beyond its first ``head`` memories its share of the RRF
    score (``weight / (k + rank)``) taken out, and every ``position`` renumbered, from
    ``offset``, by the score left (ties: the "when" rank, then the fused order).

    Why: the list holds every memory stating a date, ranked by similarity, often hundreds in a
    chat (plans, errands, "yesterday I ..."). Fused whole, it lifted each one's RRF score and
    fused position, the columns the model weighs most, above the turns that tell the asked
    event without a date (dated by when they were said): benchmarks/said_questions.py, 58.3 %
    of such gold in the top 10 against 80.6 % without the temporal machinery. Its head is
    where the list's evidence is (LoCoMo 0-4: 84 % of the dated gold within the first 5).

    >>> ranks = [{"temporal": 4, "semantic": 3}, {"semantic": 1}, {"temporal": 1, "semantic": 2}]
    >>> fused = [CandidateSignals(position=i, rrf=sum(1 / (60 + v) for v in r.values()), ranks=r)
    ...          for i, r in enumerate(ranks)]
    >>> [c.position for c in unfuse_when_list(fused, weight=1.0, k=60.0)]
    [2, 1, 0]
    """
    if not any(c.ranks.get("temporal", 0) > head for c in candidates):
        return list(candidates)
    left = [
        c.rrf - (weight / (k + c.ranks["temporal"]) if c.ranks.get("temporal", 0) > head else 0.0)
        for c in candidates
    ]
    order = sorted(
        range(len(candidates)),
        key=lambda i: (-left[i], candidates[i].ranks.get("temporal", math.inf), candidates[i].position),
    )
    place = {i: offset + p for p, i in enumerate(order)}
    return [
        dataclasses.replace(c, rrf=max(left[i], 0.0), position=place[i]) for i, c in enumerate(candidates)
    ]


def _year_features(years: Sequence[int], bounds: tuple[int, int]) -> tuple[float, float, float]:
    """(a year of the window (``bounds``: its first and last year) is one of ``years``, the
    window lies within the span of ``years`` and they hold at least two, how tight the
    tightest stint of the text holding the window is).

    ``years`` are those the text tells: written, or implied by an offset from a written one
    ("In 2003 ... Three years later ...": 2006; :func:`shared_core.recall.text_years.told_years`),
    since encyclopedia prose tells a stint by its start and an offset.

    A stint is two years the text writes with no other year it writes between them; the third
    value is 1 / (the number of years of the narrowest stint holding the window), 0 if none
    does. An introduction writing a career's first and last year spans every question about
    that career (the second value is 1 for all of them), a paragraph about 2003 to 2008 spans
    few: 1/31 against 1/6.

    >>> _year_features([1990, 2003, 2008, 2020], (2005, 2005))
    (0.0, 1.0, 0.16666666666666666)
    >>> _year_features([1990, 2020], (2005, 2005))
    (0.0, 1.0, 0.03225806451612903)
    """
    if not years:
        return 0.0, 0.0, 0.0
    lo, hi = bounds
    stated = any(lo <= y <= hi for y in years)
    distinct = sorted(set(years))
    spans = len(distinct) >= 2 and distinct[0] <= lo and hi <= distinct[-1]
    width = narrowest_stint(distinct, bounds)  # a stint holding the window implies spans
    return float(stated), float(spans), 0.0 if width is None else 1.0 / width


def _arm_features(c: CandidateSignals) -> list[float]:
    out: list[float] = []
    for arm in ARM_NAMES:
        rank = c.ranks.get(arm)
        out += [0.0, 0.0] if rank is None else [1.0, _RRF_K / (_RRF_K + rank)]
    return out


def _row(
    query: QuerySignals,
    c: CandidateSignals,
    cosine: float,
    best_cosine: float,
    keyword: float,
    best_keyword: float,
    best_rrf: float,
    said: bool = False,
) -> list[float]:
    term_cover, name_cover = query.coverage(c.text.lower())
    window = query.window
    proximity: float | None = None
    stated = spans = tight = 0.0
    if window is not None:
        proximity = c.proximity(window, said=said)
        # the years it writes plus those its offsets imply ("three years later")
        stated, spans, tight = _year_features(told_years(c.text), _window_years(window))
    dated = c.occurred_start is not None or c.occurred_end is not None
    when_year = query.asks_when and YEAR.search(c.text) is not None
    length = math.log(min(max(len(c.text.split()), _MIN_WORDS), _MAX_WORDS))
    graph = min(max(c.arm_scores.get("graph", 0.0), 0.0), 3.0) / 3.0
    # Without a window the temporal arm answers a "when" question: its rank among the matching
    # memories that state their own date.
    when_rank = c.ranks.get("temporal") if window is None else None
    return [
        1.0,  # intercept
        math.log1p(c.position),
        c.rrf / best_rrf if best_rrf > 0 else 0.0,
        *_arm_features(c),
        float(len(c.ranks)),
        cosine,
        cosine - best_cosine,
        keyword / best_keyword if best_keyword > 0 else 0.0,
        graph,
        term_cover,
        name_cover,
        float(window is not None and proximity is not None) * (proximity or 0.0),
        float(window is not None and proximity is None),
        stated,
        spans,
        float(query.asks_when and dated),
        float(when_year),
        length,
        0.0 if when_rank is None else _RRF_K / (_RRF_K + when_rank),
        *(0.0 for _ in _RELATIVE),  # filled by _relative
        tight,
        0.0,  # neighbour_of_top: marked by the caller
        float(bool(query.names & speaker_names(c.text, c.context))),
        0.0,  # neighbour_of_top_speaker_named: marked by the caller
    ]


# Scale-free forms of the cosine, the coverage and the length: each candidate against the other
# candidates of the same query, so a model trained on short chat turns does not carry their
# absolute scale (a paragraph's cosines, its coverage of the question and its length all run
# higher or lower than a chat turn's) to other text. Computed from the absolute columns by
# :func:`_relative`, in both featurize paths.
# ``log_candidates`` (the log of the list's length) says how far those relative forms can
# reach and how rare evidence is among the candidates: over two candidates the best cosine's
# z-score is 1, over 300 it runs to 3 or 4, and one candidate in two is evidence far more
# often than one in 300 (a clear match in a bank of five memories scored 0.30 without it).
_RELATIVE: Final = (
    "cosine_z",
    "term_cover_over_best",
    "name_cover_over_best",
    "log_words_rel",
    "log_candidates",
)

NEIGHBOUR_FEATURE: Final = "neighbour_of_top"
SPEAKER_FEATURE: Final = "speaker_named"
NEIGHBOUR_SPEAKER_FEATURE: Final = "neighbour_of_top_speaker_named"
# The columns of the second graph round, set by mark_neighbours (never by featurize): a first
# stage, which picks the round's seeds, reads none of them.
SECOND_ROUND: Final = frozenset({NEIGHBOUR_FEATURE, NEIGHBOUR_SPEAKER_FEATURE})

FEATURE_NAMES: Final[tuple[str, ...]] = (
    "intercept",
    "log1p_position",
    "rrf_over_best",
    *(f"{arm}_{part}" for arm in ARM_NAMES for part in ("found", "rr")),
    "n_arms",
    "cosine",
    "cosine_minus_best",
    "keyword_over_best",
    "graph_score",
    "term_cover",
    "name_cover",
    "window_proximity",
    "window_undated",
    "window_year_stated",
    "window_within_text_years",
    "when_and_dated",
    "when_and_year_stated",
    "log_words",
    "dated_evidence_rr",
    *_RELATIVE,
    # appended after the relative columns (every earlier column keeps its place): how tight the
    # narrowest span of years the text tells (writes, or implies by an offset) around the
    # question's window is (_year_features)
    "window_tight_years",
    # the second graph round: whether the candidate is a document neighbour of one of the first
    # stage's top hits (LearnedScorer.seeds, arms/graph.py's neighbour_plan); featurize leaves
    # it 0, the caller marks it (LearnedScorer.probabilities)
    NEIGHBOUR_FEATURE,
    # appended after the second graph round: whether the memory's speaker (speaker_names) is a
    # person the question names ("What books has Melanie read?": a turn Melanie says, not one
    # Caroline says to her); name_cover_over_best cannot tell them apart
    SPEAKER_FEATURE,
    # the second graph round's mark where the neighbour is said by a person the question names
    # (neighbour_of_top x speaker_named, mark_neighbours): in a chat, the turn beside a good
    # hit continues its topic, and it holds the asked person's facts when that person says it
    NEIGHBOUR_SPEAKER_FEATURE,
)
"""Every feature :func:`featurize` computes, in column order; a model uses a subset."""


def featurize(query: QuerySignals, candidates: Sequence[CandidateSignals]) -> npt.NDArray[np.float64]:
    """One row of :data:`FEATURE_NAMES` per candidate (per-query normalisation included): the
    rows of :func:`featurize_told`.

    >>> q = QuerySignals.from_query("Who plays violin?", None)
    >>> featurize(q, [CandidateSignals(position=0, rrf=0.02, cosine=0.5, text="x")]).shape
    (1, 35)
    """
    rows, _ = featurize_told(query, candidates)
    return rows


def featurize_told(
    query: QuerySignals, candidates: Sequence[CandidateSignals]
) -> tuple[npt.NDArray[np.float64], Mapping[int, Sequence[int]] | None]:
    """One row of :data:`FEATURE_NAMES` per candidate (per-query normalisation included), and
    the years each candidate's text tells (:func:`~shared_core.recall.text_years.told_years`,
    by index; a text telling none left out) when the question has a window (the only time the
    features read them; None otherwise: not computed). Recall hands the told years on to the
    temporal boost (:func:`shared_core.recall.boosts.stated_time_of`), which reads the same
    years of the same texts: computed once, not twice (7.5 -> 11.0 ms per 300 encyclopedia
    paragraphs when both did, session 16).

    Built column by column for all candidates at once: one pass in Python over the candidates'
    numbers, one vectorised pass over all their texts (:class:`TextScan`: word counts, years,
    term and name coverage), no per-text cache (recall's candidates are mostly texts the
    process has not seen). The numbers are those of the per-candidate :func:`_row`, the
    readable spec (``tests/unit/test_learned_recorded.py`` keeps them identical, bit for bit).

    >>> import datetime as dt
    >>> w = TimeWindow(start=dt.datetime(2005, 1, 1), end=dt.datetime(2006, 1, 1))
    >>> q = QuerySignals.from_query("Where did Mara work in 2005?", w)
    >>> texts = ["In 2003 she joined. Two years later she left.", "No year.", "Back in 1999."]
    >>> rows, told = featurize_told(q, [CandidateSignals(position=i, rrf=0.02, cosine=0.5, text=t)
    ...                                 for i, t in enumerate(texts)])
    >>> rows.shape, told
    ((3, 35), {0: [2003, 2005], 2: [1999]})
    """
    n = len(candidates)
    if not n:
        return np.zeros((0, len(FEATURE_NAMES))), {} if query.window is not None else None
    nan = math.nan
    numbers = np.array(
        [
            (
                c.position,
                c.rrf,
                (found_scores := c.arm_scores).get("keyword", 0.0),
                found_scores.get("graph", 0.0),
                found_scores.get("semantic", 0.0) if c.cosine is None else c.cosine,
                len(found_ranks := c.ranks),
                c.occurred_start is not None or c.occurred_end is not None,
                # ARM_NAMES order (a new arm fails the column count below)
                found_ranks.get("semantic", nan),
                found_ranks.get("keyword", nan),
                found_ranks.get("graph", nan),
                found_ranks.get("temporal", nan),
            )
            for c in candidates
        ],
        dtype=np.float64,
    )
    position, rrf, keywords, graph, cosines, n_arms, dated = numbers[:, :7].T
    arm_ranks = numbers[:, 7:].T
    # Python's max(x, 0.0) / min(x, 3.0), -0.0 and NaN included
    keywords = np.where(keywords < 0.0, 0.0, keywords)
    graph = np.where(graph < 0.0, 0.0, graph)
    graph = np.where(graph > 3.0, 3.0, graph) / 3.0
    best_cosine, best_keyword, best_rrf = cosines.max(), keywords.max(), rrf.max()
    scan = TextScan.of([c.text for c in candidates])
    out = np.zeros((n, len(FEATURE_NAMES)), dtype=np.float64)
    col = 0

    def put(values: Any) -> None:
        nonlocal col
        out[:, col] = values
        col += 1

    put(1.0)
    put(_log1p(position))
    put(rrf / best_rrf if best_rrf > 0 else 0.0)
    for rank in arm_ranks:
        found = ~np.isnan(rank)
        put(found)
        put(np.where(found, _RRF_K / (_RRF_K + rank), 0.0))
    put(n_arms)
    put(cosines)
    put(cosines - best_cosine)
    put(keywords / best_keyword if best_keyword > 0 else 0.0)
    put(graph)
    if query._scannable:
        put(_term_cover(scan, query) if query.terms else 0.0)
        put(scan.word_cover(sorted(query.names)) if query.names else 0.0)
    else:
        cover = [query.coverage(c.text.lower()) for c in candidates]
        put([t for t, _ in cover])
        put([m for _, m in cover])
    written = _written(scan) if query.window is not None or query.asks_when else {}
    window = query.window
    tight: npt.NDArray[np.float64] | None = None
    told: dict[int, list[int]] | None = None
    if window is not None:
        proximity, undated = _proximities(candidates, window)
        put(proximity)
        put(undated)
        stated = np.zeros((3, n))
        bounds = _window_years(window)
        told = _told(written, candidates)
        for i, years in told.items():
            stated[:, i] = _year_features(years, bounds)
        put(stated[0])
        put(stated[1])
        tight = stated[2]
    else:
        col += 4
    if query.asks_when:
        put(dated)
        has_year = np.zeros(n)
        has_year[list(written)] = 1.0
        put(has_year)
    else:
        col += 2
    put(_LOG_WORDS[np.clip(scan.words, _MIN_WORDS, _MAX_WORDS)])
    # Without a window the temporal arm answers a "when" question: its rank among the matching
    # memories that state their own date.
    if window is None:
        temporal = arm_ranks[ARM_NAMES.index("temporal")]
        put(np.where(np.isnan(temporal), 0.0, _RRF_K / (_RRF_K + temporal)))
    else:
        col += 1
    col += len(_RELATIVE)
    if tight is not None:
        put(tight)
    else:
        col += 1
    col += 1  # neighbour_of_top: marked by the caller (mark_neighbours)
    if query.names:  # a question naming nobody has no speaker to match
        # Only a text that holds one of the names as a word (name_cover, just computed) can
        # have it as its speaker: the speech form's regex runs on those and on the memories
        # with a context, not on all 300.
        speaker = np.zeros(n)
        maybe = out[:, _COLUMN["name_cover"]] > 0
        maybe[[i for i, c in enumerate(candidates) if c.context]] = True
        for i in np.flatnonzero(maybe).tolist():
            c = candidates[i]
            speaker[i] = bool(query.names & speaker_names(c.text, c.context))
        put(speaker)
    else:
        col += 1
    col += 1  # neighbour_of_top_speaker_named: marked by the caller (mark_neighbours)
    assert col == len(FEATURE_NAMES), "a feature column is missing"
    _relative(out)
    return out, told


_COLUMN: Final = {name: i for i, name in enumerate(FEATURE_NAMES)}


def _term_cover(scan: TextScan, query: QuerySignals) -> npt.NDArray[np.float64]:
    """:meth:`QuerySignals.coverage`'s term share for every text of ``scan``."""
    terms = sorted(query.terms)
    if not query._form_terms:
        return scan.prefix_cover(terms)
    found = scan.prefix_found(terms)
    column = {term: i for i, term in enumerate(terms)}
    keys = sorted(query._form_terms)
    prefix = [k for k in keys if len(k) >= _FORM_PREFIX_MIN]
    whole = [k for k in keys if len(k) < _FORM_PREFIX_MIN]
    for group, hits in ((prefix, scan.prefix_found(prefix)), (whole, scan.word_found(whole))):
        for j, key in enumerate(group):
            for term in query._form_terms[key]:
                found[:, column[term]] |= hits[:, j]
    share: npt.NDArray[np.float64] = found.sum(axis=1) / len(terms)
    return share


def mark_neighbours(rows: npt.NDArray[np.float64], marks: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """A copy of ``rows`` (:func:`featurize`'s) with the second graph round's columns set from
    ``marks`` (:meth:`LearnedScorer.neighbour_marks`): :data:`NEIGHBOUR_FEATURE` itself and
    :data:`NEIGHBOUR_SPEAKER_FEATURE`, the mark of a neighbour said by a person the question
    names. Recall and training (``benchmarks/train_reranker.py``) mark through this one function."""
    out = rows.copy()
    out[:, _COLUMN[NEIGHBOUR_FEATURE]] = marks
    out[:, _COLUMN[NEIGHBOUR_SPEAKER_FEATURE]] = marks * rows[:, _COLUMN[SPEAKER_FEATURE]]
    return out


def _relative(out: npt.NDArray[np.float64]) -> None:
    """Fill the :data:`_RELATIVE` columns of ``out`` (one query's rows) from its absolute ones:
    the cosine as a z-score within the query, coverage over the query's best coverage, the log
    word count minus the query's median (capped at :data:`_MAX_LOG_WORDS_REL`), the log of the
    number of candidates."""
    cosine = out[:, _COLUMN["cosine"]]
    spread = float(cosine.std())
    out[:, _COLUMN["cosine_z"]] = (cosine - cosine.mean()) / spread if spread > 1e-9 else 0.0
    for name in ("term_cover", "name_cover"):
        cover = out[:, _COLUMN[name]]
        best = float(cover.max())
        out[:, _COLUMN[f"{name}_over_best"]] = cover / best if best > 0 else 0.0
    words = out[:, _COLUMN["log_words"]]
    relative = words - np.median(words)
    out[:, _COLUMN["log_words_rel"]] = np.minimum(relative, _MAX_LOG_WORDS_REL)
    out[:, _COLUMN["log_candidates"]] = math.log(len(out)) if len(out) else 0.0


# The relative length is capped at e^1.25 = 3.5 times the query's median: longer, LoCoMo has
# few rows (on its 0-4 training lists the cap changes no R@1 / R@10: 43.0 / 79.5 with or without
# it; held out 5-7 39.7 / 77.7, dated-hard and dated-long unchanged),
# and unclipped, the linear model extrapolated to rank a memory 27 times longer than the others
# first in a bank of five whatever their cosines (tests/integration/test_recall_arms.py's
# cut_bank: 0.81 against 0.38 for the best cosine). The largest of 2, 1.5, 1.25, 1 that keeps
# that bank in cosine order (1.5: the long third memory still passes the second).
_MAX_LOG_WORDS_REL: Final = 1.25

# math.log of the clipped word count and math.log1p of small positions, as tables: numpy's
# vectorised log may differ from the C library's in the last bit, a table cannot.
_LOG_WORDS: Final = np.array([math.log(max(k, 1)) for k in range(_MAX_WORDS + 1)])
_LOG1P_TABLE: Final = np.array([math.log1p(k) for k in range(1024)])


def _log1p(position: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    index = position.astype(np.intp)
    if len(position) and (index == position).all() and index.min() >= 0 and index.max() < len(_LOG1P_TABLE):
        out: npt.NDArray[np.float64] = _LOG1P_TABLE[index]
        return out
    return np.array([math.log1p(p) for p in position.tolist()])


def _written(scan: TextScan) -> dict[int, list[tuple[int, int]]]:
    """(where in the text, year) of the years each text writes, as :data:`YEAR` finds them
    (:meth:`TextScan.years`; texts writing none left out): the places :func:`_told` hands on,
    so that :func:`~shared_core.recall.text_years.with_implied` need not find them again."""
    written: dict[int, list[tuple[int, int]]] = {}
    for i, where, year in scan.years():
        written.setdefault(i, []).append((where, year))
    return written


def _told(
    written: dict[int, list[tuple[int, int]]], candidates: Sequence[CandidateSignals]
) -> dict[int, list[int]]:
    """The years each text tells (:func:`told_years`), from what it writes (``written``, the
    :func:`_written` of the candidates' scan). Only a text writing a year can imply one (an
    offset needs an anchor), and only one holding an offset's words
    (:func:`shared_core.recall.text_years.may_imply`: a few substring tests) is read again, so
    the texts left out stay out and chat lists cost next to nothing more."""
    told: dict[int, list[int]] = {}
    for i, found_years in written.items():
        text = candidates[i].text
        found = offsets(text)  # [] at once for a text without "year", "season" or "decade"
        told[i] = with_implied(text, found, found_years) if found else [year for _, year in found_years]
    return told


def _proximities(
    candidates: Sequence[CandidateSignals], window: TimeWindow
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """(:meth:`CandidateSignals.proximity`, 0.0 when None; whether it is None) of every
    candidate: each effective date as a timedelta from the window's centre (effective_date's
    arithmetic on exact microseconds: ``start - centre + (end - start) / 2``), its
    ``total_seconds`` as temporal_proximity reads it, then the same float operations in numpy."""
    centre = window.centre
    half = window.span.total_seconds() / 2
    utc, none = _dt.UTC, _dt.timedelta(0)

    def since(date: _dt.datetime) -> _dt.timedelta:  # naive dates are UTC (as_utc)
        return (date if date.tzinfo is not None else date.replace(tzinfo=utc)) - centre

    def closeness(deltas: Sequence[_dt.timedelta]) -> npt.NDArray[np.float64]:
        """temporal_proximity of dates ``deltas`` away from the centre."""
        distance = np.abs(np.fromiter(map(_dt.timedelta.total_seconds, deltas), np.float64, len(deltas)))
        near: npt.NDArray[np.float64] = (
            np.where(distance == 0, 1.0, 0.0) if half <= 0 else 1.0 - np.minimum(distance / half, 1.0)
        )
        return near

    deltas: list[_dt.timedelta] = []
    undated: list[int] = []
    for i, c in enumerate(candidates):
        start, end = c.occurred_start, c.occurred_end
        if start is None and end is None:  # the most common case first
            said = c.mentioned_at
            if said is None:
                undated.append(i)
            deltas.append(none if said is None else since(said))
        elif start is None:
            deltas.append(since(end))  # type: ignore[arg-type]
        elif end is not None:
            low, high = sorted((since(start), since(end)))
            deltas.append(low + (high - low) / 2)
        elif c.date_grain is None:
            deltas.append(since(start))
        else:  # the middle of the grain starting there
            first = as_utc(start)
            deltas.append(first - centre + (_grain_end(first, c.date_grain) - first) / 2)
    proximity = closeness(deltas)
    missing = np.zeros(len(deltas), dtype=np.bool_)
    missing[undated] = True
    proximity[missing] = 0.0
    if said_selects(candidates, window):
        spoken_at = {i: c.mentioned_at for i, c in enumerate(candidates) if c.mentioned_at is not None}
        spoken = list(spoken_at)
        proximity[spoken] = np.maximum(proximity[spoken], closeness([since(d) for d in spoken_at.values()]))
    return proximity, missing


def _featurize_rows(query: QuerySignals, candidates: Sequence[CandidateSignals]) -> npt.NDArray[np.float64]:
    """The per-candidate reference :func:`featurize` replaced (kept for the equality test)."""
    if not candidates:
        return np.zeros((0, len(FEATURE_NAMES)))
    cosines = [c.cosine if c.cosine is not None else c.arm_scores.get("semantic", 0.0) for c in candidates]
    keywords = [max(c.arm_scores.get("keyword", 0.0), 0.0) for c in candidates]
    best_cosine, best_keyword = max(cosines), max(keywords)
    best_rrf = max(c.rrf for c in candidates)
    said = query.window is not None and said_selects(candidates, query.window)
    out = np.asarray(
        [
            _row(query, c, cos, best_cosine, kw, best_keyword, best_rrf, said)
            for c, cos, kw in zip(candidates, cosines, keywords, strict=True)
        ],
        dtype=np.float64,
    )
    _relative(out)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class LearnedScorer:
    """A logistic regression over a subset of :data:`FEATURE_NAMES`.

    ``features`` names the columns used, ``mean`` / ``scale`` standardise them, ``coef`` and
    ``intercept`` are the model. :meth:`default` loads the weights shipped with the package.

    A model reading :data:`NEIGHBOUR_FEATURE` ranks in two stages: ``first_stage`` (a model
    without it) picks the ``neighbour_seeds`` best candidates (:meth:`seeds`), the caller finds
    their neighbours within ``neighbour_window`` places in their documents
    (``arms/graph.py``'s ``neighbour_plan``) and :meth:`probabilities` scores every candidate
    with those marked, as the model was trained.
    """

    features: tuple[str, ...]
    mean: npt.NDArray[np.float64]
    scale: npt.NDArray[np.float64]
    coef: npt.NDArray[np.float64]
    intercept: float
    meta: Mapping[str, Any] = field(default_factory=dict)
    first_stage: LearnedScorer | None = None
    neighbour_seeds: int = 0
    neighbour_window: int = 0
    _columns: npt.NDArray[np.intp] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unknown = set(self.features) - set(FEATURE_NAMES)
        if unknown:
            raise ValueError(f"unknown feature(s) {sorted(unknown)}")
        n = len(self.features)
        if not (self.mean.shape == self.scale.shape == self.coef.shape == (n,)):
            raise ValueError("mean, scale and coef need one value per feature")
        if self.first_stage is not None and (
            SECOND_ROUND.intersection(self.first_stage.features)
            or self.neighbour_seeds < 1
            or self.neighbour_window < 1
        ):
            raise ValueError(
                f"a first stage must not read {sorted(SECOND_ROUND)} and needs "
                "neighbour_seeds, neighbour_window >= 1"
            )
        object.__setattr__(
            self, "_columns", np.asarray([FEATURE_NAMES.index(f) for f in self.features], dtype=np.intp)
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LearnedScorer:
        """Build from the JSON layout of ``learned_reranker.json``."""
        own = {"features", "mean", "scale", "coef", "intercept", "first_stage"}
        own |= {"neighbour_seeds", "neighbour_window"}
        first = data.get("first_stage")
        return cls(
            features=tuple(data["features"]),
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            coef=np.asarray(data["coef"], dtype=np.float64),
            intercept=float(data["intercept"]),
            meta={k: v for k, v in data.items() if k not in own},
            first_stage=None if first is None else cls.from_dict(first),
            neighbour_seeds=int(data.get("neighbour_seeds", 0)),
            neighbour_window=int(data.get("neighbour_window", 0)),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            **self.meta,
            "features": list(self.features),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "coef": self.coef.tolist(),
            "intercept": self.intercept,
        }
        if self.first_stage is not None:
            out |= {
                "neighbour_seeds": self.neighbour_seeds,
                "neighbour_window": self.neighbour_window,
                "first_stage": self.first_stage.to_dict(),
            }
        return out

    @classmethod
    def default(cls) -> LearnedScorer:
        """The weights shipped with the package (loaded once per process)."""
        return _default_scorer()

    @property
    def reads_neighbours(self) -> bool:
        """Whether :meth:`probabilities` reads the neighbours of :meth:`seeds`."""
        return bool(SECOND_ROUND.intersection(self.features))

    def logits(self, rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Logits for rows of :func:`featurize` (all columns)."""
        x = (rows[:, self._columns] - self.mean) / self.scale
        out: npt.NDArray[np.float64] = x @ self.coef + self.intercept
        return out

    def seeds(self, rows: npt.NDArray[np.float64]) -> list[int]:
        """The indices of the first stage's ``neighbour_seeds`` best rows (best first, ties in
        input order); empty for a model that does not read neighbours."""
        if self.first_stage is None or not self.reads_neighbours or not len(rows):
            return []
        order = np.argsort(-self.first_stage.logits(rows), kind="stable")
        return [int(i) for i in order[: self.neighbour_seeds]]

    def neighbour_marks(
        self,
        rows: npt.NDArray[np.float64],
        seeds: Sequence[int],
        neighbours: Mapping[int, Sequence[int]],
    ) -> npt.NDArray[np.float64]:
        """The :data:`NEIGHBOUR_FEATURE` column: for each row in ``neighbours`` (row index ->
        the indices of the seeds it neighbours in its document), the first stage's probability
        of its best such seed over that of the best seed (``seeds[0]``); 0 for the others.
        Relative, so it reads the same over any list: 1 beside the top hit, less beside a seed
        the first stage was less sure of."""
        marks = np.zeros(len(rows))
        if self.first_stage is None or not seeds or not neighbours:
            return marks
        first = 1.0 / (1.0 + np.exp(-np.clip(self.first_stage.logits(rows), -40.0, 40.0)))
        best = float(first[seeds[0]])
        for i, near in neighbours.items():
            if near:
                marks[i] = max(float(first[s]) for s in near) / best if best > 0 else 0.0
        return marks

    def probabilities(
        self,
        rows: npt.NDArray[np.float64],
        seeds: Sequence[int] = (),
        neighbours: Mapping[int, Sequence[int]] | None = None,
    ) -> list[float]:
        """Calibrated relevance in [0, 1] per row of :func:`featurize`, with the rows in
        ``neighbours`` (row index -> the :meth:`seeds` it neighbours in its document; the seeds
        themselves are left out, as in training) marked by :meth:`neighbour_marks` (``rows``
        is not changed)."""
        if not len(rows):
            return []
        if neighbours:
            rows = mark_neighbours(rows, self.neighbour_marks(rows, seeds, neighbours))
        z = np.clip(self.logits(rows), -40.0, 40.0)
        scores: list[float] = (1.0 / (1.0 + np.exp(-z))).tolist()
        return scores

    def prepare(
        self, query: QuerySignals, candidates: Sequence[CandidateSignals]
    ) -> tuple[npt.NDArray[np.float64], list[int]]:
        """The feature rows of ``candidates`` and the :meth:`seeds` among them: what recall
        computes before it looks the seeds' neighbours up."""
        rows, seeds, _ = self.prepare_told(query, candidates)
        return rows, seeds

    def prepare_told(
        self, query: QuerySignals, candidates: Sequence[CandidateSignals]
    ) -> tuple[npt.NDArray[np.float64], list[int], Mapping[int, Sequence[int]] | None]:
        """:meth:`prepare`, and the years each text tells (:func:`featurize_told`: None
        without a window), which recall's temporal boost reads too."""
        rows, told = featurize_told(query, candidates)
        return rows, self.seeds(rows), told

    def score(
        self,
        query: QuerySignals,
        candidates: Sequence[CandidateSignals],
        neighbours: Mapping[int, Sequence[int]] | None = None,
    ) -> list[float]:
        """Calibrated relevance in [0, 1] per candidate, in the input order (``neighbours``:
        candidate index -> the :meth:`seeds` it neighbours in its document; none known by
        default)."""
        if not candidates:
            return []
        rows, seeds = self.prepare(query, candidates)
        return self.probabilities(rows, seeds, neighbours)


@functools.cache
def _default_scorer() -> LearnedScorer:
    text = resources.files("shared_core.recall").joinpath(_WEIGHTS_FILE).read_text("utf-8")
    return LearnedScorer.from_dict(json.loads(text))
