"""LlamaIndex adapter for hindsight-retrievers.

>>> from hindsight_llamaindex import HindsightRetriever
"""

from hindsight_llamaindex.retriever import HindsightRecallEvent, HindsightRetriever

__all__ = ["HindsightRecallEvent", "HindsightRetriever"]
