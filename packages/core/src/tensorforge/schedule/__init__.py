"""Schedules: how each stage's loops are split, ordered, annotated and placed."""

from .errors import ScheduleError
from .relations import Fuse, Rebase, Split
from .schedule import Schedule, create_schedule
from .stage import IterAttr, Stage

__all__ = ["Schedule", "Stage", "IterAttr", "Split", "Fuse", "Rebase", "ScheduleError",
           "create_schedule"]
