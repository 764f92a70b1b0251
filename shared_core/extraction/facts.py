"""Optional LLM fact extraction: turn raw texts into :class:`~shared_core.types.MemoryItem` facts.

Retain never calls an LLM on its own. A user who wants LLM-quality facts passes texts through a
:class:`FactExtractor` first and retains what it returns:

>>> from langchain_openai import ChatOpenAI                      # doctest: +SKIP
>>> extractor = LangChainFactExtractor(ChatOpenAI(model="gpt-4o-mini"))   # doctest: +SKIP
>>> items = extractor.extract_facts(
...     ["Caroline: my car broke down yesterday, so I missed the Google interview."],
...     mentioned_at=datetime.datetime(2023, 5, 8, 13, 56))    # doctest: +SKIP
>>> engine.retain(items, bank="demo")                           # doctest: +SKIP
['0196...', '0196...']

The model is asked (``with_structured_output(FactList)`` when it supports tool calling, a JSON
reply otherwise) for a list of self-contained facts, each with its entities, the absolute dates
it happened (``occurred_start`` / ``occurred_end``, resolved by the model against the
``mentioned_at`` given in the prompt) and causal relations to other facts of the same list, as
in Hindsight's extraction: ``{"target_fact_index": j, "relation_type": "caused_by"}`` on fact
``i`` means fact ``i`` was caused by fact ``j``. The reply is checked leniently:

* relations to an index out of range, to the fact itself, of an unknown type or malformed are
  dropped; so are facts without text (later indexes are renumbered);
* dates that do not parse are dropped; naive datetimes are UTC; a date-only value (``2023-05``,
  ``2023-05-07``) covers that whole period; an end before the start is dropped;
* unknown fact types become ``"world"``; an empty entity list leaves entity extraction to the
  engine (``entities=None``).

Only a reply that cannot be read at all (no JSON, no ``facts`` list) raises
:class:`FactExtractionError` (an :class:`~shared_core.errors.InvalidItemError` whose ``index`` is
the first text of the failing batch). Errors raised by the model itself propagate unchanged.

Causal references in the returned items are indexes into the returned list, which is what
``engine.retain`` expects, so the list must be retained as a whole (or re-indexed).
"""

from __future__ import annotations

import calendar
import datetime as _dt
import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from shared_core.errors import ConfigurationError, FactExtractionError
from shared_core.types import FactType, MemoryItem, as_utc

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage

__all__ = [
    "DEFAULT_FACT_BATCH_SIZE",
    "DEFAULT_PROMPT",
    "CausalRelation",
    "ExtractedFact",
    "FactExtractionError",
    "FactExtractor",
    "FactList",
    "LangChainFactExtractor",
    "facts_to_items",
]

_log = logging.getLogger(__name__)

RelationType = Literal["caused_by", "causes", "enables", "prevents"]
_RELATION_TYPES: Final[tuple[RelationType, ...]] = ("caused_by", "causes", "enables", "prevents")
_EXTRACTED_FACT_TYPES: Final[tuple[FactType, ...]] = ("world", "experience")

#: Texts sent to the model per call.
DEFAULT_FACT_BATCH_SIZE: Final = 8
#: Calls in flight at once (``Runnable.batch`` / ``abatch``).
DEFAULT_FACT_MAX_CONCURRENCY: Final = 4
_REPLY_EXCERPT: Final = 200

#: The system prompt. ``{mentioned_at}`` is replaced by the time the texts were written (or a
#: note that it is unknown); a custom prompt without the placeholder gets that time in the user
#: message instead. The user message lists the texts as ``[0] ...``, ``[1] ...``.
DEFAULT_PROMPT: Final = """\
You extract durable facts from texts for a long-term memory.

The texts were written at: {mentioned_at}.

Rules:
- Each fact is one self-contained statement in the third person that can be understood without \
the original text: replace pronouns with names, keep who, what, where, when and why.
- fact_type is "experience" for something the speaker or the assistant did, saw or felt, and \
"world" for everything else (facts about other people, places, the world).
- entities lists the people, organisations, places, products and events the fact names, as they \
are usually written (e.g. "Google", not "google inc").
- occurred_start / occurred_end give when the fact happened as absolute ISO 8601 dates \
(YYYY-MM-DD, or YYYY-MM / YYYY for a whole month or year, or a full date-time). Resolve \
relative expressions ("yesterday", "last spring", "two weeks ago") against the time the texts \
were written. Use null when the text gives no time; never invent one.
- causal_relations link a fact to another fact of this same list by its 0-based index: \
{"target_fact_index": 0, "relation_type": "caused_by"} on a fact means it was caused by fact 0. \
relation_type is one of "caused_by", "causes", "enables", "prevents". Only state causes the \
text states.
- source_index is the number of the text the fact comes from.
- Skip greetings, filler and questions that state nothing.

Reply with JSON only, in this shape:
{"facts": [{"text": "...", "fact_type": "world", "entities": ["..."], \
"occurred_start": "2023-05-07", "occurred_end": null, "source_index": 0, \
"causal_relations": [{"target_fact_index": 1, "relation_type": "caused_by"}]}]}
"""


