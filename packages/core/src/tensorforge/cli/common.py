"""What the ``tforge`` subcommands share: the plugin registry, a detail line's wrapping, the
``--input-shape`` and ``--model-format`` options."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from tensorforge.errors import TensorforgeError
from tensorforge.text import wrap


def _registry():
    from tensorforge.plugins import get_registry

    return get_registry()


def _wrap(text: str) -> str:
    return wrap(text, 100, "    ", "      ")


def _shapes(items: Sequence[str] | None) -> dict[str, tuple[int, ...]] | None:
    """`name=1,3,224,224` options as {name: shape}."""
    if not items:
        return None
    out = {}
    for item in items:
        name, sep, dims = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name] = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            raise TensorforgeError(f"--input-shape {item!r}: write NAME=D0,D1,... (e.g. "
                                   "input=1,3,224,224)") from None
    return out


MODEL_HELP = ("model file (its suffix picks the frontend: .onnx, .pb, .keras, .h5) or "
              "SavedModel directory")


def add_model_format(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model-format", metavar="NAME",
                   help="the frontend that reads MODEL (onnx, tensorflow, ...) when its suffix "
                   "does not say")

