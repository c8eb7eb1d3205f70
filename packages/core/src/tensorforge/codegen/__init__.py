"""Source code generation for C-like GPU languages: one printer, one dialect table per
language (`dialect.py`), a feature pre-scan for preambles, legalization passes, and
`build_gpu`, the build step every C-like GPU target shares."""

from .c_printer import CodegenError, CPrinter
from .dialect import BASE_MATH, BASE_TYPES, Capabilities, Dialect, Scope, SyncKind, ThreadAxis
from .features import Features, scan

__all__ = ["BASE_MATH", "BASE_TYPES", "CPrinter", "Capabilities", "CodegenError", "Dialect",
           "Features", "Scope", "SyncKind", "ThreadAxis", "scan"]
