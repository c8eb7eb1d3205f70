"""The hook specifications of tensorforge: the whole contract between core and a plugin.

A plugin is a module (or object) with functions named like the specs below, decorated with
``@hookimpl`` and listed under the entry-point group ``tensorforge``. Every hook only
*registers descriptors*: small frozen dataclasses from :mod:`tensorforge.plugins.descriptors`
that name heavy code as ``"module:attr"`` strings, imported on first use, never at discovery.

Calling rules, the same for every hook:

* ``register`` is a callable taking one descriptor; call it once per thing you provide. A
  descriptor of the wrong type, or a name another plugin already took, raises
  :class:`~tensorforge.errors.PluginError` naming both distributions.
* A hook implementation may accept any subset of the spec's arguments (pluggy rule).
* Core calls each plugin's implementation separately, so a plugin that raises is reported with
  its distribution and never stops the others. No hook is ``firstresult`` or ``historic``; the
  return value is ignored.
* The first five hooks run once, when the plugin is loaded. The last three take a ``target``
  and run lazily, once per distinct target, when core asks for that target's strategies,
  intrinsics or passes; register nothing for a target that is not yours.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from tensorforge.target import Target

PROJECT = "tensorforge"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

Register = Callable[[Any], None]


@hookspec
def register_targets(register: Register) -> None:
    """Register target kinds: ``register(TargetKind(...))``.

    :param register: takes a :class:`~tensorforge.target.TargetKind` (name, device type,
        option schema, ``build`` and ``detect_host`` references).
    """


@hookspec
def register_target_tags(register: Register) -> None:
    """Register named target presets: ``register(TargetTag("amd/zen3", "llvm -mcpu=znver3"))``.

    :param register: takes a :class:`~tensorforge.plugins.descriptors.TargetTag`.
    """


@hookspec
def register_frontends(register: Register) -> None:
    """Register model importers: ``register(Frontend("onnx", (".onnx",), "pkg.mod:load"))``.

    :param register: takes a :class:`~tensorforge.plugins.descriptors.Frontend`.
    """


@hookspec
def register_cost_models(register: Register) -> None:
    """Register cost models for the tuner: ``register(CostModel("xgboost", "pkg.mod:Cls"))``.

    :param register: takes a :class:`~tensorforge.plugins.descriptors.CostModel`.
    """


@hookspec
def register_tuners(register: Register) -> None:
    """Register search strategies: ``register(Tuner("random", "pkg.mod:RandomTuner"))``.

    :param register: takes a :class:`~tensorforge.plugins.descriptors.Tuner`.
    """


@hookspec
def register_strategies(register: Register, target: Target) -> None:
    """Register op strategies (TE compute + schedule template) for one target.

    :param register: takes a :class:`~tensorforge.plugins.descriptors.Strategy`; the name
        ``(op, name)`` must be unique per target.
    :param target: the :class:`~tensorforge.target.Target` being compiled for.
    """


@hookspec
def register_intrinsics(register: Register, target: Target) -> None:
    """Register tensorization intrinsics (semantics in TE + the hardware call) for one target.

    :param register: takes a :class:`~tensorforge.plugins.descriptors.Intrinsic`.
    :param target: the :class:`~tensorforge.target.Target` being compiled for.
    """


@hookspec
def register_passes(register: Register, target: Target, stage: str) -> None:
    """Register extra graph or loop-IR passes to run at a named pipeline stage.

    :param register: takes a :class:`~tensorforge.plugins.descriptors.Pass`.
    :param target: the :class:`~tensorforge.target.Target` being compiled for.
    :param stage: one of :data:`tensorforge.plugins.descriptors.PASS_STAGES`.
    """


#: Hooks called once at load time, and the descriptor type each one registers
#: (filled in by :mod:`tensorforge.plugins.registry`, which owns the descriptor classes).
GLOBAL_HOOKS = (
    "register_targets",
    "register_target_tags",
    "register_frontends",
    "register_cost_models",
    "register_tuners",
)
#: Hooks called lazily with a target.
TARGET_HOOKS = ("register_strategies", "register_intrinsics", "register_passes")
