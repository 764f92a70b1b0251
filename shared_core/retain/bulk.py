"""Bulk retain: many batches in one transaction, the CPU work of the next batch overlapping
the writes of the current one.

A retain spends its time in two places that can run at once: the Python process (embedding,
spaCy NER, date parsing: :func:`~shared_core.retain.flow.prepare_retain`) and the database
server (the units' HNSW and full-text inserts, link queries, ``COPY``). One ``retain`` call does
them one after the other. :func:`bulk_flow` cuts the input into batches and, while batch ``k``
is written, prepares batch ``k + 1`` in a worker thread (the thread's NumPy/BLAS work and the
main thread's wait on the socket both release the GIL), all in one transaction.

Each batch is stored exactly as one ``retain`` call of that batch would store it (same
extraction, the same in-batch entity resolution and links; later batches link to earlier ones
through the database, as consecutive ``retain`` calls do), so the rows equal those of
``retain`` called once per batch: :mod:`tests/integration/test_bulk_retain.py` checks it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import psycopg

from shared_core.errors import ConfigurationError, InvalidItemError
from shared_core.extraction.processes import ExtractionProcesses
from shared_core.retain.extract import RawExtraction
from shared_core.retain.flow import (
    RetainContext,
    check_supplied_dimensions,
    extraction_models,
    prepare_retain,
    retain_error,
)
from shared_core.retain.plan import RetainRequest, retain_plan
from shared_core.retain.prepare import _REFERENCE_FIELDS, coerce_items, materialise_items
from shared_core.retain.progress import RetainProgress
from shared_core.storage.plan import Compute, Plan, Query
from shared_core.types import MemoryItem, check_bank

__all__ = [
    "DEFAULT_BULK_BATCH_SIZE",
    "DEFAULT_BULK_EXTRACTION_PROCESSES",
    "bulk_flow",
]

#: Items per batch. The plain baseline of ``benchmarks/retain.py`` loads 1,000 rows per
#: transaction too; larger batches give the overlap less to overlap (the first batch's
#: preparation and the last batch's writes run alone).
DEFAULT_BULK_BATCH_SIZE: Final = 1000

# Between batches: retain_plan's staging table lives until commit, so empty it; and the
# transaction-local planner settings its link query sets (links.SEMANTIC_NEIGHBOUR_SETTINGS:
# sequential scans and sorts off) would otherwise stay in force for every later batch's
# statements.
CLEAR_STAGE = "TRUNCATE retain_stage"
RESET_PLANNER = (
    "SELECT set_config('enable_seqscan', 'on', true) AS reset, "
    "set_config('enable_sort', 'on', true) AS reset_sort"
)

#: Worker processes for extraction by default: none. On the 2 shared cores this was measured on
#: (load 3-5, 10k LoCoMo turns) two processes were no faster (146 and 139/s against 159/s in
#: process, same command): the server's writes need the second core. Pass ``processes`` on a
#: machine with idle cores.
DEFAULT_BULK_EXTRACTION_PROCESSES: Final = 0

_Prepared = tuple[RetainRequest, npt.NDArray[np.float32]]


def split_batches(items: Sequence[MemoryItem], batch_size: int) -> list[list[MemoryItem]]:
    """Cut validated items into batches, rewriting index references (``caused_by=3``) to the
    batch's own positions; a reference to an item of another batch is an error.

    >>> from shared_core.types import MemoryItem
    >>> a, b, c = (MemoryItem(text=t) for t in "abc")
    >>> [[i.text for i in batch] for batch in split_batches([a, b, c], 2)]
    [['a', 'b'], ['c']]
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigurationError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    batches = []
    for start in range(0, len(items), batch_size):
        end = min(start + batch_size, len(items))
        batch = []
        for index in range(start, end):
            item = items[index]
            changes: dict[str, Any] = {}
            for name in _REFERENCE_FIELDS:
                refs = getattr(item, name)
                if not any(isinstance(r, int) for r in refs):
                    continue
                local = []
                for ref in refs:
                    if isinstance(ref, int):
                        if not start <= ref < end:
                            raise InvalidItemError(
                                index,
                                f"{name} index {ref} names an item of another batch (batch_size "
                                f"{batch_size}); reference it by memory id or use a larger batch",
                            )
                        ref -= start
                    local.append(ref)
                changes[name] = type(refs)(local)
            batch.append(dataclasses.replace(item, **changes) if changes else item)
        batches.append(batch)
    return batches


