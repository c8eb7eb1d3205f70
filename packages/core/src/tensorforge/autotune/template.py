"""Tunable schedule templates: ``@template("matmul_packed.llvm")`` registers a function
``(cfg, *workload) -> (schedule, args)`` that declares its knobs on ``cfg`` (see ``space.py``).

Templates are found by name. A worker process that has not imported the module defining a
template imports it from the template's ``module`` (stored with every task), so templates
defined anywhere importable work in measurement workers too. Core's own templates live beside
what they schedule (``ops/templates_cpu.py``, ``ops/templates_gpu.py``, the fused groups'
``compiler/group_tasks.py``): the package root lists them (``tensorforge.TEMPLATE_MODULES``)
so that this layer, below them, names none. A stored module that no longer exists (records
written before a template moved) falls back to those.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import TEMPLATE_MODULES
from .space import ConfigEntity, ConfigSpace

__all__ = ["Template", "get_template", "list_templates", "template"]

_TEMPLATES: dict[str, Template] = {}


@dataclass(frozen=True)
class Template:
    """A registered template: its name, function and defining module."""

    name: str
    func: Callable[..., tuple[Any, list]]
    module: str

    def space(self, args: tuple, target: Any = None) -> ConfigSpace:
        """The config space for a workload (running the template once, with defaults)."""
        space = ConfigSpace(target)
        self.func(space, *args)
        return space

    def instantiate(self, cfg: ConfigSpace | ConfigEntity, args: tuple) -> tuple[Any, list]:
        return self.func(cfg, *args)


def template(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``func(cfg, *workload) -> (schedule, args)`` under ``name``."""

    def deco(func: Callable[..., Any]) -> Callable[..., Any]:
        old = _TEMPLATES.get(name)
        if old is not None and (old.module, old.func.__qualname__) != (
                func.__module__, func.__qualname__):
            raise ValueError(f"template {name!r} is registered twice ({old.module} and "
                             f"{func.__module__})")
        _TEMPLATES[name] = Template(name, func, func.__module__)
        return func

    return deco


def get_template(name: str, module: str | None = None) -> Template:
    """The template called ``name``, importing ``module`` (or the built-ins) if needed."""
    if name not in _TEMPLATES:
        for mod in ((module,) if module else ()) + TEMPLATE_MODULES:
            try:
                importlib.import_module(mod)
            except ModuleNotFoundError as e:
                if mod != module or not _missing(e, mod):
                    raise  # a module that exists but fails to import: say why
                continue  # a stale stored module: the template moved, find it by name
            if name in _TEMPLATES:
                break
    try:
        return _TEMPLATES[name]
    except KeyError:
        known = ", ".join(sorted(_TEMPLATES)) or "none"
        raise KeyError(f"no tuning template {name!r} (known: {known})") from None


def _missing(error: ModuleNotFoundError, module: str) -> bool:
    """Whether ``error`` says ``module`` itself (or a package above it) does not exist."""
    return error.name is not None and (module == error.name or
                                       module.startswith(error.name + "."))


def list_templates() -> list[str]:
    for mod in TEMPLATE_MODULES:
        importlib.import_module(mod)
    return sorted(_TEMPLATES)
