"""Importing a library whose native code logs to stderr while it loads: TensorFlow 2.21 prints
oneDNN and CPU-feature notes there whatever `TF_CPP_MIN_LOG_LEVEL` says, which `tforge compile
model.keras` would otherwise show. File descriptor 2 goes to /dev/null for the import only;
exceptions are raised as usual, and stderr is restored whatever happens."""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType


def import_quietly(name: str) -> ModuleType:
    """`importlib.import_module(name)` with the native loaders' stderr chatter discarded (and
    `TF_CPP_MIN_LOG_LEVEL=2` unless set, for what TensorFlow logs later)."""
    if name in sys.modules and sys.modules[name] is not None:
        return sys.modules[name]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr descriptor to silence
        return importlib.import_module(name)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        return importlib.import_module(name)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