def bulk_flow(
    ctx: RetainContext,
    items: Iterable[Any],
    *,
    bank: str,
    batch_size: int = DEFAULT_BULK_BATCH_SIZE,
    progress: bool | None = None,
    processes: int = DEFAULT_BULK_EXTRACTION_PROCESSES,
) -> Plan[list[str]]:
    """Retain ``items`` in batches of ``batch_size``, one transaction for all; return the new
    ids in input order. Every item is validated before anything is prepared or written.

    ``processes``: worker processes for the entity and date extraction
    (:mod:`shared_core.extraction.processes`: the same results); 0 extracts in this process."""
    check_bank(bank)
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 0:
        raise ConfigurationError(f"processes must be an integer >= 0, got {processes!r}")
    validated = coerce_items(materialise_items(items))
    check_supplied_dimensions(validated, ctx.models.embedder, bank)  # indexes of the whole call
    batches = split_batches(validated, batch_size)
    if not batches:
        return []
    # Started first (nothing else to undo if they cannot start), as CPU work: loading the
    # engine's models must not block an event loop.
    workers: ExtractionProcesses | None = (
        (yield Compute(_start_processes, (ctx, processes))) if processes else None
    )
    raw = workers.run if workers is not None else None
    bar = RetainProgress(progress)
    bar.start(len(validated))
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hindsight-bulk-retain")
    ids: list[str] = []
    written_documents: set[str] = set()
    try:
        pending: Future[_Prepared] = yield Compute(executor.submit, (_prepare, ctx, batches[0], bank, raw))
        for k, batch in enumerate(batches):
            start = k * batch_size
            request, vectors = yield Compute(_result, (pending, start))
            if k + 1 < len(batches):
                pending = yield Compute(executor.submit, (_prepare, ctx, batches[k + 1], bank, raw))
            # A document written by an earlier batch of this call is extended, not replaced.
            replace = [d for d in request.replace_documents if d not in written_documents]
            written_documents.update(request.replace_documents)
            if len(replace) != len(request.replace_documents):
                request = dataclasses.replace(request, replace_documents=replace)
            try:
                ids.extend((yield from retain_plan(request, vectors)))
            except psycopg.Error as exc:
                raise _shifted(retain_error(exc, request), start) from exc
            if k + 1 < len(batches):
                yield Query(CLEAR_STAGE, fetch="none")
                yield Query(RESET_PLANNER, fetch="one")
            bar.advance(len(batch) * 3)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        if workers is not None:
            workers.close()
        bar.close()
    return ids


def _start_processes(ctx: RetainContext, processes: int) -> ExtractionProcesses | None:
    extractor, parser = extraction_models(ctx)
    if extractor is None and parser is None:
        return None
    return ExtractionProcesses(processes=processes, entity_extractor=extractor, date_parser=parser)


def _prepare(ctx: RetainContext, batch: list[MemoryItem], bank: str, raw: RawExtraction | None) -> _Prepared:
    return prepare_retain(ctx, batch, bank, None, raw=raw)


def _result(future: Future[_Prepared], start: int) -> _Prepared:
    try:
        return future.result()
    except InvalidItemError as exc:
        if not start:
            raise
        raise _shifted(exc, start) from exc


def _shifted(exc: Exception, start: int) -> Exception:
    """A batch's item error, renamed to the item's position in the whole input."""
    if isinstance(exc, InvalidItemError) and start:
        return InvalidItemError(exc.index + start, exc.reason)
    return exc
