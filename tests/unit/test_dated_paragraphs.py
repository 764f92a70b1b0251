"""The generated dated-paragraph set: deterministic, well-formed, and answerable by date only."""

from __future__ import annotations

import re
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import dated_paragraphs as D  # noqa: E402


def test_same_text_every_time() -> None:
    a, b = D.build_dataset("dated"), D.build_dataset("dated")
    assert [t.text for c in a for t in c.turns] == [t.text for c in b for t in c.turns]
    assert [q.question for c in a for q in c.questions] == [q.question for c in b for q in c.questions]


def test_every_question_has_one_existing_paragraph_as_evidence() -> None:
    for conv in D.build_dataset("dated"):
        ids = {t.dia_id for t in conv.turns}
        assert len(ids) == len(conv.turns)
        for q in conv.questions:
            assert len(q.evidence) == 1 and q.evidence[0] in ids
            assert q.category in D.CATEGORIES


def test_year_questions_name_a_year_the_person_had_several_stints_around() -> None:
    conv = D.build_dataset("dated")[0]
    text = {t.dia_id: t.text for t in conv.turns}
    year_questions = [q for q in conv.questions if q.category == 1]
    assert len(year_questions) > 50
    for q in year_questions:
        year = int(re.findall(r"\b(1[89]\d\d|20\d\d)\b", q.question)[-1])
        person = q.evidence[0].rsplit(":", 1)[0]
        # the person has other dated paragraphs: the name alone cannot answer the question
        siblings = [k for k in text if k.startswith(person + ":stint")]
        assert len(siblings) >= 2
        years = [int(y) for y in re.findall(r"\b(1[89]\d\d|20\d\d)\b", text[q.evidence[0]])]
        assert min(years) < year < max(years) + 1


def test_no_locomo_text() -> None:
    words = " ".join(t.text for c in D.build_dataset("dated") for t in c.turns)
    assert 'said, "' not in words  # LoCoMo's memory format


def test_hard_set_adds_same_entity_distractors_in_other_years_and_longer_paragraphs() -> None:
    plain, hard = D.build_dataset("dated"), D.build_dataset("dated-hard")
    assert sum(len(c.turns) for c in hard) > 1.5 * sum(len(c.turns) for c in plain)
    stints = [t.text for c in hard for t in c.turns if t.dia_id.split(":")[-1].startswith("stint")]
    stints = [t for t in stints if "-other" not in t]
    plain_stints = [t.text for c in plain for t in c.turns if ":stint" in t.dia_id]
    assert sum(len(t.split()) for t in stints) / len(stints) > sum(
        len(t.split()) for t in plain_stints
    ) / len(plain_stints)
    conv = hard[0]
    text = {t.dia_id: t.text for t in conv.turns}
    others = [k for k in text if k.endswith("-other")]
    assert len(others) > 40
    for key in others:
        stint = text[key.removesuffix("-other")]
        org_years = [int(y) for y in re.findall(r"\b(1[89]\d\d|20\d\d)\b", stint)]
        year = int(re.findall(r"\b(1[89]\d\d|20\d\d)\b", text[key])[0])
        # same person, same organisation, a year outside the stint
        name = text[key.rsplit(":", 1)[0] + ":intro"].split(" (born")[0]
        assert name in text[key] and name in stint
        assert not min(org_years) <= year <= max(org_years)
    for q in conv.questions:
        assert len(q.evidence) == 1 and not q.evidence[0].endswith("-other")


def test_when_notes_is_deterministic_and_asks_when_only() -> None:
    a, b = D.build_dataset("when-notes"), D.build_dataset("when-notes")
    assert [t.text for c in a for t in c.turns] == [t.text for c in b for t in c.turns]
    assert [q.question for c in a for q in c.questions] == [q.question for c in b for q in c.questions]
    for conv in a:
        ids = {t.dia_id for t in conv.turns}
        assert len(ids) == len(conv.turns)
        for q in conv.questions:
            assert q.category == 5 and D.CATEGORIES[q.category] == "when"
            assert q.question.startswith("When did ") and len(q.evidence) == 1 and q.evidence[0] in ids
    assert 'said, "' not in " ".join(t.text for c in a for t in c.turns)  # not LoCoMo's form


def test_when_notes_evidence_states_a_time_and_its_distractors_do_not() -> None:
    from shared_core.extraction.dates import default_date_parser

    parser = default_date_parser()
    conv = D.build_dataset("when-notes")[0]
    by_id = {t.dia_id: t for t in conv.turns}
    for q in conv.questions[:10]:
        gold = by_id[q.evidence[0]]
        name = q.question.removeprefix("When did ").split()[:2]
        assert " ".join(name) in gold.text
        assert parser.event_window(gold.text, gold.mentioned_at) is not None
        # the same person's notes about the same thing that say no time: hard negatives
        undated = [t for k, t in by_id.items() if k.startswith(q.evidence[0] + ":u")]
        assert undated and all(" ".join(name) in t.text for t in undated)
        assert all(parser.event_window(t.text, t.mentioned_at) is None for t in undated)


def _sentences(name: str) -> set[str]:
    return {
        s.strip() for c in D.build_dataset(name) for t in c.turns for s in re.split(r"(?<=\.)\s+", t.text)
    }


def test_prose_train_is_deterministic_and_well_formed() -> None:
    a, b = D.build_dataset("dated-prose-train"), D.build_dataset("dated-prose-train")
    assert [t.text for c in a for t in c.turns] == [t.text for c in b for t in c.turns]
    for conv in a:
        ids = {t.dia_id for t in conv.turns}
        assert len(ids) == len(conv.turns)
        for q in conv.questions:
            assert len(q.evidence) == 1 and q.evidence[0] in ids
            assert q.category in {1, 3, 4}


def test_prose_train_tells_stints_by_offsets_and_leads_span_the_career() -> None:
    """What dated-train lacks: evidence telling its stint by an offset from an earlier year
    (told_years reads more years than the text writes), and a lead whose range brackets every
    year asked about the person without being the evidence of any."""
    from shared_core.recall.text_years import told_years, written_years

    by_offset = 0
    year_questions = [q for c in D.build_dataset("dated-prose-train") for q in c.questions if q.category == 1]
    text = {t.dia_id: t.text for c in D.build_dataset("dated-prose-train") for t in c.turns}
    assert len(year_questions) > 200
    for q in year_questions:
        year = int(re.findall(r"\b(1[89]\d\d|20\d\d)\b", q.question)[-1])
        gold = text[q.evidence[0]]
        assert min(told_years(gold)) < year  # its stint starts before the asked year
        by_offset += year in told_years(gold) and year not in written_years(gold)
        lead = text[q.evidence[0].rsplit(":", 1)[0] + ":lead"]
        lead_years = sorted(written_years(lead))
        assert lead_years[-2] < year < lead_years[-1] + 1 and q.evidence[0] != lead
    assert by_offset > 20  # the asked year told only by an offset


def test_prose_train_shares_no_sentence_with_the_wiki_sets() -> None:
    """The wiki sets score what training on this set learns: no sentence of theirs is in it."""
    assert not _sentences("dated-prose-train") & (_sentences("wiki-dev") | _sentences("wiki-test"))
