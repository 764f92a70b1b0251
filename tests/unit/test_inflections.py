"""The irregular-inflection lexicon and the keyword arm's word groups (pure)."""

from __future__ import annotations

import re

import pytest

from shared_core.recall.arms.keyword import word_forms
from shared_core.recall.inflections import (
    IRREGULAR_PLURALS,
    IRREGULAR_VERBS,
    inflection_group,
    inflection_groups,
)


@pytest.mark.parametrize(
    ("word", "forms"),
    [
        ("go", {"went", "gone"}),
        ("went", {"go", "gone"}),
        ("buy", {"bought"}),
        ("meet", {"met"}),
        ("see", {"saw", "seen"}),
        ("took", {"take", "taken"}),
        ("leave", {"left"}),
        ("tell", {"told"}),
        ("child", {"children"}),
        ("people", {"person"}),
        ("learn", {"learnt", "learned"}),
    ],
)
def test_a_word_brings_its_irregular_forms(word: str, forms: set[str]) -> None:
    group = inflection_group(word)
    assert group[0] == word  # the query's own word first: it names the term
    assert forms <= set(group[1:])
    assert len(set(group)) == len(group)


@pytest.mark.parametrize("word", ["pottery", "workshop", "walk", "mara", ""])
def test_other_words_are_alone(word: str) -> None:
    assert inflection_group(word) == (word,)


@pytest.mark.parametrize("form", ["bit", "born", "bore", "rose", "wound", "ground", "lay", "lives", "laying"])
def test_forms_that_are_mostly_another_word_are_left_out(form: str) -> None:
    assert inflection_group(form) == (form,)


def test_every_form_is_in_one_group_and_is_a_lower_case_word() -> None:
    groups = (*IRREGULAR_VERBS, *IRREGULAR_PLURALS)
    forms = [f for g in groups for f in g]
    assert len(forms) == len(set(forms))
    assert all(re.fullmatch(r"[a-z]+", f) for f in forms)
    assert all(len(g) > 1 for g in groups)  # an entry adds a form the stemmer cannot reach
    assert 100 <= len(IRREGULAR_VERBS) <= 400


def test_words_of_one_group_make_one_group() -> None:
    assert inflection_groups(["saw", "mara", "see", "seen", "mara"]) == [
        ("saw", "see", "sees", "seeing", "seen"),
        ("mara",),
    ]


@pytest.mark.parametrize(
    ("word", "third", "ing"),
    [
        ("go", "goes", "going"),
        ("make", "makes", "making"),
        ("see", "sees", "seeing"),
        ("run", "runs", "running"),
        ("begin", "begins", "beginning"),
        ("fly", "flies", "flying"),
        ("buy", "buys", "buying"),
        ("teach", "teaches", "teaching"),
        ("sew", "sews", "sewing"),
        ("meet", "meets", "meeting"),
        ("feel", "feels", "feeling"),
    ],
)
def test_the_regular_forms_are_spelled_right(word: str, third: str, ing: str) -> None:
    group = inflection_group(word)
    assert group[1:3] == (third, ing)
    assert inflection_group(ing)[:2] == (ing, word)


def test_word_forms_number_the_groups() -> None:
    assert word_forms(["met", "bob"], inflections=True) == (
        ["met", "meet", "meets", "meeting", "bob"],
        [1, 1, 1, 1, 2],
    )
    assert word_forms(["met", "bob"], inflections=False) == (["met", "bob"], [1, 2])
    assert word_forms([], inflections=True) == ([], [])


def test_an_irregular_form_covers_the_questions_term() -> None:
    from shared_core.recall.learned import QuerySignals

    query = QuerySignals.from_query("When did Mara buy the car she drives?", None)
    assert sorted(query.terms) == ["buy", "car", "drives", "mara"]
    assert query.coverage("mara bought the car she drove") == query.coverage("mara buys the car she drives")
    blind = QuerySignals.from_query("When did Mara buy the car she drives?", None, inflections=False)
    assert (
        blind.coverage("mara bought the car she drove")[0]
        < query.coverage("mara bought the car she drove")[0]
    )


def test_a_short_form_covers_only_as_a_whole_word() -> None:
    from shared_core.recall.learned import QuerySignals

    query = QuerySignals.from_query("Where did Mara meet Ann?", None)
    assert query.coverage("mara met ann")[0] == 1.0
    assert query.coverage("mara, a metal worker")[0] == 1 / 3  # "mara" alone: "metal" is not "met"
