"""The errors the VDLA target raises: every one a `TensorforgeError` that says what to change."""

from __future__ import annotations

from tensorforge.errors import TensorforgeError


class VDLAError(TensorforgeError):
    """Base class of the VDLA target's deliberate errors."""


class VDLAConfigError(VDLAError, ValueError):
    """A VDLA design parameter is out of range or inconsistent."""


class VDLAEncodingError(VDLAError, ValueError):
    """An instruction field does not fit its bits, or a word is not a valid instruction."""


class VDLACompileError(VDLAError):
    """The loop program cannot be turned into VDLA instructions (say which statement, why)."""


class VDLABufferOverflowError(VDLACompileError):
    """A tile needs more on-chip SRAM than the design has."""


class VDLASimError(VDLAError):
    """The simulator stopped: the program did something the hardware cannot do."""


class VDLASramRangeError(VDLASimError):
    """An instruction addressed a tile past the end of an SRAM (or DRAM)."""


class VDLAQueueOverflowError(VDLASimError):
    """A module pushed a token into a full dependency queue."""


class VDLADeadlockError(VDLASimError):
    """Every module with work left waits for a token that nobody will push."""


class VDLAHazardError(VDLASimError):
    """Two instructions of different modules touched the same SRAM tiles out of program
    order: a dependency token is missing."""
