"""Framework conventions (issue 13): one scenario, both retrievers, used the way PGVector and
LlamaIndex users use theirs: filters, ids, delete, k, scores, fusion de-duplication; then one
test per convention (k, search_kwargs, constructor fields, memory tags, ids, scores, naive
datetimes, typed errors, quiet output).

Tests of features still being built are marked ``pending(...)`` (``xfail(strict=True)``): they
must fail until the feature lands, and the mark goes when it does.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from hindsight_langchain import HindsightRetriever as LangChainRetriever
from hindsight_llamaindex import HindsightRetriever as LlamaIndexRetriever
from shared_core import MemoryEngine
from shared_core.errors import ConfigurationError, HindsightError, InvalidQueryError


def pending(reason: str) -> pytest.MarkDecorator:
    """A convention not built yet: the test must fail until it is (then drop the mark)."""
    return pytest.mark.xfail(strict=True, reason=f"pending (issue 13): {reason}")


FILTERS = "metadata filters pushed into recall's SQL"
K = "k means k (default 4, filled below thresholds)"
IDS = "user ids returned, stable, delete/get_by_ids"
SCORES = "scores are the reranker's calibrated relevance"
SEARCH_KWARGS = "search_kwargs / search_type like VectorStoreRetriever"
FIELDS = "unknown constructor fields rejected"
TAGS = "memory tags renamed to memory_tags"
UTC = "naive datetimes are UTC in the adapters"
ERRORS = "typed errors for common mistakes"
QUIET = "quiet output"
FUSION = "stable node hashes (QueryFusionRetriever de-duplicates)"

# Five people, two teams that share words with no query; Bob is the only "er" memory that
# mentions Zurich (the example: team == "er" with the query "Zurich").
PEOPLE: list[tuple[str, str, dict[str, Any]]] = [
    (
        "alice-job",
        "Alice works at Google as an engineer in Zurich.",
        {"team": "eng", "year": 2021, "person": "alice"},
    ),
    (
        "bob-job",
        "Bob is a nurse in the emergency room of a hospital in Zurich.",
        {"team": "er", "year": 2019, "person": "bob"},
    ),
    ("carol-cat", "Carol adopted a cat named Miso.", {"team": "er", "year": 2022, "person": "carol"}),
    ("dan-trip", "Dan hiked across Patagonia last winter.", {"team": "ops", "year": 2023, "person": "dan"}),
    ("erin-book", "Erin is writing a book about glaciers.", {"team": "eng", "year": 2020, "person": "erin"}),
]


def lc_documents() -> list[Document]:
    return [Document(id=i, page_content=text, metadata=dict(meta)) for i, text, meta in PEOPLE]


def li_nodes() -> list[TextNode]:
    return [TextNode(id_=i, text=text, metadata=dict(meta)) for i, text, meta in PEOPLE]


@pytest.fixture(scope="module")
def lc_bank(engine: MemoryEngine) -> str:
    bank = f"conv-lc-{uuid.uuid4().hex[:8]}"
    LangChainRetriever(engine=engine, bank=bank).add_documents(lc_documents())
    return bank


@pytest.fixture(scope="module")
def li_bank(engine: MemoryEngine) -> str:
    bank = f"conv-li-{uuid.uuid4().hex[:8]}"
    LlamaIndexRetriever(engine, bank=bank).insert(li_nodes())
    return bank


def ids(docs: list[Document]) -> list[str | None]:
    return [d.id for d in docs]


# ----------------------------------------------------------------------------- the scenario


def test_langchain_scenario(engine: MemoryEngine, bank: str) -> None:
    """What a PGVector user does: add with ids, search with k and a filter, read scores,
    get by id, delete, re-add."""
    retriever = LangChainRetriever(engine=engine, bank=bank)
    assert retriever.add_documents(lc_documents()) == [i for i, _, _ in PEOPLE]

    docs = retriever.invoke("Zurich")
    assert len(docs) == 4  # VectorStoreRetriever's default k
    assert docs[0].id in ("alice-job", "bob-job")

    er = retriever.invoke("Zurich", k=2, filter={"team": "er"})
    assert ids(er) == ["bob-job", "carol-cat"]
    assert all(d.metadata["team"] == "er" for d in er)
    recent = retriever.invoke("Zurich", k=5, filter={"year": {"$gte": 2021}})
    assert set(ids(recent)) == {"alice-job", "carol-cat", "dan-trip"}

    scores = [d.metadata["score"] for d in retriever.invoke("Who works in a hospital?", k=5)]
    assert scores == sorted(scores, reverse=True) and all(-1.0 <= s <= 1.0 for s in scores)

    assert ids(retriever.get_by_ids(["carol-cat", "missing"])) == ["carol-cat"]
    retriever.delete(["carol-cat"])
    assert retriever.get_by_ids(["carol-cat"]) == []
    assert "carol-cat" not in ids(retriever.invoke("cat", k=5))
    retriever.add_documents([lc_documents()[2]])
    assert retriever.invoke("Who adopted a cat?", k=1)[0].id == "carol-cat"
    assert len(retriever.invoke("anything at all", k=10)) == 5  # re-adding replaced


def test_llamaindex_scenario(engine: MemoryEngine, bank: str) -> None:
    """What a LlamaIndex user does: insert nodes, retrieve with MetadataFilters, fuse with BM25
    in a QueryFusionRetriever, delete, re-insert."""
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.retrievers.bm25 import BM25Retriever

    nodes = li_nodes()
    retriever = LlamaIndexRetriever(engine, bank=bank, similarity_top_k=2)
    assert retriever.insert(nodes) == [n.id_ for n in nodes]

    er = LlamaIndexRetriever(
        engine,
        bank=bank,
        similarity_top_k=2,
        filters=MetadataFilters(filters=[MetadataFilter(key="team", value="er")]),
    )
    found = er.retrieve("Zurich")
    assert [n.node.node_id for n in found] == ["bob-job", "carol-cat"]

    top = retriever.retrieve("Who works in a hospital?")
    assert len(top) == 2 and top[0].node.node_id == "bob-job"
    assert top[0].node.metadata == dict(PEOPLE[1][2])  # the user's metadata, as given
    assert top[0].score is not None and 0.0 < top[0].score <= 1.0

    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=2)
    from llama_index.core.llms import MockLLM

    fusion = QueryFusionRetriever(
        [retriever, bm25],
        similarity_top_k=4,
        num_queries=1,
        mode="reciprocal_rerank",
        use_async=False,
        llm=MockLLM(),
    )
    fused = fusion.retrieve("Who is a nurse in Zurich?")
    texts = [n.node.get_content() for n in fused]
    assert len(texts) == len(set(texts)), texts
    assert fused[0].node.node_id == "bob-job"

    retriever.delete(["bob-job"])
    assert "bob-job" not in [n.node.node_id for n in retriever.retrieve("nurse")]
    retriever.insert([nodes[1]])
    retriever.insert([nodes[1]])
    again = retriever.retrieve("nurse")
    assert [n.node.node_id for n in again].count("bob-job") == 1


# ----------------------------------------------------------------------------- 1. k means k


def test_langchain_default_k_is_4(engine: MemoryEngine, lc_bank: str) -> None:
    retriever = LangChainRetriever(engine=engine, bank=lc_bank)
    assert retriever.k == 4
    assert len(retriever.invoke("Zurich")) == 4


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_a_bank_with_k_memories_returns_k(engine: MemoryEngine, lc_bank: str, li_bank: str, k: int) -> None:
    query = "quantum chromodynamics"  # similar to nothing: every hit is a fill
    assert len(LangChainRetriever(engine=engine, bank=lc_bank, k=k).invoke(query)) == k
    assert len(LlamaIndexRetriever(engine, bank=li_bank, similarity_top_k=k).retrieve(query)) == k


def test_fill_below_thresholds_is_marked(engine: MemoryEngine, lc_bank: str) -> None:
    docs = LangChainRetriever(engine=engine, bank=lc_bank, k=5).invoke("Who is a nurse?")
    assert docs[0].id == "bob-job" and docs[0].metadata["below_threshold"] is False
    assert any(d.metadata["below_threshold"] for d in docs)


def test_no_unbounded_default(engine: MemoryEngine) -> None:
    assert LangChainRetriever.model_fields["k"].default == 4
    with pytest.raises(ConfigurationError, match="similarity_top_k"):
        LlamaIndexRetriever(engine, similarity_top_k=None)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- 2. search_kwargs


def test_search_kwargs_k_and_filter(engine: MemoryEngine, lc_bank: str) -> None:
    r = LangChainRetriever(engine=engine, bank=lc_bank, search_kwargs={"k": 1})
    assert len(r.invoke("Zurich")) == 1
    r = LangChainRetriever(engine=engine, bank=lc_bank, search_kwargs={"k": 3, "filter": {"team": "eng"}})
    assert sorted(ids(r.invoke("Zurich"))) == ["alice-job", "erin-book"]


def test_similarity_score_threshold(engine: MemoryEngine, lc_bank: str) -> None:
    r = LangChainRetriever(
        engine=engine,
        bank=lc_bank,
        search_type="similarity_score_threshold",
        search_kwargs={"score_threshold": 0.3, "k": 5},
    )
    docs = r.invoke("Who is a nurse in a hospital?")
    assert docs and all(d.metadata["score"] >= 0.3 for d in docs) and len(docs) < 5
    assert r.invoke("Who is a nurse?", score_threshold=0.99) == []


def test_mmr_diversifies(engine: MemoryEngine, bank: str) -> None:
    r = LangChainRetriever(
        engine=engine, bank=bank, search_type="mmr", search_kwargs={"k": 2, "fetch_k": 10, "lambda_mult": 0.3}
    )
    r.add_documents(
        [
            Document(id="a1", page_content="The train to Geneva leaves at nine."),
            Document(id="a2", page_content="The train to Geneva leaves at nine o'clock."),
            Document(id="b", page_content="Geneva has a large lake and a famous fountain."),
        ]
    )
    assert sorted(ids(r.invoke("Geneva train"))) in (["a1", "b"], ["a2", "b"])


async def test_async_mmr_matches_sync_and_embeds_off_the_event_loop(engine: MemoryEngine, bank: str) -> None:
    r = LangChainRetriever(
        engine=engine, bank=bank, search_type="mmr", search_kwargs={"k": 2, "fetch_k": 10, "lambda_mult": 0.3}
    )
    await r.aadd_documents(
        [
            Document(id="a1", page_content="The train to Geneva leaves at nine."),
            Document(id="a2", page_content="The train to Geneva leaves at nine o'clock."),
            Document(id="b", page_content="Geneva has a large lake and a famous fountain."),
        ]
    )
    loop_thread = threading.get_ident()
    threads: list[int] = []
    embed_query = engine.embedder.embed_query

    def spy(text: str) -> Any:
        threads.append(threading.get_ident())
        return embed_query(text)

    engine.embedder.embed_query = spy  # type: ignore[method-assign]
    try:
        got = ids(await r.ainvoke("Geneva train"))
    finally:
        del engine.embedder.embed_query
    assert got == ids(r.invoke("Geneva train"))
    assert threads and loop_thread not in threads  # a forward pass never stalls the loop


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"search_type": "nearest"}, "search_type"),
        ({"search_kwargs": {"kk": 1}}, "kk"),
        ({"search_kwargs": {"k": -1}}, "k"),
        ({"search_kwargs": {"k": "3"}}, "k"),
        ({"search_kwargs": {"lambda_mult": 0.5}}, "mmr"),
        ({"search_type": "similarity_score_threshold"}, "score_threshold"),
    ],
)
def test_bad_search_kwargs_raise_clear_errors(
    engine: MemoryEngine, kwargs: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ConfigurationError, match=fragment):
        LangChainRetriever(engine=engine, **kwargs)


def test_unknown_constructor_fields_are_rejected(engine: MemoryEngine) -> None:
    with pytest.raises((ValueError, TypeError), match="bnak"):
        LangChainRetriever(engine=engine, bnak="x")
    with pytest.raises(TypeError, match="bnak"):
        LlamaIndexRetriever(engine, bnak="x")  # type: ignore[call-arg]


# ----------------------------------------------------------------------------- 3. filters, tags


def test_langchain_filter_reaches_beyond_the_unfiltered_top(engine: MemoryEngine, lc_bank: str) -> None:
    docs = LangChainRetriever(engine=engine, bank=lc_bank, k=1).invoke(
        "Where does Alice work?", filter={"person": "erin"}
    )
    assert ids(docs) == ["erin-book"]


def test_llamaindex_filters_in_recall(engine: MemoryEngine, li_bank: str) -> None:
    r = LlamaIndexRetriever(
        engine,
        bank=li_bank,
        similarity_top_k=3,
        filters=MetadataFilters(
            filters=[MetadataFilter(key="year", value=2021, operator=FilterOperator.GTE)]
        ),
    )
    assert {n.node.node_id for n in r.retrieve("Zurich")} == {"alice-job", "carol-cat", "dan-trip"}


def test_malformed_filter_is_a_typed_error(engine: MemoryEngine, lc_bank: str) -> None:
    from shared_core.recall.filters import InvalidFilterError

    with pytest.raises(InvalidFilterError, match=r"filter\['year'\]\['\$gtt'\]"):
        LangChainRetriever(engine=engine, bank=lc_bank).invoke("x", filter={"year": {"$gtt": 1}})


class _Tags(BaseCallbackHandler):
    def __init__(self) -> None:
        self.tags: list[str] = []

    def on_retriever_start(self, serialized: Any, query: str, **kwargs: Any) -> None:
        self.tags.extend(kwargs.get("tags") or [])


def test_memory_tags_do_not_shadow_callback_tags(engine: MemoryEngine, bank: str) -> None:
    r = LangChainRetriever(engine=engine, bank=bank, memory_tags=["bob"], tags=["traced"])
    r.add_documents(
        [
            Document(page_content="Bob moved to Paris.", metadata={"tags": ["bob"]}),
            Document(page_content="Alice moved to Rome.", metadata={"tags": ["alice"]}),
        ]
    )
    handler = _Tags()
    docs = r.invoke("Who moved?", config={"callbacks": [handler]})
    assert [d.page_content for d in docs] == ["Bob moved to Paris."]
    assert handler.tags == ["traced"]


# ----------------------------------------------------------------------------- 4. ids


def test_ids_are_the_users_and_stable(engine: MemoryEngine, bank: str) -> None:
    r = LangChainRetriever(engine=engine, bank=bank)
    first = r.add_documents(
        [
            Document(id="x1", page_content="The launch is on Friday."),
            Document(page_content="The budget was approved."),
        ]
    )
    assert first[0] == "x1" and uuid.UUID(first[1])
    r.add_documents([Document(id="x1", page_content="The launch is on Friday.")])
    found = r.invoke("When is the launch?", k=10)
    assert ids(found).count("x1") == 1 and set(ids(found)) == set(first)


async def test_adelete_and_get_by_ids(engine: MemoryEngine, bank: str) -> None:
    r = LangChainRetriever(engine=engine, bank=bank)
    await r.aadd_documents([Document(id="y1", page_content="Yuki plays the cello.")])
    assert ids(r.get_by_ids(["y1"])) == ["y1"]
    await r.adelete(["y1"])
    assert r.get_by_ids(["y1"]) == [] and await r.ainvoke("cello") == []
    li = LlamaIndexRetriever(engine, bank=bank)
    li.insert([TextNode(id_="z1", text="Zoe repairs bicycles.")])
    await li.adelete(["z1"])
    assert li.retrieve("bicycles") == []


# A text well over the default unit_max_tokens (512), so retain splits it into sentence windows
# (DEFAULT_SENTENCE_WINDOW_TOKENS, 128): each sentence names a different person, place and craft.
_NAMES = ["Amara", "Bastian", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas"]
_PLACES = ["Lisbon", "Oslo", "Nairobi", "Quito", "Hanoi", "Tbilisi", "Perth", "Utrecht", "Cusco", "Riga"]
_CRAFTS = [
    "pottery",
    "sailing",
    "beekeeping",
    "chess",
    "glassblowing",
    "falconry",
    "origami",
    "fencing",
    "astronomy",
    "bookbinding",
]
LONG_TEXT = " ".join(
    f"In chapter {i + 1}, {n} moved to {p} and spent every weekend learning {c} with a patient "
    f"teacher, keeping a careful diary of each lesson, each mistake and each small success."
    for i, (n, p, c) in enumerate(zip(_NAMES * 3, _PLACES * 3, _CRAFTS * 3, strict=True))
)


def test_split_document_pieces_get_stable_distinct_ids(engine: MemoryEngine, bank: str) -> None:
    assert engine.config.unit_max_tokens < len(LONG_TEXT.split())  # the document is split
    r = LangChainRetriever(engine=engine, bank=bank)
    r.add_documents([Document(id="long-1", page_content=LONG_TEXT, metadata={"kind": "diary"})])
    first = {d.id: d.page_content for d in r.invoke("Who learned falconry?", k=50)}
    assert len(first) > 1 and all(i is not None and i.startswith("long-1#") for i in first)
    assert sorted(first) == sorted(f"long-1#{n}" for n in range(len(first)))
    r.add_documents([Document(id="long-1", page_content=LONG_TEXT, metadata={"kind": "diary"})])
    again = {d.id: d.page_content for d in r.invoke("Who learned falconry?", k=50)}
    assert again == first  # same ids for the same pieces after a re-add, nothing doubled
    whole = r.get_by_ids(["long-1#1"])
    assert [(d.id, d.page_content) for d in whole] == [("long-1", LONG_TEXT)]
    assert ids(r.get_by_ids(["long-1"])) == ["long-1"]
    r.delete(["long-1"])
    assert r.invoke("Who learned falconry?") == [] and r.get_by_ids(["long-1", "long-1#0"]) == []


def test_llamaindex_split_node_pieces_get_stable_distinct_ids(engine: MemoryEngine, bank: str) -> None:
    li = LlamaIndexRetriever(engine, bank=bank, similarity_top_k=50)
    li.insert([TextNode(id_="long-n", text=LONG_TEXT)])
    first = {n.node.node_id: n.node.get_content() for n in li.retrieve("Who learned falconry?")}
    assert len(first) > 1 and sorted(first) == sorted(f"long-n#{i}" for i in range(len(first)))
    assert {n.node.ref_doc_id for n in li.retrieve("Who learned falconry?")} == {"long-n"}
    li.insert([TextNode(id_="long-n", text=LONG_TEXT)])
    assert {n.node.node_id: n.node.get_content() for n in li.retrieve("Who learned falconry?")} == first
    li.delete(["long-n"])
    assert li.retrieve("Who learned falconry?") == []


# ----------------------------------------------------------------------------- 5. scores


def test_scores_are_relevance_not_rank(engine: MemoryEngine, lc_bank: str) -> None:
    r = LangChainRetriever(engine=engine, bank=lc_bank, k=5)
    near = r.invoke("Who is a nurse in a hospital?")[0].metadata["score"]
    far = r.invoke("quantum chromodynamics")[0].metadata["score"]
    assert 0.0 < far < near <= 1.0  # the top hit's score depends on how well it matches


# ----------------------------------------------------------------------------- 6. datetimes
@pytest.fixture
def new_york() -> Iterator[None]:
    old = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


@pytest.mark.usefixtures("new_york")
def test_naive_datetimes_are_utc_everywhere(engine: MemoryEngine, bank: str) -> None:
    naive = dt.datetime(2024, 1, 1, 12, 0)
    lc = LangChainRetriever(engine=engine, bank=bank)
    lc.add_documents(
        [Document(id="lc", page_content="The lc event happened.", metadata={"occurred_at": naive})]
    )
    LlamaIndexRetriever(engine, bank=bank).insert(
        [TextNode(id_="li", text="The li event happened.", metadata={"timestamp": naive})]
    )
    engine.retain([{"text": "The engine event happened.", "occurred_start": naive}], bank=bank)
    found = lc.invoke("event happened", k=3)
    starts = {d.metadata["occurred_start"] for d in found}
    assert starts == {"2024-01-01T12:00:00+00:00"}
    window = lc.invoke("What happened yesterday?", k=3, query_timestamp=dt.datetime(2024, 1, 2, 12, 0))
    assert window  # "yesterday" resolved against 2024-01-02 12:00 UTC


# ----------------------------------------------------------------------------- 7. errors
@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda r: r.add_documents(["text"]), "Document"),
        (lambda r: r.add_documents(Document(page_content="x")), "list"),
        (lambda r: r.invoke("q", query_timestamp="the day before"), "query_timestamp"),
        (lambda r: r.invoke(None), "str"),
        (lambda r: r.invoke("q", k=-1), "k"),
    ],
)
def test_langchain_mistakes_raise_typed_errors(
    engine: MemoryEngine, bank: str, call: Any, fragment: str
) -> None:
    r = LangChainRetriever(engine=engine, bank=bank)
    with pytest.raises(HindsightError, match=fragment):
        call(r)


def test_llamaindex_mistakes_raise_typed_errors(engine: MemoryEngine, bank: str) -> None:
    with pytest.raises(HindsightError, match="node"):
        LlamaIndexRetriever(engine, bank=bank).insert(["text"])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="similarity_top_k"):
        LlamaIndexRetriever(engine, bank=bank, similarity_top_k="3")  # type: ignore[arg-type]


def test_wrong_dsn_scheme_fails_fast_before_any_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import shared_core.embedding

    def no_models() -> None:
        raise AssertionError("a model was loaded before the DSN was checked")

    monkeypatch.setattr(shared_core.embedding, "default_embedder", no_models)
    started = time.perf_counter()
    with pytest.raises(ConfigurationError, match="postgresql"):
        LangChainRetriever(dsn="mysql://user@localhost/db")
    assert time.perf_counter() - started < 2.0


def test_valid_queries_still_work(engine: MemoryEngine, lc_bank: str) -> None:
    # Guard for the typed-error work: good input keeps working.
    assert LangChainRetriever(engine=engine, bank=lc_bank).invoke("Zurich")
    with pytest.raises(InvalidQueryError):
        LangChainRetriever(engine=engine, bank=lc_bank).invoke("   ")


# ----------------------------------------------------------------------------- 8. quiet output
_QUIET_SCRIPT = textwrap.dedent("""
    import asyncio, sys
    from langchain_core.documents import Document
    from llama_index.core.schema import TextNode
    from hindsight_langchain import HindsightRetriever as LC
    from hindsight_llamaindex import HindsightRetriever as LI
    from shared_core import MemoryEngine

    engine = MemoryEngine(sys.argv[1] if len(sys.argv) > 1 else None)
    lc = LC(engine=engine, bank="quiet")
    lc.add_documents([Document(page_content="Alice works at Google.")])
    lc.invoke("Where does Alice work?")
    lc.invoke("Who works at Google?")
    LI(engine, bank="quiet").retrieve("Alice")

    async def main():
        await lc.ainvoke("Alice")
        await LI(engine, bank="quiet").aretrieve("Google")

    asyncio.run(main())
    asyncio.run(main())
    engine.close()
    print("done")
