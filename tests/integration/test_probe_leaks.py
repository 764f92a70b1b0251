"""Leaks found by the careless-user probe (session 18): each bad input below used to escape as
a raw ``TypeError`` / ``AttributeError`` / ``RecursionError`` / ``RuntimeError``; each must be
a typed :class:`~shared_core.errors.HindsightError` naming the field, with nothing written."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document

from shared_core import MemoryEngine
from shared_core.errors import ConfigurationError, HindsightError, InvalidItemError, InvalidQueryError

_Q = "Where does Alice work?"


def _deep_and(depth: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"team": "er"}
    for _ in range(depth):
        spec = {"$and": [spec]}
    return spec


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.mark.parametrize("field", ["batch_size", "processes"])
def test_retain_bulk_numbers_of_the_wrong_type(engine: MemoryEngine, bank: str, field: str) -> None:
    with pytest.raises(ConfigurationError, match=field):
        engine.retain_bulk(["Alice works at Google."], bank=bank, **{field: "3"})  # type: ignore[arg-type]
    assert engine.stats(bank).memories == 0


def test_a_filter_nested_past_the_limit_is_a_typed_error(engine: MemoryEngine, bank: str) -> None:
    with pytest.raises(InvalidQueryError, match=r"filter.*nested"):
        engine.recall(_Q, bank=bank, filter=_deep_and(500))
    with pytest.raises(InvalidQueryError, match=r"filter.*nested"):
        engine.declare_filter_index(bank=bank, filter=_deep_and(500))


@pytest.mark.parametrize("ids", [5, [5], [None], None])
def test_delete_by_ids_of_the_wrong_type(engine: MemoryEngine, bank: str, ids: Any) -> None:
    engine.retain(["Alice works at Google."], bank=bank)
    with pytest.raises(ConfigurationError, match="ids"):
        engine.delete(ids, bank=bank)
    assert engine.stats(bank).memories == 1


@pytest.mark.parametrize("ids", [5, None, [5], [None], [b"x"]])
def test_langchain_get_by_ids_of_the_wrong_type(engine: MemoryEngine, bank: str, ids: Any) -> None:
    from hindsight_langchain import HindsightRetriever

    retriever = HindsightRetriever(engine, bank=bank)
    with pytest.raises(ConfigurationError, match="ids"):
        retriever.get_by_ids(ids)


async def test_langchain_aget_by_ids_of_the_wrong_type(engine: MemoryEngine, bank: str) -> None:
    from hindsight_langchain import HindsightRetriever

    retriever = HindsightRetriever(engine, bank=bank)
    with pytest.raises(ConfigurationError, match="ids"):
        await retriever.aget_by_ids([5])  # type: ignore[list-item]


def test_time_weighted_lone_surrogate_is_a_typed_error(engine: MemoryEngine, bank: str) -> None:
    from hindsight_langchain import TimeWeightedHindsightRetriever

    retriever = TimeWeightedHindsightRetriever(engine=engine, bank=bank)
    good = Document(page_content="Alice ate pie.")
    with pytest.raises(InvalidItemError, match=r"item 1: .*surrogate"):
        retriever.add_documents([good, Document(page_content="a\ud800b")])
    assert engine.stats(bank).memories == 0
    with pytest.raises(InvalidQueryError, match="surrogate"):
        retriever.invoke("a\ud800b")


def test_time_weighted_metadata_nested_too_deep(engine: MemoryEngine, bank: str) -> None:
    from hindsight_langchain import TimeWeightedHindsightRetriever

    retriever = TimeWeightedHindsightRetriever(engine=engine, bank=bank)
    docs = [Document(page_content="Alice ate pie."), Document(page_content="a", metadata=_nested(1000))]
    with pytest.raises(InvalidItemError, match=r"item 1: .*metadata"):
        retriever.add_documents(docs)
    assert engine.stats(bank).memories == 0


def test_time_weighted_bad_timestamps_name_the_field(engine: MemoryEngine, bank: str) -> None:
    from hindsight_langchain import TimeWeightedHindsightRetriever

    retriever = TimeWeightedHindsightRetriever(engine=engine, bank=bank)
    with pytest.raises(InvalidItemError, match=r"item 0: .*last_accessed_at"):
        retriever.add_documents([Document(page_content="a", metadata={"last_accessed_at": "x"})])
    with pytest.raises(ConfigurationError, match="current_time"):
        retriever.add_documents([Document(page_content="a")], current_time="2020")
    assert engine.stats(bank).memories == 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"data_dir": 5}, "data_dir"), ({"data_dir": "/etc/passwd"}, "data_dir"), ({"config": 5}, "config")],
)
def test_engine_arguments_of_the_wrong_type(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigurationError, match=field):
        MemoryEngine(**kwargs)


def test_close_during_recalls_is_a_typed_error(pg_data_dir: Path, bank: str) -> None:
    second = MemoryEngine(data_dir=pg_data_dir)
    second.recall("warm up", bank=bank)
    leaks: list[BaseException] = []

    def recall_until_closed() -> None:
        for _ in range(200):
            try:
                second.recall(_Q, bank=bank)
            except HindsightError:
                return
            except BaseException as exc:
                leaks.append(exc)
                return

    threads = [threading.Thread(target=recall_until_closed) for _ in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(0.3)
    second.close()
    for thread in threads:
        thread.join(60)
    assert leaks == []


@pytest.mark.parametrize("document_id", ["a\ud800", "a\x00", 5])
def test_delete_by_a_bad_document_id(engine: MemoryEngine, bank: str, document_id: Any) -> None:
    engine.retain(["Alice works at Google."], bank=bank, document_id="doc")
    with pytest.raises(ConfigurationError, match="document_id"):
        engine.delete(bank=bank, document_id=document_id)
    assert engine.stats(bank).memories == 1
