"""The exceptions tensorforge raises on purpose.

Every error the project raises deliberately derives from :class:`TensorforgeError`, so a caller
(the ``tforge`` command in particular) can tell a clear user-facing failure from a bug.
"""

from __future__ import annotations

__all__ = ["TensorforgeError", "TargetError", "PluginError", "DuplicateNameError"]


class TensorforgeError(Exception):
    """Base class of every error tensorforge raises deliberately."""


class TargetError(TensorforgeError, ValueError):
    """A target string, target option or target tag is unknown or malformed."""


class PluginError(TensorforgeError):
    """A plugin failed to import, to validate or to register its descriptors."""


class DuplicateNameError(PluginError):
    """Two plugins registered something under the same name."""