# --- structured output --------------------------------------------------------------------------


class CausalRelation(BaseModel):
    """A causal link from the fact that holds it to another fact of the same list."""

    target_fact_index: int = Field(description="0-based index of the other fact in `facts`.")
    relation_type: RelationType = Field(
        description="caused_by: this fact was caused by the target; causes: this fact caused "
        "the target; enables / prevents: this fact enables / prevents the target."
    )


class ExtractedFact(BaseModel):
    """One self-contained fact."""

    text: str = Field(description="The fact as one self-contained third-person statement.")
    fact_type: Literal["world", "experience"] = Field(
        default="world", description="experience: something the speaker did or lived; world: anything else."
    )
    entities: list[str] = Field(
        default_factory=list, description="People, organisations, places, products named."
    )
    occurred_start: str | None = Field(
        default=None, description="When it started: absolute ISO 8601 date or null."
    )
    occurred_end: str | None = Field(
        default=None, description="When it ended: absolute ISO 8601 date or null."
    )
    causal_relations: list[CausalRelation] = Field(default_factory=list)
    source_index: int | None = Field(
        default=None, description="Number of the input text the fact comes from."
    )


class FactList(BaseModel):
    """Facts extracted from the numbered texts."""

    facts: list[ExtractedFact]


@runtime_checkable
class FactExtractor(Protocol):
    """Turns texts into facts ready for ``engine.retain``.

    Causal references in the returned items (``caused_by`` and the like) are indexes into the
    returned list.
    """

    def extract_facts(
        self, texts: Sequence[str], *, mentioned_at: _dt.datetime | None = None, context: str | None = None
    ) -> list[MemoryItem]: ...


# --- lenient conversion -------------------------------------------------------------------------


class _Unreadable(ValueError):
    """The reply has no readable facts; carries the reason (made into FactExtractionError)."""


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_YEAR = re.compile(r"\d{4}")
_MONTH = re.compile(r"(\d{4})-(\d{2})")


def _json_from_text(content: str) -> Any:
    """The JSON value in a model's reply: the whole reply, a fenced block, or the first object
    or array in it."""
    text = content.strip()
    candidates = [text, *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            pass
    decoder = json.JSONDecoder()
    for opener in "{[":
        start = text.find(opener)
        if start >= 0:
            try:
                return decoder.raw_decode(text, start)[0]
            except ValueError:
                pass
    raise _Unreadable("the model's reply has no JSON object")


def _message_text(message: Any) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p if isinstance(p, str) else p.get("text", "") if isinstance(p, Mapping) else "" for p in content
        ]
        return "".join(str(p) for p in parts)
    return str(content)


def _facts_payload(output: Any) -> list[Any]:
    if isinstance(output, BaseModel):
        output = output.model_dump()
    if isinstance(output, Mapping):
        facts = output.get("facts")
        if isinstance(facts, list):
            return facts
        raise _Unreadable("the model's reply has no 'facts' list")
    if isinstance(output, list):
        return output
    raise _Unreadable(f"the model's reply has no 'facts' list (got {type(output).__name__})")


def _end_of_day(day: _dt.date) -> _dt.datetime:
    return _dt.datetime.combine(day, _dt.time.max, tzinfo=_dt.UTC)


