"""Targets as values: :class:`Target`, :class:`TargetKind` and its option schema."""

from tensorforge.target.kind import TargetKind, TargetOption
from tensorforge.target.target import Target

__all__ = ["Target", "TargetKind", "TargetOption"]
