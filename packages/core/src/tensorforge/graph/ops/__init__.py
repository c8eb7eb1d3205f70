"""Built-in graph ops; importing a module registers its ops."""

from . import (  # noqa: F401
    activation,
    attention,
    conv_transpose,
    elementwise,
    indexing,
    nchwc,
    nn,
    reduce,
    resize,
    shape,
    transform,
)