def _parse_when(value: Any) -> tuple[_dt.datetime, _dt.datetime] | None:
    """``(start, end)`` of the period an ISO value names; ``start == end`` for a date-time."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        if _YEAR.fullmatch(text):
            year = int(text)
            return (_dt.datetime(year, 1, 1, tzinfo=_dt.UTC), _end_of_day(_dt.date(year, 12, 31)))
        if month := _MONTH.fullmatch(text):
            year, mon = int(month.group(1)), int(month.group(2))
            last = calendar.monthrange(year, mon)[1]
            return (_dt.datetime(year, mon, 1, tzinfo=_dt.UTC), _end_of_day(_dt.date(year, mon, last)))
        if len(text) == 10:
            day = _dt.date.fromisoformat(text)
            return _dt.datetime.combine(day, _dt.time.min, tzinfo=_dt.UTC), _end_of_day(day)
        moment = as_utc(_dt.datetime.fromisoformat(text))
    except (ValueError, OverflowError, calendar.IllegalMonthError):
        return None
    return moment, moment


def _dates(raw: Mapping[str, Any]) -> tuple[_dt.datetime | None, _dt.datetime | None]:
    start_value, end_value = raw.get("occurred_start"), raw.get("occurred_end")
    start = _parse_when(start_value)
    end = _parse_when(end_value)
    if start_value is not None and start is None:
        _log.debug("dropping unreadable occurred_start %r", start_value)
    if end_value is not None and end is None:
        _log.debug("dropping unreadable occurred_end %r", end_value)
    if start is None:
        return None, None  # a lone end says too little to place the fact
    occurred_end: _dt.datetime | None = end[1] if end is not None else None
    if occurred_end is not None and occurred_end < start[0]:
        _log.debug("dropping occurred_end %r before occurred_start %r", end_value, start_value)
        occurred_end = None
    if occurred_end is None and start[1] != start[0]:
        occurred_end = start[1]
    return start[0], occurred_end


def _entities(value: Any) -> tuple[str, ...] | None:
    names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    seen: dict[str, str] = {}
    for name in names:
        if isinstance(name, str) and (clean := name.replace("\x00", "").strip()):
            seen.setdefault(clean.casefold(), clean)
    return tuple(seen.values()) or None


def _index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _convert(
    facts: list[Any],
    *,
    mentioned_at: _dt.datetime | None,
    context: str | None,
    text_indexes: Sequence[int],
    fact_offset: int,
) -> list[MemoryItem]:
    """Checked items from one reply's facts; indexes shifted by ``fact_offset``."""
    kept: list[Mapping[str, Any]] = []
    renumber: dict[int, int] = {}
    for i, raw in enumerate(facts):
        text = raw.get("text") if isinstance(raw, Mapping) else None
        if isinstance(raw, Mapping) and isinstance(text, str) and text.replace("\x00", "").strip():
            renumber[i] = len(kept)
            kept.append(raw)
        else:
            _log.debug("dropping fact %d without text: %r", i, raw)
    items: list[MemoryItem] = []
    for local, raw in enumerate(kept):
        refs: dict[RelationType, list[int]] = {kind: [] for kind in _RELATION_TYPES}
        relations = raw.get("causal_relations")
        for relation in relations if isinstance(relations, list) else []:
            kind = relation.get("relation_type") if isinstance(relation, Mapping) else None
            target = _index(relation.get("target_fact_index")) if isinstance(relation, Mapping) else None
            new_target = renumber.get(target) if target is not None else None
            if kind not in _RELATION_TYPES or new_target is None or new_target == local:
                _log.debug("dropping causal relation %r of fact %d", relation, local)
                continue
            targets = refs[kind]
            if fact_offset + new_target not in targets:
                targets.append(fact_offset + new_target)
        fact_type = raw.get("fact_type")
        fact_type = fact_type.strip().lower() if isinstance(fact_type, str) else fact_type
        source = _index(raw.get("source_index"))
        metadata: dict[str, Any] = {}
        if len(text_indexes) == 1:
            metadata["source_text_index"] = text_indexes[0]
        elif source is not None and 0 <= source < len(text_indexes):
            metadata["source_text_index"] = text_indexes[source]
        start, end = _dates(raw)
        items.append(
            MemoryItem(
                text=str(raw["text"]).replace("\x00", "").strip(),
                context=context,
                fact_type=fact_type if fact_type in _EXTRACTED_FACT_TYPES else "world",
                occurred_start=start,
                occurred_end=end,
                mentioned_at=mentioned_at,
                metadata=metadata,
                entities=_entities(raw.get("entities")),
                caused_by=tuple(refs["caused_by"]),
                causes=tuple(refs["causes"]),
                enables=tuple(refs["enables"]),
                prevents=tuple(refs["prevents"]),
            )
        )
    return items


