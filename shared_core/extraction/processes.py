"""Retain-time extraction (spaCy NER, date parsing) in worker processes.

spaCy's NER is a retain's largest CPU cost (3–4 ms per chat turn on one core) and holds the
GIL for much of it, so threads cannot spread it over cores. :class:`ExtractionProcesses`
starts ``processes`` Python interpreters (``python -m shared_core.extraction.processes``, not
``multiprocessing``: a spawned ``multiprocessing`` child re-runs the caller's ``__main__``,
which breaks scripts without an ``if __name__ == "__main__"`` guard), sends each the pickled
extractor and date parser once, and then a share of every batch's texts. Each text's mentions
and window are computed by the same objects as in the calling process, so the results are the
same (``tests/integration/test_extraction_processes.py`` compares them).

The children run offline (``HF_HUB_OFFLINE``), with one BLAS thread each (the processes are
the parallelism), and print nothing: their standard output is the result channel and their
standard error is discarded; an error in a child comes back as a value and is raised here.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Final

from shared_core.errors import ConfigurationError, ModelUnavailableError
from shared_core.protocols import DateParser, EntityExtractor
from shared_core.types import EntityMention, TimeWindow

__all__ = ["ExtractionProcesses", "raw_extract"]

# A child's environment on top of the parent's: offline, and one thread per math library
# (several threads per process on top of several processes oversubscribe the cores).
_CHILD_ENV: Final = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "BLIS_NUM_THREADS": "1",
}
# Parsed by every child right after loading, so the models load while the parent goes on
# (spaCy's pipeline and Duckling load on first use).
_WARM_UP: Final = ("Alice met Bob in Paris last May.", _dt.datetime(2024, 6, 1, tzinfo=_dt.UTC))

RawResult = tuple[list[list[EntityMention]], list[TimeWindow | None]]


def event_window(parser: DateParser, text: str, mentioned_at: _dt.datetime) -> TimeWindow | None:
    """The window a unit is about: the parser's ``event_window`` when it has one, else its
    first mention's."""
    window_of = getattr(parser, "event_window", None)
    if window_of is not None:
        window: TimeWindow | None = window_of(text, mentioned_at)
        return window
    mentions = parser.parse_dates(text, mentioned_at)
    return mentions[0].window if mentions else None


def raw_extract(
    extractor: EntityExtractor | None,
    parser: DateParser | None,
    ner_texts: Sequence[str],
    dated: Sequence[tuple[str, _dt.datetime]],
) -> RawResult:
    """The mentions of ``ner_texts`` and the event windows of ``dated`` (text, mentioned_at):
    the part of extraction that depends on one text at a time."""
    if extractor is None or not ner_texts:
        mentions: list[list[EntityMention]] = [[] for _ in ner_texts]
    else:
        mentions = extractor.extract(list(ner_texts))
    windows = [event_window(parser, t, m) if parser is not None else None for t, m in dated]
    return mentions, windows


def _shares(weights: Sequence[int], parts: int) -> list[tuple[int, int]]:
    """Cut ``len(weights)`` items into ``parts`` contiguous ranges of about equal weight.

    >>> _shares([1, 1, 1, 1, 4], 2)
    [(0, 4), (4, 5)]
    >>> _shares([], 3)
    [(0, 0), (0, 0), (0, 0)]
    """
    total = sum(weights)
    bounds, start, running, k = [], 0, 0, 1
    for i, w in enumerate(weights):
        running += w
        if k < parts and running * parts >= total * k:
            bounds.append((start, i + 1))
            start, k = i + 1, k + 1
    bounds.append((start, len(weights)))
    while len(bounds) < parts:
        bounds.append((len(weights), len(weights)))
    return bounds


