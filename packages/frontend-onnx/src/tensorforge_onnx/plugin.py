"""Registers the ONNX frontend. ``onnx`` itself is imported only when a model is loaded."""

from __future__ import annotations

from tensorforge.plugins import Frontend, hookimpl


@hookimpl
def register_frontends(register):
    register(Frontend("onnx", (".onnx",), "tensorforge_onnx.frontend:load", "ONNX models"))
