"""Configuration spaces: knobs, their entities, and configs as indices (after AutoTVM).

A template declares its knobs by calling ``cfg.define_split`` / ``define_reorder`` /
``define_annotate`` / ``define_knob`` and then reads the chosen value with ``cfg[name]``::

    cfg.define_split("tile_m", M, num_outputs=2, default=(-1, 8))
    mo, mi = cfg["tile_m"].apply(s, s[C], C.op.axis[0])

The same code serves three purposes, by the kind of ``cfg`` it gets:

* :class:`ConfigSpace` (collecting): each ``define_*`` adds a knob; ``cfg[name]`` is the
  knob's *default* entity, so calling a template with a fresh space builds the default
  schedule and the space at once (:class:`FallbackConfig` is that, by name);
* :class:`ConfigEntity` (one point): ``define_*`` checks the knob exists; ``cfg[name]`` is the
  entity the config's index selects.

A config is an index into the mixed-radix product of the knobs (first knob fastest) and back.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AnnotateEntity",
    "AnnotateKnob",
    "ConfigEntity",
    "ConfigSpace",
    "FallbackConfig",
    "Knob",
    "OtherOptionEntity",
    "OtherOptionKnob",
    "ReorderEntity",
    "ReorderKnob",
    "SplitEntity",
    "SplitKnob",
]

ANNOTATIONS = ("none", "unroll", "vec", "parallel")


# ---- entities: one value of a knob ------------------------------------------------------------
@dataclass(frozen=True)
class SplitEntity:
    """Sizes of the parts of one axis, outermost first (the outer one is the ceiling)."""

    size: tuple[int, ...]

    def apply(self, s: Any, stage: Any, axis: Any) -> list[Any]:
        """Split ``axis`` of ``stage`` into ``len(size)`` axes, outermost first."""
        inner: list[Any] = []
        for factor in reversed(self.size[1:]):
            axis, ii = stage.split(axis, factor=factor)
            inner.insert(0, ii)
        return [axis, *inner]

    def json(self) -> list[int]:
        return list(self.size)


@dataclass(frozen=True)
class ReorderEntity:
    """A permutation: the new order lists old positions."""

    perm: tuple[int, ...]

    def apply(self, s: Any, stage: Any, axes: Sequence[Any]) -> list[Any]:
        new = [axes[i] for i in self.perm]
        stage.reorder(*new)
        return new

    def json(self) -> list[int]:
        return list(self.perm)


@dataclass(frozen=True)
class AnnotateEntity:
    """One annotation per axis: "none", "unroll", "vec", "parallel" or a GPU thread tag
    ("blockIdx.x", "threadIdx.y", "vthread" ...) that the axis is bound to."""

    anns: tuple[str, ...]

    def apply(self, s: Any, stage: Any, axes: Sequence[Any]) -> None:
        for ax, ann in zip(axes, self.anns):
            if ann == "none":
                continue
            if ann == "unroll":
                stage.unroll(ax)
            elif ann == "vec":
                stage.vectorize(ax)
            elif ann == "parallel":
                stage.parallel(ax)
            else:
                from .. import te

                stage.bind(ax, te.thread_axis(ann))

    def json(self) -> list[str]:
        return list(self.anns)


@dataclass(frozen=True)
class OtherOptionEntity:
    """A plain choice; read it with ``.val``."""

    val: Any

    def json(self) -> Any:
        return self.val


# ---- knobs: named lists of entities ----------------------------------------------------------
class Knob:
    """A named, ordered list of entities with a default position."""

    kind = "knob"

    def __init__(self, name: str, entities: Sequence[Any], default: int = 0):
        if not entities:
            raise ValueError(f"knob {name!r} has no choices")
        self.name = name
        self.entities = list(entities)
        self.default = default
        self._pos = {self._key(e.json()): i for i, e in enumerate(self.entities)}

    @staticmethod
    def _key(value: Any) -> str:
        import json

        return json.dumps(value, sort_keys=True)

    def __len__(self) -> int:
        return len(self.entities)

    def __getitem__(self, i: int) -> Any:
        return self.entities[i]

    def position(self, value: Any) -> int:
        """The position of the entity whose JSON form is ``value`` (``KeyError`` if none)."""
        return self._pos[self._key(value)]

    def set_default(self, value: Any) -> None:
        try:
            self.default = self.position(value)
        except KeyError:
            raise ValueError(f"knob {self.name!r}: default {value!r} is not one of its "
                             f"{len(self)} choices") from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {len(self)} choices)"


def _factorizations(n: int, parts: int, max_factor: int | None) -> list[tuple[int, ...]]:
    """Ordered tuples of ``parts`` positive ints with product ``n`` (inner ones <= max_factor)."""
    if parts == 1:
        return [(n,)]
    divs = [d for d in range(1, n + 1) if n % d == 0 and (max_factor is None or d <= max_factor)]
    out = []
    for d in divs:  # d is the innermost part
        out += [(*rest, d) for rest in _factorizations(n // d, parts - 1, max_factor)]
    return out


def _power2_splits(n: int, parts: int, max_factor: int | None) -> list[tuple[int, ...]]:
    cap = n if max_factor is None else min(n, max_factor)
    pows = [1 << i for i in range(cap.bit_length()) if (1 << i) <= cap]
    out = []
    for inner in itertools.product(pows, repeat=parts - 1):
        prod = math.prod(inner)
        if prod <= n:
            out.append((-(-n // prod), *inner))
    return sorted(set(out), key=lambda t: t[::-1])


class SplitKnob(Knob):
    """All ways to split an axis of ``extent`` into ``num_outputs`` parts.

    ``policy``: "factors" (exact factorizations), "power2" (power-of-two inner parts, the
    outer one a ceiling, guards where they do not divide) or "candidate" (given size tuples).
    """

    kind = "split"

    def __init__(self, name: str, extent: int, num_outputs: int = 2, policy: str = "factors",
                 candidates: Iterable[Sequence[int]] | None = None,
                 max_factor: int | None = None):
        self.extent, self.num_outputs, self.policy = extent, num_outputs, policy
        if policy == "factors":
            sizes = _factorizations(extent, num_outputs, max_factor)
        elif policy == "power2":
            sizes = _power2_splits(extent, num_outputs, max_factor)
        elif policy == "candidate":
            sizes = [self.normalize(c) for c in candidates or ()]
        else:
            raise ValueError(f"split knob {name!r}: unknown policy {policy!r}")
        super().__init__(name, [SplitEntity(tuple(z)) for z in sizes])

    def normalize(self, size: Sequence[int]) -> tuple[int, ...]:
        """Fill a leading -1 with the ceiling of the extent over the inner parts."""
        size = tuple(int(x) for x in size)
        if len(size) != self.num_outputs:
            raise ValueError(f"split {size} has {len(size)} parts, expected {self.num_outputs}")
        if size[0] == -1:
            size = (-(-self.extent // math.prod(size[1:])), *size[1:])
        return size

    def set_default(self, value: Any) -> None:
        super().set_default(list(self.normalize(value)))


class ReorderKnob(Knob):
    """Orders of ``n`` axes: "all" permutations, "identity" only, or given "candidate"s."""

    kind = "reorder"

    def __init__(self, name: str, n: int, policy: str = "all",
                 candidates: Iterable[Sequence[int]] | None = None):
        if policy == "all":
            perms = list(itertools.permutations(range(n)))
        elif policy == "identity":
            perms = [tuple(range(n))]
        elif policy == "candidate":
            perms = [tuple(c) for c in candidates or ()]
            if any(sorted(p) != list(range(n)) for p in perms):
                raise ValueError(f"reorder knob {name!r}: candidates must permute 0..{n - 1}")
        else:
            raise ValueError(f"reorder knob {name!r}: unknown policy {policy!r}")
        super().__init__(name, [ReorderEntity(p) for p in perms])


class AnnotateKnob(Knob):
    """Annotations of ``n`` axes. Policies: "try_unroll" (each axis none/unroll), "try_vec"
    (the last axis none/vec), "try_unroll_vec" (both), "try_parallel" (the first axis
    none/parallel), "candidate" (given tuples, e.g. GPU thread tags)."""

    kind = "annotate"

    def __init__(self, name: str, n: int, policy: str = "try_unroll",
                 candidates: Iterable[Sequence[str]] | None = None):
        none = ("none",) * n
        if policy == "try_unroll":
            anns = list(itertools.product(("none", "unroll"), repeat=n))
        elif policy == "try_vec":
            anns = [none, (*none[:-1], "vec")]
        elif policy == "try_unroll_vec":
            anns = [(*u, v) for v in ("none", "vec")
                    for u in itertools.product(("none", "unroll"), repeat=n - 1)]
        elif policy == "try_parallel":
            anns = [none, ("parallel", *none[1:])]
        elif policy == "candidate":
            anns = [tuple(c) for c in candidates or ()]
            if any(len(a) != n for a in anns):
                raise ValueError(f"annotate knob {name!r}: each candidate needs {n} entries")
        else:
            raise ValueError(f"annotate knob {name!r}: unknown policy {policy!r}")
        super().__init__(name, [AnnotateEntity(tuple(a)) for a in anns])


class OtherOptionKnob(Knob):
    """A plain list of choices (ints, strings, bools)."""

    kind = "other"

    def __init__(self, name: str, options: Sequence[Any]):
        super().__init__(name, [OtherOptionEntity(v) for v in options])


def _extent(axis: Any) -> int:
    if isinstance(axis, int):
        return axis
    dom = getattr(axis, "dom", None)
    ext = getattr(dom, "extent", None)
    value = getattr(ext, "value", None)
    if value is None:
        raise ValueError(f"define_split needs an int extent or an axis with a constant domain, "
                         f"got {axis!r}")
    return int(value)


# ---- the space and its points ----------------------------------------------------------------
class ConfigSpace:
    """The knobs a template declared; when a template runs with it, every knob takes its
    default, so the schedule built is the default config's."""

    is_fallback = True

    def __init__(self, target: Any = None):
        self.knobs: dict[str, Knob] = {}
        self.target = target
        self.flop = 0.0

    # declaration ---------------------------------------------------------------------------
    def _add(self, knob: Knob, default: Any) -> None:
        if knob.name in self.knobs:
            raise ValueError(f"knob {knob.name!r} is defined twice")
        if default is not None:
            knob.set_default(default)
        self.knobs[knob.name] = knob

    def define_split(self, name: str, axis: Any, num_outputs: int = 2, policy: str = "factors",
                     candidates: Iterable[Sequence[int]] | None = None,
                     max_factor: int | None = None, default: Sequence[int] | None = None) -> None:
        """Split an axis (or an extent) into ``num_outputs`` parts; ``default`` may start -1."""
        self._add(SplitKnob(name, _extent(axis), num_outputs, policy, candidates, max_factor),
                  default)

    def define_reorder(self, name: str, axes: Sequence[Any] | int, policy: str = "all",
                       candidates: Iterable[Sequence[int]] | None = None,
                       default: Sequence[int] | None = None) -> None:
        n = axes if isinstance(axes, int) else len(axes)
        self._add(ReorderKnob(name, n, policy, candidates),
                  None if default is None else list(default))

    def define_annotate(self, name: str, axes: Sequence[Any] | int, policy: str = "try_unroll",
                        candidates: Iterable[Sequence[str]] | None = None,
                        default: Sequence[str] | None = None) -> None:
        n = axes if isinstance(axes, int) else len(axes)
        self._add(AnnotateKnob(name, n, policy, candidates),
                  None if default is None else list(default))

    def define_knob(self, name: str, options: Sequence[Any], default: Any = None) -> None:
        self._add(OtherOptionKnob(name, options), default)

    def add_flop(self, flop: float) -> None:
        self.flop += flop

    def __getitem__(self, name: str) -> Any:
        knob = self.knobs[name]
        return knob[knob.default]

    # the index <-> knob positions map ------------------------------------------------------
    def __len__(self) -> int:
        return math.prod(len(k) for k in self.knobs.values())

    @property
    def dims(self) -> list[int]:
        return [len(k) for k in self.knobs.values()]

    def positions(self, index: int) -> list[int]:
        """Knob positions of config ``index`` (first knob fastest)."""
        if not 0 <= index < len(self):
            raise IndexError(f"config index {index} out of range [0, {len(self)})")
        out = []
        for d in self.dims:
            index, r = divmod(index, d)
            out.append(r)
        return out

    def index_of_positions(self, positions: Sequence[int]) -> int:
        index = 0
        for p, d in zip(reversed(positions), reversed(self.dims)):
            if not 0 <= p < d:
                raise IndexError(f"knob position {p} out of range [0, {d})")
            index = index * d + p
        return index

    @property
    def default_index(self) -> int:
        return self.index_of_positions([k.default for k in self.knobs.values()])

    def get(self, index: int) -> ConfigEntity:
        return ConfigEntity(self, index)

    def from_json(self, data: dict[str, Any]) -> ConfigEntity:
        """The config whose knob values are ``data["knobs"]`` (the index is recomputed);
        ``KeyError`` when the knobs are not exactly this space's or a value is not one of its
        choices (a record from before the space changed)."""
        values = data["knobs"]
        if set(values) != set(self.knobs):
            raise KeyError(f"knobs {sorted(values)} are not this space's {sorted(self.knobs)}")
        pos = [k.position(values[name]) for name, k in self.knobs.items()]
        return self.get(self.index_of_positions(pos))

    def from_record(self, data: dict[str, Any], index: int) -> ConfigEntity | None:
        """The config a tuning record names: by its knob values; by ``index`` only for a
        record without them (old records); None when the record's knobs no longer fit this
        space (its config index would name a different config now)."""
        if "knobs" not in data:
            return self.get(index) if 0 <= index < len(self) else None
        try:
            return self.from_json(data)
        except KeyError:
            return None

    def random_index(self, rng: random.Random) -> int:
        return rng.randrange(len(self))

    def neighbour(self, index: int, rng: random.Random) -> int:
        """A config that differs from ``index`` in one knob (a random new position)."""
        pos = self.positions(index)
        free = [i for i, d in enumerate(self.dims) if d > 1]
        if not free:
            return index
        i = rng.choice(free)
        pos[i] = (pos[i] + rng.randrange(1, self.dims[i])) % self.dims[i]
        return self.index_of_positions(pos)

    def __repr__(self) -> str:
        knobs = ", ".join(f"{n}: {len(k)}" for n, k in self.knobs.items())
        return f"ConfigSpace(len={len(self)}, {knobs})"


FallbackConfig = ConfigSpace


class ConfigEntity:
    """One point of a space: ``cfg[name]`` is the entity its index selects."""

    is_fallback = False

    def __init__(self, space: ConfigSpace, index: int):
        self.space = space
        self.index = index
        self.target = space.target
        self.flop = 0.0
        self._pos = dict(zip(space.knobs, space.positions(index)))

    def _check(self, name: str, *args: Any, **kwargs: Any) -> None:
        if name not in self.space.knobs:
            raise KeyError(f"knob {name!r} is not in the config space (the template declares "
                           "different knobs for this workload?)")

    define_split = define_reorder = define_annotate = define_knob = _check

    def add_flop(self, flop: float) -> None:
        self.flop += flop

    def __getitem__(self, name: str) -> Any:
        return self.space.knobs[name][self._pos[name]]

    def values(self) -> dict[str, Any]:
        """Knob name -> JSON value of the chosen entity."""
        return {n: self[n].json() for n in self.space.knobs}

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "knobs": self.values()}

    def __repr__(self) -> str:
        return f"ConfigEntity({self.index}, {self.values()})"
