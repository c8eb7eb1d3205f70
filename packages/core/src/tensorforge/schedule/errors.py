"""Schedule errors: each names the stage and axis and says what to do."""

from __future__ import annotations

from ..errors import TensorforgeError


class ScheduleError(TensorforgeError, ValueError):
    """A schedule primitive was misused."""
