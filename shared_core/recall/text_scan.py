r"""Word runs, word counts and short runs of many texts, read in one vectorised pass.

The learned reranker (:mod:`shared_core.recall.learned`) reads three things from every
candidate text: its number of whitespace-separated words (``len(text.split())``), the years
it writes, and which of the question's terms (as word prefixes) and names (as whole words) its
lower-cased form contains. Read text by text with regexes that costs some 20 µs a text, and
recall's candidates are mostly texts the process has never seen. Here the texts are joined
with a newline (whitespace, and not a word character: for ``str.split`` and for the regex
``\b`` it acts as each text's start and end), turned into one array of code points and read
with numpy (ASCII texts, the usual case, as bytes classified by ``bytes.translate``): a run of
word characters (regex ``\w``: ``str.isalnum()`` or ``_``) starts where a word character
follows a non-word one, and a match of ``\b(?:…)`` can only begin at such a start.
The per-text regexes stay the spec; ``tests/unit/test_learned_recorded.py`` compares.

>>> scan = TextScan.of(["Mara repairs violins.", "", "Violinists and viola players"])
>>> scan.words.tolist()
[3, 0, 4]
>>> scan.prefix_cover(["violin", "viol"]).tolist()  # one match per run: the longest term
[0.5, 0.0, 1.0]
>>> scan.word_cover(["mara", "players"]).tolist()
[0.5, 0.0, 0.5]
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from shared_core.recall.text_years import YEAR

__all__ = ["TextScan"]

_SEP: Final = "\n"


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


# Per character below 128 (index 128: any other, classified one by one).
_ASCII_WORD: Final = np.array([_is_word(chr(i)) for i in range(128)] + [False])
_ASCII_SPACE: Final = np.array([chr(i).isspace() for i in range(128)] + [False])
# ASCII text, one bytes.translate pass: bit 0 word character, bit 1 not whitespace.
_CLASS_BYTES: Final = bytes(
    int(_ASCII_WORD[min(i, 128)]) | (0 if _ASCII_SPACE[min(i, 128)] else 2) for i in range(256)
)
# ASCII text compares the first _KEY bytes of every run at once, as one little-endian integer.
_KEY: Final = 8

_Ints = npt.NDArray[np.intp]
_Bools = npt.NDArray[np.bool_]
_Codes = npt.NDArray[np.uint8] | npt.NDArray[np.uint32]


def _codes(text: str) -> npt.NDArray[np.uint32]:
    # surrogatepass: a lone surrogate is a code point like any other (not a word, not a space)
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _classify(codes: npt.NDArray[np.uint32], table: _Bools, test: Callable[[str], bool]) -> _Bools:
    """``test(chr(c))`` for every code point: from ``table`` below 128, else once per distinct one."""
    out = table[np.minimum(codes, 128)]
    high = np.flatnonzero(codes >= 128)
    if len(high):
        distinct, where = np.unique(codes[high], return_inverse=True)
        out[high] = np.array([test(chr(c)) for c in distinct.tolist()], dtype=np.bool_)[where]
    return out


def _narrow(text: str) -> tuple[bytes, list[int]] | None:
    """``text`` as one byte per character: ASCII as itself, the i-th distinct other character
    as 128 + i (and the list of those); None if there are more than 128 of them."""
    codes = _codes(text)
    high = codes >= 128
    distinct, where = np.unique(codes[high], return_inverse=True)
    if len(distinct) > 128:
        return None
    narrow = codes.astype(np.uint8)
    narrow[high] = 128 + where
    return narrow.tobytes(), distinct.tolist()


_ASCII_LOWER: Final = bytes(range(256)).lower()


def _lower(raw: bytes, extra: Sequence[int]) -> tuple[bytes, list[int]] | None:
    """:func:`_narrow` text lower-cased as ``str.lower`` lowers each text, when every one of
    its non-ASCII characters lowers to one character whatever its neighbours (not Σ: final
    sigma; not İ: two characters); None otherwise."""
    if not extra:
        return raw.lower(), []
    table = bytearray(_ASCII_LOWER)
    lowered: dict[int, int] = {}  # lower-cased non-ASCII character: its byte - 128
    for i, cp in enumerate(extra):
        low = chr(cp).lower()
        if len(low) != 1 or cp == 0x3A3:
            return None
        code = ord(low)
        table[128 + i] = code if code < 128 else 128 + lowered.setdefault(code, len(lowered))
    if len(lowered) > 128:
        return None
    return raw.translate(table), list(lowered)


def _class_bytes(extra: Sequence[int]) -> bytes:
    """:data:`_CLASS_BYTES` with bytes 128 + i classifying the character ``extra[i]``."""
    if not extra:
        return _CLASS_BYTES
    table = bytearray(_CLASS_BYTES)
    for i, cp in enumerate(extra):
        ch = chr(cp)
        table[128 + i] = int(_is_word(ch)) | (0 if ch.isspace() else 2)
    return bytes(table)


def _same_words(extra: Sequence[int]) -> bool:
    """Whether each character of ``extra`` (each lowering to one character) is a word character
    exactly when its lower case is: then lower-casing moves no run's edges.

    >>> _same_words([ord("É"), ord("Ü")])
    True
    """
    return all(map(_keeps_word, extra))


@functools.lru_cache(maxsize=4096)  # the distinct non-ASCII characters recall's texts hold: few
def _keeps_word(cp: int) -> bool:
    return _is_word(chr(cp)) == _is_word(chr(cp).lower())


def _framed(mask: _Bools) -> _Bools:
    return np.concatenate(([False], mask, [False]))


def _runs(framed: _Bools) -> tuple[_Ints, _Ints]:
    """(start, length) of every maximal run of True in ``framed[1:-1]`` (both ends False)."""
    edges = np.flatnonzero(framed[1:] != framed[:-1])  # a start, its end, the next start, …
    return edges[0::2], edges[1::2] - edges[0::2]


def _starts(lengths: Sequence[int]) -> _Ints:
    """Where each text begins in the texts joined by :data:`_SEP`."""
    starts = np.zeros(len(lengths), dtype=np.intp)
    if len(lengths) > 1:
        np.cumsum(np.asarray(lengths[:-1], dtype=np.intp) + len(_SEP), out=starts[1:])
    return starts


@dataclass(frozen=True, slots=True, eq=False)
class TextScan:
    """What :mod:`shared_core.recall.learned` reads from a list of texts (build with :meth:`of`)."""

    count: int
    #: ``len(text.split())`` of every text.
    words: npt.NDArray[np.intp]
    _original: str
    _original_codes: _Codes
    _original_starts: _Ints
    _original_runs: tuple[_Ints, _Ints]
    # The lower-cased texts (each lowered alone, as ``text.lower()`` does), joined, and their runs.
    _lowered: _Codes
    _lowered_starts: _Ints
    _run_start: _Ints
    _run_length: _Ints
    # ASCII: the first _KEY bytes at every run start (zeros past the end); else the first code point.
    _run_keys: npt.NDArray[np.uint64] | None
    _run_first: _Codes
    # One byte per character (_run_keys set): the byte of each non-ASCII lower-cased character.
    _extra: dict[int, int]

    @classmethod
    def of(cls, texts: Sequence[str]) -> TextScan:
        joined = _SEP.join(texts)
        lengths = list(map(len, texts))
        starts = _starts(lengths)
        original: _Codes
        lowered: _Codes
        keys: npt.NDArray[np.uint64] | None = None
        narrow = (joined.encode("ascii"), []) if joined.isascii() else _narrow(joined)
        narrow_low = None if narrow is None else _lower(*narrow)
        if narrow is not None and narrow_low is not None:
            raw, raw_extra = narrow
            (low, extra), lowered_starts = narrow_low, starts  # one character each: same places
            kind = np.frombuffer((b"\n" + raw + b"\n").translate(_class_bytes(raw_extra)), np.uint8)
            nonspace = (kind >> 1).view(np.bool_)
            original_runs = runs = _runs((kind & 1).view(np.bool_))
            # Lower-casing ASCII keeps every word character; the others are checked (in this
            # Python's Unicode tables none that lowers to one character changes, so the lowered
            # runs are the original ones and the second pass over the text is skipped)
            if raw_extra and not _same_words(raw_extra):
                low_kind = np.frombuffer((b"\n" + low + b"\n").translate(_class_bytes(extra)), np.uint8)
                runs = _runs((low_kind & 1).view(np.bool_))
            original = np.frombuffer(raw, dtype=np.uint8)
            lowered = np.frombuffer(low, dtype=np.uint8)
            every = np.ndarray((len(low) + 1,), "<u8", low + bytes(_KEY), strides=(1,))
            keys = every[runs[0]]
        else:  # more than 128 distinct non-ASCII characters, or Σ or İ: code points
            original = _codes(joined)
            nonspace = _framed(~_classify(original, _ASCII_SPACE, str.isspace))
            original_runs = _runs(_framed(_classify(original, _ASCII_WORD, _is_word)))
            low_texts = [t.lower() for t in texts]
            extra = []
            lowered = _codes(_SEP.join(low_texts))
            lowered_starts = _starts(list(map(len, low_texts)))
            runs = _runs(_framed(_classify(lowered, _ASCII_WORD, _is_word)))
        # where words start: their number in each text is how many fall in its span
        word_starts = np.flatnonzero(nonspace[1:] > nonspace[:-1])
        ends = starts + np.asarray(lengths, dtype=np.intp)
        return cls(
            count=len(texts),
            words=np.searchsorted(word_starts, ends) - np.searchsorted(word_starts, starts),
            _original=joined,
            _original_codes=original,
            _original_starts=starts,
            _original_runs=original_runs,
            _lowered=lowered,
            _lowered_starts=lowered_starts,
            _run_start=runs[0],
            _run_length=runs[1],
            _run_keys=keys,
            _run_first=lowered[runs[0]],
            _extra={cp: 128 + i for i, cp in enumerate(extra)},
        )

    def _prefixed(self, word: str) -> _Ints:
        """The lower-cased runs that start with ``word`` (made of word characters only)."""
        code = [ord(ch) for ch in word]
        if self._run_keys is not None:  # one byte per character
            code = [c if c < 128 else self._extra.get(c, -1) for c in code]
            if min(code) < 0:  # a character no text has
                return np.zeros(0, dtype=np.intp)
            head = bytes(code[:_KEY])
            key = np.uint64(int.from_bytes(head, "little"))
            keys = self._run_keys
            if len(head) < _KEY:
                keys = keys & np.uint64((1 << (8 * len(head))) - 1)
            hit = np.flatnonzero(keys == key)  # the head's characters are all in the run
            done = len(head)
        else:
            hit = np.flatnonzero(self._run_first == code[0])
            done = 1
        if len(code) > done and len(hit):
            hit = hit[self._run_length[hit] >= len(code)]  # the rest of the word lies in the run
            rest = self._lowered[self._run_start[hit][:, None] + np.arange(done, len(code))]
            hit = hit[(rest == np.asarray(code[done:], dtype=rest.dtype)).all(axis=1)]
        return hit

    def _texts(self, runs: _Ints) -> _Ints:
        """The text each of the lower-cased ``runs`` is in."""
        return np.searchsorted(self._lowered_starts, self._run_start[runs], side="right") - 1

    def prefix_found(self, words: Sequence[str]) -> _Bools:
        r"""Per text and word (columns in ``words`` order; distinct, non-empty, all word
        characters): whether ``re.findall(r"\b(?:w1|w2|…)", text.lower())`` finds it,
        alternatives longest first: one match per run, the longest of ``words`` it starts with."""
        order = sorted(range(len(words)), key=lambda i: (-len(words[i]), words[i]))
        taken = np.full(len(self._run_start), -1, dtype=np.intp)  # per run: the longest word
        for i in order:
            hit = self._prefixed(words[i])
            taken[hit[taken[hit] < 0]] = i
        runs = np.flatnonzero(taken >= 0)
        found = np.zeros((self.count, len(words)), dtype=np.bool_)
        found[self._texts(runs), taken[runs]] = True
        return found

    def prefix_cover(self, words: Sequence[str]) -> npt.NDArray[np.float64]:
        """Per text: the share of ``words`` that :meth:`prefix_found` finds."""
        share: npt.NDArray[np.float64] = self.prefix_found(words).sum(axis=1) / len(words)
        return share

    def word_found(self, words: Sequence[str]) -> _Bools:
        """Per text and word (distinct, non-empty, all word characters): whether it is one of
        the text's lower-cased runs."""
        found = np.zeros((self.count, len(words)), dtype=np.bool_)
        for i, word in enumerate(words):
            hit = self._prefixed(word)
            found[self._texts(hit[self._run_length[hit] == len(word)]), i] = True
        return found

    def word_cover(self, words: Sequence[str]) -> npt.NDArray[np.float64]:
        """Per text: the share of ``words`` that are one of its lower-cased runs."""
        share: npt.NDArray[np.float64] = self.word_found(words).sum(axis=1) / len(words)
        return share

    def runs(self, length: int, first: str) -> list[tuple[int, str]]:
        """(text index, run) of the runs of the original texts ``length`` characters long
        that begin with one of the characters of ``first``, in text order."""
        start, size = self._original_runs
        pick = start[size == length]
        heads = self._original_codes[pick]
        pick = pick[np.logical_or.reduce([heads == ord(ch) for ch in first])]
        texts = np.searchsorted(self._original_starts, pick, side="right") - 1
        pairs = zip(texts.tolist(), pick.tolist(), strict=True)
        return [(t, self._original[p : p + length]) for t, p in pairs]

    def years(self) -> list[tuple[int, int, int]]:
        r"""(text index, where in the text, year) of every year ``(1[5-9]\d\d|20\d\d)``
        finds in the original texts, in text order: a match starts at a word start and ends
        at a word end, so it is a 4-character run starting with 1 or 2 that the pattern
        matches whole. Runs of four ASCII digits (nearly all) are read as numbers in numpy;
        any other run (a non-ASCII digit, which ``\d`` and ``int`` also read) by the regex.

        >>> TextScan.of(["In 2003, 12005, 1499 or x1999", "(2010) and 19\u0669\u0660"]).years()
        [(0, 3, 2003), (1, 1, 2010), (1, 11, 1990)]
        """
        start, size = self._original_runs
        pick = start[size == 4]
        heads = self._original_codes[pick]
        pick = pick[(heads == ord("1")) | (heads == ord("2"))]
        if not len(pick):  # most chat lists: no year at all
            return []
        digits = self._original_codes[pick[:, None] + np.arange(4)].astype(np.intp) - ord("0")
        other = ((digits < 0) | (digits > 9)).any(axis=1)  # not four ASCII digits: the regex decides
        value = digits @ np.array([1000, 100, 10, 1], dtype=np.intp)
        keep = other | ((value >= 1500) & (value <= 2099))
        pick, value, other = pick[keep], value[keep], other[keep]
        texts = np.searchsorted(self._original_starts, pick, side="right") - 1
        where = pick - self._original_starts[texts]
        out = []
        for t, p, w, v, odd in zip(
            texts.tolist(), pick.tolist(), where.tolist(), value.tolist(), other.tolist(), strict=True
        ):
            if odd:
                run = self._original[p : p + 4]
                if YEAR.fullmatch(run) is None:  # the runs numpy cannot read alone
                    continue
                v = int(run)
            out.append((t, w, v))
        return out
