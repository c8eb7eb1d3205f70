"""From a Schedule to loop IR: inline expansion, bound inference, loop-nest generation."""

from .schedule_ops import schedule_to_primfunc

__all__ = ["schedule_to_primfunc"]
