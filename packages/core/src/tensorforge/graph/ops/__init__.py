"""Built-in graph ops; importing a module registers its ops."""

from . import elementwise, nn, transform  # noqa: F401
