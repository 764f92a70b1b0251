"""One progress bar for a whole retain: embedding, extraction and writing.

``progress=None`` (the default) draws it only on a terminal and only once the retain has run
for :data:`DEFAULT_PROGRESS_DELAY_S`; ``True`` draws it at once, wherever stderr goes;
``False`` never. Each memory counts once per stage, so the bar moves evenly through the three.
"""

from __future__ import annotations

from typing import Any

from shared_core.quiet import without_tqdm_monitor

__all__ = ["DEFAULT_PROGRESS_DELAY_S", "RetainProgress"]

#: Retains shorter than this stay silent (tqdm's ``delay``) unless ``progress=True``.
DEFAULT_PROGRESS_DELAY_S = 1.0
_STAGES = 3


class RetainProgress:
    """A lazily drawn tqdm bar over the three stages of a retain (no-op when off)."""

    def __init__(self, progress: bool | None) -> None:
        self._progress = progress
        self._memories = 0
        self._bar: Any = None

    def start(self, memories: int) -> None:
        if self._progress is False or memories == 0:
            return
        from tqdm.auto import tqdm

        without_tqdm_monitor()
        self._memories = memories
        self._bar = tqdm(
            total=memories * _STAGES,
            desc="retain: embedding",
            unit="step",
            delay=0.0 if self._progress else DEFAULT_PROGRESS_DELAY_S,
            disable=None if self._progress is None else False,
            leave=False,
        )

    def advance(self, steps: int) -> None:
        if self._bar is not None:
            self._bar.update(steps)

    def stage(self, name: str, *, done: int) -> None:
        """Enter stage ``name`` with ``done`` of the three stages complete."""
        if self._bar is not None:
            self._bar.set_description(f"retain: {name}", refresh=False)
            self._bar.update(done * self._memories - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
