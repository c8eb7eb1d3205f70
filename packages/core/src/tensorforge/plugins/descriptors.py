"""Descriptors: what a plugin hands to ``register``.

Each descriptor is a small frozen dataclass that validates itself on construction. Code is
referenced as a ``"module:attr"`` string and imported on first use with :func:`load_ref`, so
discovering a plugin never imports its heavy dependencies. ``distribution`` and ``plugin`` are
filled in by the loader; a plugin leaves them empty.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from tensorforge.errors import PluginError

__all__ = [
    "PASS_STAGES",
    "CostModel",
    "Frontend",
    "Intrinsic",
    "Pass",
    "Strategy",
    "TargetTag",
    "Tuner",
    "check_name",
    "check_ref",
    "load_ref",
]

#: The pipeline stages at which ``register_passes`` is asked for passes.
PASS_STAGES = ("graph.before_fusion", "graph.layout", "graph.after_fusion", "tir.after_lower",
               "tir.after_flatten", "tir.before_codegen")

_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./+-]*$")


def check_ref(ref: str, what: str) -> None:
    """Raise ``ValueError`` unless ``ref`` looks like ``"package.module:attr"``."""
    if not isinstance(ref, str) or not _REF.match(ref):
        raise ValueError(f"{what} must be a 'module:attr' string, got {ref!r}")


def check_name(name: str, what: str) -> None:
    """Raise ``ValueError`` unless ``name`` is a non-empty identifier-like name."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{what} name must be a word (letters, digits, _./+-), got {name!r}")


def load_ref(ref: str) -> Any:
    """Import ``"module:attr"`` (``attr`` may be dotted) and return the object."""
    check_ref(ref, "reference")
    module_name, _, attr = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise PluginError(f"cannot load {ref!r}: {type(exc).__name__}: {exc}") from exc
    return obj


@dataclass(frozen=True)
class TargetTag:
    """A named target preset, e.g. ``TargetTag("amd/zen3", "llvm -mcpu=znver3")``."""

    name: str
    config: str
    description: str = ""
    distribution: str = ""
    plugin: str = ""

    def __post_init__(self) -> None:
        check_name(self.name, "target tag")
        if not isinstance(self.config, str) or not self.config.strip():
            raise ValueError(f"target tag {self.name!r} needs a target string as config")


@dataclass(frozen=True)
class Frontend:
    """A model importer: ``load(model, **options) -> tensorforge.graph.Graph``.

    It reads files whose name ends with one of ``suffixes``, directories that hold one of
    ``directory_markers`` (``("saved_model.pb",)``: a TensorFlow SavedModel), and in-memory
    model objects whose class (or a base class) comes from one of ``object_modules`` (the
    root package of ``type(model).__module__``, e.g. ``("keras", "tensorflow")``)."""

    name: str
    suffixes: tuple[str, ...]
    load: str
    description: str = ""
    distribution: str = ""
    plugin: str = ""
    object_modules: tuple[str, ...] = ()
    directory_markers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_name(self.name, "frontend")
        check_ref(self.load, f"frontend {self.name!r} load")
        if isinstance(self.suffixes, str) or not all(s.startswith(".") for s in self.suffixes):
            raise ValueError(f"frontend {self.name!r} suffixes must be a tuple like ('.onnx',)")
        for field_name, example in (("object_modules", "('keras',)"),
                                    ("directory_markers", "('saved_model.pb',)")):
            value = getattr(self, field_name)
            if isinstance(value, str) or not all(isinstance(v, str) and v and "/" not in v
                                                 for v in value):
                raise ValueError(f"frontend {self.name!r} {field_name} must be a tuple of "
                                 f"names like {example}")

    def reads_object(self, model: Any) -> bool:
        """Whether ``model``'s class or one of its bases comes from ``object_modules``."""
        roots = {getattr(c, "__module__", "").partition(".")[0] for c in type(model).__mro__}
        return bool(roots & set(self.object_modules))

    def reads_directory(self, path: str) -> bool:
        """Whether the directory ``path`` holds one of ``directory_markers``."""
        return any(os.path.isfile(os.path.join(path, m)) for m in self.directory_markers)

    def load_loader(self) -> Any:
        return load_ref(self.load)


@dataclass(frozen=True)
class _Factory:
    """A named ``"module:attr"`` factory (cost models, tuners)."""

    name: str
    factory: str
    description: str = ""
    distribution: str = ""
    plugin: str = ""

    KIND: ClassVar[str] = "factory"

    def __post_init__(self) -> None:
        check_name(self.name, self.KIND)
        check_ref(self.factory, f"{self.KIND} {self.name!r} factory")

    def load_factory(self) -> Any:
        return load_ref(self.factory)


@dataclass(frozen=True)
class CostModel(_Factory):
    """A cost model for the tuner; ``factory(**options)`` returns the model object."""

    KIND: ClassVar[str] = "cost model"


@dataclass(frozen=True)
class Tuner(_Factory):
    """A search strategy; ``factory(task, **options)`` returns the tuner object."""

    KIND: ClassVar[str] = "tuner"


@dataclass(frozen=True)
class Strategy:
    """How to implement ``op`` on a target: a TE compute and a schedule template.

    Several strategies may serve one op; the highest ``priority`` is the default and the
    tuner may try the others. The registry key is ``"op/name"``.
    """

    op: str
    name: str
    compute: str
    schedule: str
    priority: int = 0
    description: str = ""
    distribution: str = ""
    plugin: str = ""

    def __post_init__(self) -> None:
        check_name(self.op, "strategy op")
        check_name(self.name, "strategy")
        check_ref(self.compute, f"strategy {self.key!r} compute")
        check_ref(self.schedule, f"strategy {self.key!r} schedule")

    @property
    def key(self) -> str:
        return f"{self.op}/{self.name}"

    def load_compute(self) -> Any:
        return load_ref(self.compute)

    def load_schedule(self) -> Any:
        return load_ref(self.schedule)


@dataclass(frozen=True)
class Intrinsic:
    """A tensorization intrinsic: ``desc`` gives its semantics in TE, ``impl`` the hardware call.

    Name it by shape, dtype and scope, e.g. ``"gemm_16x16x16_int8_acc32"``.
    """

    name: str
    desc: str
    impl: str
    description: str = ""
    distribution: str = ""
    plugin: str = ""

    def __post_init__(self) -> None:
        check_name(self.name, "intrinsic")
        check_ref(self.desc, f"intrinsic {self.name!r} desc")
        check_ref(self.impl, f"intrinsic {self.name!r} impl")

    def load_desc(self) -> Any:
        return load_ref(self.desc)

    def load_impl(self) -> Any:
        return load_ref(self.impl)


@dataclass(frozen=True)
class Pass:
    """An extra pass run at ``stage``; ``func`` maps a graph or PrimFunc to a new one."""

    name: str
    stage: str
    func: str
    priority: int = 0
    description: str = ""
    distribution: str = ""
    plugin: str = ""

    def __post_init__(self) -> None:
        check_name(self.name, "pass")
        if self.stage not in PASS_STAGES:
            raise ValueError(
                f"pass {self.name!r}: unknown stage {self.stage!r}; use one of {PASS_STAGES}")
        check_ref(self.func, f"pass {self.name!r} func")

    def load_func(self) -> Any:
        return load_ref(self.func)