def facts_to_items(
    facts: FactList | Mapping[str, Any] | Sequence[Any],
    *,
    mentioned_at: _dt.datetime | None = None,
    context: str | None = None,
) -> list[MemoryItem]:
    """Convert one extraction reply (a :class:`FactList`, its dict, or the bare list of facts)
    into checked :class:`MemoryItem` objects, as :class:`LangChainFactExtractor` does.

    >>> [i.caused_by for i in facts_to_items({"facts": [
    ...     {"text": "It rained."},
    ...     {"text": "The match was cancelled.",
    ...      "causal_relations": [{"target_fact_index": 0, "relation_type": "caused_by"},
    ...                           {"target_fact_index": 9, "relation_type": "caused_by"}]}]})]
    [(), (0,)]
    """
    try:
        payload = _facts_payload(
            list(facts) if isinstance(facts, Sequence) and not isinstance(facts, str) else facts
        )
    except _Unreadable as exc:
        raise FactExtractionError(0, str(exc)) from None
    return _convert(
        payload,
        mentioned_at=as_utc(mentioned_at) if mentioned_at else None,
        context=context,
        text_indexes=(),
        fact_offset=0,
    )


# --- the LangChain extractor --------------------------------------------------------------------


def _import_messages() -> tuple[type[BaseMessage], type[BaseMessage]]:
    try:
        from langchain_core.messages import HumanMessage, SystemMessage
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ConfigurationError(
            "LangChainFactExtractor needs langchain-core; install it with "
            "pip install 'hindsight-retrievers[langchain]'"
        ) from exc
    return SystemMessage, HumanMessage


