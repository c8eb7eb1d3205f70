"""The errors the ONNX frontend raises on purpose; each says what to do about it."""

from __future__ import annotations

from tensorforge.errors import TensorforgeError


class OnnxImportError(TensorforgeError):
    """Base class: the model could not be imported."""


class ModelFileError(OnnxImportError, ValueError):
    """The file is missing, empty, truncated or not an ONNX model."""


class UnsupportedOpError(OnnxImportError, NotImplementedError):
    """The model uses ops (or op versions) the frontend does not convert."""


class UnsupportedAttributeError(OnnxImportError, NotImplementedError):
    """An op uses an attribute value or an input form the frontend does not handle."""


class DynamicShapeError(OnnxImportError, ValueError):
    """A shape is not static after import (a symbolic dim without `input_shapes`, or a shape
    that depends on runtime data). `value_name` names the ONNX value needed at import."""

    def __init__(self, message: str, value_name: str | None = None):
        super().__init__(message)
        self.value_name = value_name


class InvalidModelError(OnnxImportError, ValueError):
    """The model is not valid ONNX: a cycle, a value nobody produces or two producers of one
    value, a node that does not match its op's schema, types that do not check, initializer
    data that does not fit its dims, an opset or IR version newer than supported."""
