"""TextScan reads many texts at once and gives the per-text regex numbers, bit for bit."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from shared_core.recall.text_scan import TextScan

# Characters that make the per-text rules differ from naive ones: Unicode whitespace that
# str.split splits on, word characters beyond ASCII (digits of other scripts, letters whose
# lower case is longer), underscores, a lone surrogate, punctuation.
_PIECES = (
    "group",
    "Groupie",
    "grouping",
    "support",
    "Ann",
    "anna",
    "Annabel",
    "caroline_smith",
    "Zürich",
    "İstanbul",
    "ΣΟΦΙΑ",
    "2022",
    "1999",
    "19٤٥",
    "２０２２",
    "1492",
    "2105",
    "12th",
    "café",
    "naïve",
    "x",
    "_",
    "a_b",
    "\ud800",
    "--",
    "’s",
    ",",
    ".",
    "‼",
    "٣",
)
_SPACES = (" ", " ", " ", "\t", "\n", "\xa0", "\u3000", "\x1c", "\u2028", "")


def _texts(seed: int, count: int = 60) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(rng.choice(_PIECES) + rng.choice(_SPACES) for _ in range(rng.randint(0, 12)))
        for _ in range(count)
    ]


def _prefix_cover(words: list[str], text: str) -> float:
    ordered = sorted(words, key=lambda w: (-len(w), w))
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, ordered)) + ")")
    return len(set(pattern.findall(text.lower()))) / len(words)


def _word_cover(words: list[str], text: str) -> float:
    pattern = re.compile(
        r"\b(?:" + "|".join(map(re.escape, sorted(words, key=lambda w: (-len(w), w)))) + r")\b"
    )
    return len(set(pattern.findall(text.lower()))) / len(words)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("alphabet", ["ascii", "accents", "some non-ascii", "many non-ascii"])
def test_the_scan_gives_the_per_text_numbers(seed: int, alphabet: str) -> None:
    texts = _texts(seed)
    if alphabet == "ascii":  # bytes
        texts = [t.encode("ascii", "ignore").decode() for t in texts]
    elif alphabet == "accents":  # one byte per character, lower-cased by a table
        texts = [t.replace("İ", "I").replace("Σ", "S") + " Ünïcödé ＫK" for t in texts]
    elif alphabet == "many non-ascii":  # more than 128 distinct: code points
        texts = [
            t + " " + "".join(chr(0x4E00 + (i * 7 + k) % 300) for k in range(5)) for i, t in enumerate(texts)
        ]
    scan = TextScan.of(texts)
    assert scan.words.tolist() == [len(t.split()) for t in texts]
    for words in (
        ["group", "groupi", "suppor"],
        ["ann", "anna", "annabel"],
        ["zürich", "café", "σοφια"],
        ["caroline_smith", "a_b", "x"],
        ["2022", "19٤٥"],
        ["groupingly"],
    ):
        expected = [_prefix_cover(words, t) for t in texts]
        assert scan.prefix_cover(words).tobytes() == np.asarray(expected).tobytes(), words
        expected = [_word_cover(words, t) for t in texts]
        assert scan.word_cover(words).tobytes() == np.asarray(expected).tobytes(), words
    four = re.compile(r"\b\w{4}\b")
    expected_runs = [
        (i, m.group()) for i, t in enumerate(texts) for m in four.finditer(t) if m.group()[0] in "12"
    ]
    assert scan.runs(4, "12") == expected_runs
    year = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
    expected_years = [(i, m.start(), int(m[0])) for i, t in enumerate(texts) for m in year.finditer(t)]
    assert scan.years() == expected_years


@pytest.mark.parametrize("seed", range(6))
def test_skipping_the_lowered_runs_pass_changes_nothing(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # TextScan.of reuses the original runs when lower-casing moves no run edge (_same_words);
    # the pass it skips gives the same runs
    from shared_core.recall import text_scan

    texts = [t.replace("İ", "I").replace("Σ", "S") + " Ünïcödé ＫK" for t in _texts(seed)]
    fast = TextScan.of(texts)
    monkeypatch.setattr(text_scan, "_same_words", lambda extra: False)
    slow = TextScan.of(texts)
    assert fast._run_keys is not None  # the one-byte path, where the pass is skipped
    for field in ("_run_start", "_run_length", "_run_keys", "_run_first", "words"):
        assert np.array_equal(getattr(fast, field), getattr(slow, field)), field


def test_no_character_changes_word_class_when_lowered() -> None:
    # why the lowered runs' pass is (today) always skipped; a new Unicode table may differ,
    # and TextScan.of then runs the pass (this test then fails, to tell)
    from shared_core.recall.text_scan import _is_word

    changed = [
        cp
        for cp in range(128, 0x110000)
        if not 0xD800 <= cp <= 0xDFFF
        and len(low := chr(cp).lower()) == 1
        and _is_word(chr(cp)) != _is_word(low)
    ]
    assert changed == []


def test_no_texts_and_empty_texts() -> None:
    assert TextScan.of([]).words.tolist() == []
    scan = TextScan.of(["", "", "a"])
    assert scan.words.tolist() == [0, 0, 1]
    assert scan.prefix_cover(["abc"]).tolist() == [0.0, 0.0, 0.0]
    assert scan.runs(4, "12") == []
    assert scan.years() == []


def test_which_representation() -> None:
    # bytes for ASCII and for few distinct other characters, code points beyond 128 of them
    assert TextScan.of(["plain"])._run_keys is not None
    assert TextScan.of(["café ’s"])._run_keys is not None
    assert TextScan.of(["ΣΟΦΙΑ"])._run_keys is None  # final sigma: lower case depends on context
    assert TextScan.of(["".join(chr(0x4E00 + k) + " " for k in range(200))])._run_keys is None