class ExtractionProcesses:
    """``processes`` worker interpreters running :func:`raw_extract` with the given models.

    Use as a context manager (or call :meth:`close`); :meth:`run` may be called from any one
    thread at a time. Raises :class:`ConfigurationError` when a model cannot be pickled (a
    custom extractor holding a live resource: run it in-process instead).
    """

    def __init__(
        self,
        *,
        processes: int,
        entity_extractor: EntityExtractor | None,
        date_parser: DateParser | None,
    ) -> None:
        if processes < 1:
            raise ConfigurationError(f"processes must be at least 1, got {processes}")
        try:
            models = pickle.dumps((entity_extractor, date_parser), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise ConfigurationError(f"the extraction models cannot be sent to a process: {exc}") from exc
        env = {**os.environ, **_CHILD_ENV}
        # The child imports this package from where the parent did (a checkout on PYTHONPATH
        # as well as an installed copy).
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
        self._lock = threading.Lock()
        self._children: list[subprocess.Popen[bytes]] = []
        try:
            for _ in range(processes):
                child = subprocess.Popen(
                    [sys.executable, "-m", "shared_core.extraction.processes"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=env,
                )
                self._children.append(child)
                assert child.stdin is not None
                child.stdin.write(models)
                child.stdin.flush()
        except OSError as exc:
            self.close()
            raise ModelUnavailableError(f"cannot start an extraction process: {exc}") from exc

    @property
    def processes(self) -> int:
        return len(self._children)

    def run(self, ner_texts: Sequence[str], dated: Sequence[tuple[str, _dt.datetime]]) -> RawResult:
        """:func:`raw_extract` over all processes, each given a contiguous share."""
        n = len(self._children)
        ner_cuts = _shares([len(t) for t in ner_texts], n)
        date_cuts = _shares([len(t) for t, _ in dated], n)
        with self._lock:
            for child, (a, b), (c, d) in zip(self._children, ner_cuts, date_cuts, strict=True):
                _send(child, (list(ner_texts[a:b]), list(dated[c:d])))
            replies = [_receive(child) for child in self._children]
        mentions: list[list[EntityMention]] = []
        windows: list[TimeWindow | None] = []
        for part_mentions, part_windows in replies:
            mentions.extend(part_mentions)
            windows.extend(part_windows)
        return mentions, windows

    def close(self) -> None:
        """End the children (closing their input ends them) and wait for them."""
        for child in self._children:
            if child.stdin is not None:
                with contextlib.suppress(OSError):  # already gone: nothing to end
                    child.stdin.close()
        for child in self._children:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            if child.stdout is not None:
                child.stdout.close()
        self._children = []

    def __enter__(self) -> ExtractionProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _send(child: subprocess.Popen[bytes], request: object) -> None:
    assert child.stdin is not None
    try:
        pickle.dump(request, child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        child.stdin.flush()
    except OSError as exc:
        raise ModelUnavailableError(f"the extraction process exited ({child.poll()}): {exc}") from exc


def _receive(child: subprocess.Popen[bytes]) -> RawResult:
    assert child.stdout is not None
    try:
        status, value = pickle.load(child.stdout)
    except (EOFError, OSError, pickle.UnpicklingError) as exc:
        raise ModelUnavailableError(
            f"the extraction process exited (status {child.poll()}) before replying"
        ) from exc
    if status != "ok":
        raise ModelUnavailableError(f"extraction failed in a worker process: {value}")
    result: RawResult = value
    return result


def _serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    extractor, parser = pickle.load(requests)
    # A model that fails to load fails the first request instead, with its error sent back.
    with contextlib.suppress(Exception):
        raw_extract(extractor, parser, [_WARM_UP[0]], [_WARM_UP])
    while True:
        try:
            ner_texts, dated = pickle.load(requests)
        except EOFError:
            return
        reply: tuple[str, Any]
        try:
            reply = ("ok", raw_extract(extractor, parser, ner_texts, dated))
        except Exception as exc:  # sent back and raised, typed, in the parent
            reply = ("error", f"{type(exc).__name__}: {exc}")
        pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()


def _main() -> None:
    # Standard output is the reply channel: keep it on a private descriptor and point fd 1 and
    # 2 at /dev/null, so nothing a library prints can corrupt a reply.
    replies = os.fdopen(os.dup(1), "wb")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    _serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    _main()
