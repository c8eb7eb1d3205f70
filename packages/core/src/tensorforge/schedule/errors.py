"""Schedule errors: each names the stage and axis and says what to do."""

from __future__ import annotations

try:
    from ..errors import TensorforgeError
except ImportError:  # pragma: no cover - errors.py arrives with the plugin frame
    class TensorforgeError(Exception):  # type: ignore[no-redef]
        pass


class ScheduleError(TensorforgeError, ValueError):
    """A schedule primitive was misused."""
