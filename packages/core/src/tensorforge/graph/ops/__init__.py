"""Built-in graph ops; importing a module registers its ops."""

from . import (  # noqa: F401
    activation,
    conv_transpose,
    data,
    einsum,
    elementwise,
    indexing,
    index,
    loss,
    math_ext,
    narrow,
    nchwc,
    nn,
    pool,
    quantize,
    reduce,
    resize,
    sampling,
    select,
    shape,
    transform,
)
