"""Tuning tasks: one per distinct workload (template, arguments, target), with a weight."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .space import ConfigEntity, ConfigSpace
from .template import Template, get_template

__all__ = ["Task"]


def _freeze(x: Any) -> Any:
    return tuple(_freeze(v) for v in x) if isinstance(x, (list, tuple)) else x


class Task:
    """A template applied to one workload on one target.

    ``args`` must be JSON values (ints, floats, strings, nested lists: shapes, dtypes,
    layouts). ``key`` is stable across processes and runs: a hash of template, args and
    target string. ``weight`` says how often the workload appears (e.g. in a model).
    """

    def __init__(self, template: str, args: tuple | list, target: Any = "llvm",
                 weight: float = 1.0, module: str | None = None):
        self.template_name = template
        self.args = _freeze(args)
        self.target_str = str(target)
        self.weight = weight
        self._module = module
        self._space: ConfigSpace | None = None

    # identity ------------------------------------------------------------------------------
    @property
    def workload(self) -> list[Any]:
        return [self.template_name, list(self.args)]

    @property
    def key(self) -> str:
        blob = json.dumps([self.workload, self.target_str], sort_keys=True)
        return hashlib.sha1(blob.encode()).hexdigest()[:20]

    @property
    def name(self) -> str:
        return f"{self.template_name}{list(self.args)}"

    @property
    def template(self) -> Template:
        return get_template(self.template_name, self._module)

    @property
    def module(self) -> str:
        return self._module or self.template.module

    @property
    def target(self) -> Any:
        from ..target import Target

        return Target.coerce(self.target_str)

    # the space -----------------------------------------------------------------------------
    @property
    def config_space(self) -> ConfigSpace:
        if self._space is None:
            self._space = self.template.space(self.args, self.target)
        return self._space

    @property
    def flop(self) -> float:
        return self.config_space.flop

    def config(self, index: int) -> ConfigEntity:
        return self.config_space.get(index)

    def instantiate(self, config: int | ConfigEntity | None = None) -> tuple[Any, list]:
        """``(schedule, args)`` for a config (an index, an entity, or None for the default)."""
        if config is None:
            return self.template.instantiate(ConfigSpace(self.target), self.args)
        if isinstance(config, int):
            config = self.config(config)
        return self.template.instantiate(config, self.args)

    # serialization -------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"template": self.template_name, "args": list(self.args),
                "target": self.target_str, "weight": self.weight, "module": self.module}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Task:
        return cls(data["template"], data["args"], data["target"], data.get("weight", 1.0),
                   data.get("module"))

    def __getstate__(self) -> dict[str, Any]:
        return self.to_json()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["template"], state["args"], state["target"],  # type: ignore[misc]
                      state["weight"], state["module"])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Task) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Task({self.name}, target={self.target_str!r}, key={self.key})"