class LangChainFactExtractor:
    """A :class:`FactExtractor` backed by any LangChain chat model.

    Models that implement tool calling are asked through
    ``chat_model.with_structured_output(FactList, include_raw=True)``; a reply that fails the
    strict schema is still read leniently from the raw tool call. Other models (or replies
    without a tool call) are read as JSON from the message content. ``batch_size`` texts go in
    one call; calls run ``max_concurrency`` at a time through ``Runnable.batch``.

    >>> extractor = LangChainFactExtractor(chat_model)                          # doctest: +SKIP
    >>> engine.retain(extractor.extract_facts(["..."], mentioned_at=said), bank="demo")
    ... # doctest: +SKIP
    """

    def __init__(
        self,
        chat_model: BaseChatModel,
        *,
        prompt: str = DEFAULT_PROMPT,
        batch_size: int = DEFAULT_FACT_BATCH_SIZE,
        max_concurrency: int = DEFAULT_FACT_MAX_CONCURRENCY,
    ) -> None:
        self._system_message, self._human_message = _import_messages()
        if not (
            callable(getattr(chat_model, "invoke", None))
            and callable(getattr(chat_model, "batch", None))
            and callable(getattr(chat_model, "abatch", None))
        ):
            raise ConfigurationError(
                f"LangChainFactExtractor expects a LangChain chat model, got {type(chat_model).__name__}"
            )
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ConfigurationError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not isinstance(max_concurrency, int) or isinstance(max_concurrency, bool) or max_concurrency < 1:
            raise ConfigurationError(f"max_concurrency must be a positive integer, got {max_concurrency!r}")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ConfigurationError("prompt must be a non-empty string")
        self.chat_model = chat_model
        self.prompt = prompt
        self.batch_size = batch_size
        self.max_concurrency = max_concurrency
        self._structured: Any = None
        try:
            self._structured = chat_model.with_structured_output(FactList, include_raw=True)
        except NotImplementedError:
            _log.debug("%s has no structured output; reading JSON replies", type(chat_model).__name__)

    def __repr__(self) -> str:
        return f"LangChainFactExtractor({type(self.chat_model).__name__}, batch_size={self.batch_size})"

    # ------------------------------------------------------------ requests
    def _batches(self, texts: Sequence[str]) -> list[list[tuple[int, str]]]:
        if isinstance(texts, str | bytes) or not isinstance(texts, Sequence):
            raise ConfigurationError(
                "extract_facts expects a sequence of texts; wrap a single text in a list"
            )
        kept: list[tuple[int, str]] = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ConfigurationError(f"texts[{i}] must be a string, got {type(text).__name__}")
            if text.strip():
                kept.append((i, text))
        return [kept[i : i + self.batch_size] for i in range(0, len(kept), self.batch_size)]

    def _messages(
        self, batch: Sequence[tuple[int, str]], mentioned_at: _dt.datetime | None, context: str | None
    ) -> list[BaseMessage]:
        when = (
            f"{mentioned_at.isoformat()} ({mentioned_at:%A})"
            if mentioned_at is not None
            else "unknown (give dates only where the text states them absolutely)"
        )
        system = self.prompt.replace("{mentioned_at}", when)
        lines: list[str] = []
        if "{mentioned_at}" not in self.prompt:
            lines.append(f"The texts were written at: {when}.")
        if context:
            lines.append(f"Context: {context}")
        lines.append("Texts:")
        lines.extend(f"[{local}] {text}" for local, (_, text) in enumerate(batch))
        return [self._system_message(content=system), self._human_message(content="\n".join(lines))]

    # ------------------------------------------------------------ replies
    def _read(self, reply: Any) -> list[Any]:
        """The facts list of one reply (structured or plain)."""
        if self._structured is None:
            return _facts_payload(_json_from_text(_message_text(reply)))
        if not (isinstance(reply, Mapping) and "raw" in reply):
            return _facts_payload(reply)  # an implementation that ignores include_raw
        parsed, raw = reply.get("parsed"), reply.get("raw")
        if parsed is not None:
            return _facts_payload(parsed)
        for call in getattr(raw, "tool_calls", None) or []:
            args = call.get("args") if isinstance(call, Mapping) else None
            if isinstance(args, Mapping):
                return _facts_payload(args)
        for call in getattr(raw, "invalid_tool_calls", None) or []:
            args = call.get("args") if isinstance(call, Mapping) else None
            if isinstance(args, str):
                try:
                    return _facts_payload(_json_from_text(args))
                except _Unreadable:
                    continue
        return _facts_payload(_json_from_text(_message_text(raw)))

    def _collect(
        self,
        batches: Sequence[Sequence[tuple[int, str]]],
        replies: Sequence[Any],
        mentioned_at: _dt.datetime | None,
        context: str | None,
    ) -> list[MemoryItem]:
        items: list[MemoryItem] = []
        for batch, reply in zip(batches, replies, strict=True):
            if isinstance(reply, BaseException):
                raise reply
            try:
                facts = self._read(reply)
            except _Unreadable as exc:
                raw = reply.get("raw") if isinstance(reply, Mapping) else reply
                raise FactExtractionError(batch[0][0], str(exc), _message_text(raw)) from None
            items.extend(
                _convert(
                    facts,
                    mentioned_at=mentioned_at,
                    context=context,
                    text_indexes=[i for i, _ in batch],
                    fact_offset=len(items),
                )
            )
        return items

    def _runnable(self) -> Any:
        return self._structured if self._structured is not None else self.chat_model

    # ------------------------------------------------------------ API
    def extract_facts(
        self, texts: Sequence[str], *, mentioned_at: _dt.datetime | None = None, context: str | None = None
    ) -> list[MemoryItem]:
        """Facts in ``texts`` as :class:`MemoryItem` objects, in text order; causal references
        are indexes into the returned list. Blank texts are skipped.

        Raises :class:`FactExtractionError` when a reply cannot be read.
        """
        batches = self._batches(texts)
        if not batches:
            return []
        when = as_utc(mentioned_at) if mentioned_at is not None else None
        inputs = [self._messages(batch, when, context) for batch in batches]
        replies = self._runnable().batch(
            inputs, config={"max_concurrency": self.max_concurrency}, return_exceptions=True
        )
        return self._collect(batches, replies, when, context)

    async def aextract_facts(
        self, texts: Sequence[str], *, mentioned_at: _dt.datetime | None = None, context: str | None = None
    ) -> list[MemoryItem]:
        """Async twin of :meth:`extract_facts`."""
        batches = self._batches(texts)
        if not batches:
            return []
        when = as_utc(mentioned_at) if mentioned_at is not None else None
        inputs = [self._messages(batch, when, context) for batch in batches]
        replies = await self._runnable().abatch(
            inputs, config={"max_concurrency": self.max_concurrency}, return_exceptions=True
        )
        return self._collect(batches, replies, when, context)