""")


def test_a_process_is_quiet(engine: MemoryEngine, tmp_path: Any) -> None:
    script = tmp_path / "quiet.py"
    script.write_text(_QUIET_SCRIPT)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, str(script), engine.dsn], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("done"), out.stderr[-2000:]
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len([line for line in lines if "rerank" in line.lower()]) <= 1, lines
    for noise in (
        "http",
        "Traceback",
        "Loading weights",
        "error connecting",
        "Task was destroyed",
        "OSError:",  # the exception's text (a hub URL), not just its type
        "it/s]",
    ):
        assert not any(noise in line for line in lines), (noise, lines)
    assert len(lines) <= 1, lines


def test_reranker_fallback_is_logged_on_a_named_logger(
    engine: MemoryEngine, lc_bank: str, caplog: pytest.LogCaptureFixture
) -> None:
    from shared_core.recall.rerank import clear_reranker_cache

    clear_reranker_cache()
    caplog.set_level("INFO")
    LangChainRetriever(engine=engine, bank=lc_bank, reranker="no-such/cross-encoder").invoke(
        "Who works in Zurich?"
    )
    records = [r for r in caplog.records if "rerank" in r.getMessage().lower()]
    assert len(records) == 1 and records[0].name.startswith("shared_core")
    assert "\n" not in records[0].getMessage() and "http" not in records[0].getMessage()


def test_adapters_pass_progress_through(
    engine: MemoryEngine, bank: str, capfd: pytest.CaptureFixture[str]
) -> None:
    docs = [Document(page_content=f"Note number {i} about topic {i % 7}.") for i in range(40)]
    LangChainRetriever(engine=engine, bank=bank).add_documents(docs, progress=True)
    assert "retain" in capfd.readouterr().err  # forced on, even without a TTY
    LangChainRetriever(engine=engine, bank=bank).add_documents(docs)
    assert capfd.readouterr().err == ""  # default: only on a TTY
    LlamaIndexRetriever(engine, bank=bank).insert(
        [TextNode(text=d.page_content) for d in docs], progress=True
    )  # type: ignore[call-arg]
    assert "retain" in capfd.readouterr().err


def test_scenario_answers_without_conventions(engine: MemoryEngine, li_bank: str) -> None:
    # Today's behaviour that must survive: a plain retrieval answers from the bank.
    nodes: list[NodeWithScore] = LlamaIndexRetriever(engine, bank=li_bank).retrieve("Who is a nurse?")
    assert nodes and "nurse" in nodes[0].node.get_content()
    assert asyncio.iscoroutinefunction(LlamaIndexRetriever._aretrieve)


def test_time_weighted_mistakes_raise_typed_errors(engine: MemoryEngine, bank: str) -> None:
    from hindsight_langchain import TimeWeightedHindsightRetriever

    with pytest.raises(ConfigurationError, match="decay_rate"):
        TimeWeightedHindsightRetriever(engine=engine, bank=bank, decay_rate=2)
    retriever = TimeWeightedHindsightRetriever(engine=engine, bank=bank)
    with pytest.raises(InvalidQueryError, match="string"):
        retriever.invoke(None)  # type: ignore[arg-type]


_MONITOR_SCRIPT = textwrap.dedent("""
    import sys, threading
    from shared_core import MemoryEngine

    def embeddings(text):
        return [float(len(text)), 1.0, 0.5, 0.25]

    with MemoryEngine(sys.argv[1], embeddings=embeddings) as engine:
        engine.retain([f"Hal note {i}." for i in range(3)], bank="tqdm-own", progress=True)
    print([t.name for t in threading.enumerate() if type(t).__name__ == "TMonitor"])
""")


def test_a_progress_bar_with_your_own_embeddings_leaves_no_thread(
    engine: MemoryEngine, tmp_path: Any
) -> None:
    """tqdm starts a monitor thread that lives as long as the process with a class's first
    bar; the engine turns it off, also when the default embedding model never loads."""
    script = tmp_path / "monitor.py"
    script.write_text(_MONITOR_SCRIPT)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, str(script), engine.dsn], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
