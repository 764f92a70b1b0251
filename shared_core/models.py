"""The engine's models, loaded on first use: embedder, token counter, date parser, NER.

The embedder and token counter are required; the date parser and entity extractor are
optional: one that cannot load is disabled with a one-line warning, once.
"""

from __future__ import annotations

import gc
import threading
import warnings
from collections.abc import Callable
from typing import TypeVar

from shared_core.embedding import default_embedder
from shared_core.protocols import DateParser, Embedder, EntityExtractor, TokenCounter
from shared_core.quiet import without_tqdm_monitor
from shared_core.tokens import default_token_counter

__all__ = ["Models"]

T = TypeVar("T")


class Models:
    """The models one engine uses; each given one is used as is, the others load lazily.

    Args:
        embedder, token_counter, date_parser, entity_extractor: the seams
            (:mod:`shared_core.protocols`); ``None`` loads the default.
        freeze_gc_after_load: move loaded model objects out of the cyclic collector's way
            (see ``DEFAULT_FREEZE_GC_AFTER_LOAD``).
    """

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        token_counter: TokenCounter | None = None,
        date_parser: DateParser | None = None,
        entity_extractor: EntityExtractor | None = None,
        freeze_gc_after_load: bool = True,
    ) -> None:
        self._embedder = embedder
        self._counter = token_counter
        self._date_parser = date_parser
        self._entity_extractor = entity_extractor
        self._tried: set[str] = {
            name
            for name, given in (("date_parser", date_parser), ("entity_extractor", entity_extractor))
            if given is not None
        }
        self._freeze = freeze_gc_after_load
        self._lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    without_tqdm_monitor()
                    default = default_embedder()
                    # Its model loads on first use: freezing now would leave torch and the
                    # model (~350k objects) to every full collection, 150-200 ms each, about
                    # two per 100 recalls at 100k (measured).
                    default.on_load(self._loaded)
                    self._embedder = default
        return self._embedder

    @property
    def current_embedder(self) -> Embedder | None:
        """The embedder if it was given or has loaded (never loads the default)."""
        return self._embedder

    def sharing(self, *, embedder: Embedder) -> Models:
        """These models with another embedder: the others, loaded or not, are shared."""
        twin = Models(
            embedder=embedder,
            token_counter=self._counter,
            date_parser=self._date_parser,
            entity_extractor=self._entity_extractor,
            freeze_gc_after_load=self._freeze,
        )
        twin._tried = set(self._tried)
        return twin

    @property
    def token_counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = default_token_counter()
        return self._counter

    @property
    def date_parser(self) -> DateParser | None:
        """The date parser for query windows (and retain); None if it cannot load."""
        if "date_parser" not in self._tried:
            self._date_parser = self._optional("date parsing", _load_date_parser)
            self._tried.add("date_parser")
        return self._date_parser

    @property
    def entity_extractor(self) -> EntityExtractor | None:
        """The entity extractor used at retain (spaCy by default); None if it cannot load."""
        if "entity_extractor" not in self._tried:
            self._entity_extractor = self._optional("entity extraction", _load_entity_extractor)
            self._tried.add("entity_extractor")
        return self._entity_extractor

    def _optional(self, what: str, load: Callable[[], T]) -> T | None:
        try:
            loaded = load()
        except Exception as exc:  # optional model: fall back loudly, once
            warnings.warn(f"{what} disabled: {exc}", RuntimeWarning, stacklevel=3)
            return None
        self._loaded()
        return loaded

    def _loaded(self) -> None:
        # Model objects live as long as the process: keep the cyclic collector from
        # rescanning them in every full collection (see DEFAULT_FREEZE_GC_AFTER_LOAD).
        if self._freeze:
            gc.freeze()

    def __repr__(self) -> str:
        loaded = [
            name
            for name, value in (
                ("embedder", self._embedder),
                ("token_counter", self._counter),
                ("date_parser", self._date_parser),
                ("entity_extractor", self._entity_extractor),
            )
            if value is not None
        ]
        return f"<Models loaded: {', '.join(loaded) or 'none'}>"


def _load_date_parser() -> DateParser:
    from shared_core.extraction.dates import default_date_parser

    return default_date_parser()


def _load_entity_extractor() -> EntityExtractor:
    from shared_core.extraction.entities import SpacyEntityExtractor

    extractor = SpacyEntityExtractor()
    extractor.pipeline  # noqa: B018  (load now, so a failure is reported here)
    return extractor
