"""SMMA context engine: sections, dashboard, ids, tape, memory system calls, safety net."""

from rumi.context.compaction import CompactionResult
from rumi.context.engine import CompactionHook, ContextEngine
from rumi.context.prompt import RecallProvider
from rumi.context.tokens import TokenCounter

__all__ = ["CompactionHook", "CompactionResult", "ContextEngine", "RecallProvider",
           "TokenCounter"]
