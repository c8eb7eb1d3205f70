"""The exceptions tensorforge raises on purpose.

Every error the project raises deliberately derives from :class:`TensorforgeError`, so a caller
(the ``tforge`` command in particular) can tell a clear user-facing failure from a bug.
"""

from __future__ import annotations

__all__ = ["DataCheckError", "DuplicateNameError", "PackageError", "PluginError", "TargetError",
           "TensorforgeError"]


class TensorforgeError(Exception):
    """Base class of every error tensorforge raises deliberately."""


class TargetError(TensorforgeError, ValueError):
    """A target string, target option or target tag is unknown or malformed."""


class PluginError(TensorforgeError):
    """A plugin failed to import, to validate or to register its descriptors."""


class DuplicateNameError(PluginError):
    """Two plugins registered something under the same name."""


class PackageError(TensorforgeError):
    """A `.tfpkg` package or an exported library cannot be loaded: corrupt, tampered with,
    inconsistent, of another format version, or built for a machine this one is not."""


class DataCheckError(TensorforgeError, ValueError):
    """The input data failed a check the operator makes (an index out of range, an integer
    division by zero), in a compiled kernel (`runtime.checks.KernelCheckError`) or in the
    numpy reference and the constant folder."""
