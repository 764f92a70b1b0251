"""The years a text writes plus those its offsets imply (shared_core/recall/text_years.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared_core.recall.text_years import offsets, told_years, written_years
from tests.unit.offset_pieces import OFFSET_PIECES

CASES = [
    # (text, told years) -- offsets anchored on the year before them
    ("He joined Ajax in 2003 and three years later moved to Inter.", [2003, 2006]),
    ("In 2003, he signed for Elsby. Three years later he moved on to Cardow.", [2003, 2006]),
    ("In 2003 he joined. 3 years later he left.", [2003, 2006]),
    ("She joined in 2001. A year later she left.", [2001, 2002]),
    ("She joined in 2001 and an year after that she left.", [2001, 2002]),
    ("In 2000 he moved. Twenty years later he returned.", [2000, 2020]),
    ("He left in 2010; two years earlier he had won the cup.", [2010, 2008]),
    ("He retired in 2010. Four years before, he had moved.", [2010, 2006]),
    ("He joined ahead of the 2004–05 season. The following season he left.", [2004, 2005]),
    ("He joined in 1999. The next year he won the cup.", [1999, 2000]),
    ("He won the cup in 1999, having been relegated the previous season.", [1999, 1998]),
    ("She won in 1999; the preceding year she had lost the final.", [1999, 1998]),
    ("The club was rebuilt in 1950. A decade later it closed.", [1950, 1960]),
    ("The club was rebuilt in 1950. Two decades later it closed.", [1950, 1970]),
    ("The club was rebuilt in 1950. Two seasons later it closed.", [1950, 1952]),
    # offsets chain: an implied year anchors the next offset
    ("In 2003 he joined. Three years later he left; the following season he retired.", [2003, 2006, 2007]),
    # the nearest year before the offset is its anchor
    ("Born in 1970, he joined in 1990 and won in 1995. Two years later he left.", [1970, 1990, 1995, 1997]),
    # negatives: no offset phrase, or no year to anchor it
    ("He was three years old in 1975.", [1975]),
    ("Years later he returned to 1999's team.", [1999]),
    ("Three years later he moved to Inter.", []),
    ("He played for three years before retiring in 2008.", [2008]),
    ("In 2005 he spent a year on loan at Rovers.", [2005]),
    ("He scored 20 goals.", []),
    ("Three years later, in 2009, he left.", [2009]),  # the offset comes before the year
    # an aside's year anchors nothing
    ("Varga (born 1970) signed later. Three years later he left.", [1970]),
    ("Varga, born 1970, signed for Ajax. Three years later he left.", [1970]),
    ("Arnholt, founded in 1901, signed him. The next year he left.", [1901]),
    ("He signed for Ajax (1998–2002). Three years later he moved.", [1998, 2002]),
    ("He joined in 1990. Arnholt, founded in 1901, signed him three years later.", [1990, 1901, 1993]),
    # a quotation is its own timeline
    ('He said: "I came in 1980 and a year later I stayed." Two years later he left.', [1980, 1981]),
    ('In 1990 he said: "A year later we won." Two years later he left.', [1990, 1992]),
    ("In 1990 he said: “I left in 1970. Two years later I was back.”", [1990, 1970, 1972]),
]


@pytest.mark.parametrize(("text", "years"), CASES)
def test_told_years(text: str, years: list[int]) -> None:
    assert told_years(text) == years


@pytest.mark.parametrize("text", [t for t, _ in CASES])
def test_every_written_year_is_kept(text: str) -> None:
    told = told_years(text)
    for year in written_years(text):
        assert year in told


_CHAT = st.lists(st.sampled_from(OFFSET_PIECES), max_size=40).map("".join)


@given(_CHAT)
def test_without_an_offset_phrase_the_written_years_come_back(text: str) -> None:
    if not offsets(text):
        assert told_years(text) == written_years(text)
    else:
        told = told_years(text)
        assert all(year in told for year in written_years(text))


@given(
    st.lists(
        st.sampled_from([*OFFSET_PIECES, "_", "x", "12003", "1499", "2100", "é", "٣", "2٠", "1٥"]),
        max_size=40,
    ).map("".join)
)
def test_the_fast_year_scan_finds_what_the_year_regex_finds(text: str) -> None:
    from shared_core.recall.text_years import _written_at

    assert [year for _, year in _written_at(text)] == written_years(text)
