"""A Stage: how one operation is computed (loop order, splits, annotations, attach point)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..expr import Var, const, convert
from ..te.tensor import REDUCE, THREAD, ComputeOp, IterVar, Operation
from .errors import ScheduleError
from .relations import Fuse, Relation, Split

if TYPE_CHECKING:
    from .schedule import Schedule

ANNOTATIONS = ("vectorize", "unroll", "parallel", "bind", "tensorize")


@dataclass
class IterAttr:
    """Annotations of one iteration variable."""

    kind: str = ""  # "", "vectorize", "unroll", "parallel", "bind", "tensorize"
    bind_thread: IterVar | None = None
    pragmas: list[tuple[str, Any]] = field(default_factory=list)
    tensor_intrin: Any = None


class Stage:
    """Created by `create_schedule`; reached with `s[tensor]`."""

    def __init__(self, op: Operation, schedule: Schedule):
        self.op = op
        self.schedule = schedule
        axis = list(getattr(op, "axis", ())) + list(getattr(op, "reduce_axis", ()))
        self.all_iter_vars: list[IterVar] = list(axis)
        self.leaf_iter_vars: list[IterVar] = list(axis)
        self.relations: list[Relation] = []
        self.iter_var_attrs: dict[IterVar, IterAttr] = {}
        self.attach_type = "root"  # root | inline | scope
        self.attach_stage: Stage | None = None
        self.attach_ivar: IterVar | None = None
        self.scope = ""
        self.is_output = False
        self.is_double_buffer = False
        self.align_specs: list[tuple[IterVar, int, int]] = []

    @property
    def name(self) -> str:
        return self.op.name

    def __repr__(self) -> str:
        return f"stage({self.op.name})"

    # helpers -------------------------------------------------------------------
    def _where(self, iv: Any, primitive: str) -> int:
        if not isinstance(iv, IterVar):
            raise ScheduleError(
                f"{primitive} on stage {self.name}: expected an axis (IterVar), got {iv!r}"
            )
        try:
            return self.leaf_iter_vars.index(iv)
        except ValueError:
            leaves = ", ".join(v.name for v in self.leaf_iter_vars)
            why = (
                "it was already split or fused; use the axes that split/fuse returned"
                if iv in self.all_iter_vars
                else "it belongs to another stage"
            )
            raise ScheduleError(
                f"{primitive} on stage {self.name}: axis {iv.name} is not a current loop axis "
                f"({why}). Current axes: {leaves}"
            ) from None

    def _attr(self, iv: IterVar) -> IterAttr:
        a = self.iter_var_attrs.get(iv)
        if a is None:
            a = self.iter_var_attrs[iv] = IterAttr()
        return a

    def _annotate(self, iv: IterVar, kind: str, primitive: str) -> None:
        self._where(iv, primitive)
        attr = self._attr(iv)
        if attr.kind and attr.kind != kind:
            raise ScheduleError(
                f"{primitive} on stage {self.name}: axis {iv.name} is already marked "
                f"{attr.kind}; an axis takes one of vectorize/unroll/parallel/bind/tensorize"
            )
        attr.kind = kind

    # primitives ------------------------------------------------------------------
    def split(
        self, parent: IterVar, factor: Any = None, nparts: Any = None
    ) -> tuple[IterVar, IterVar]:
        """Split `parent` into (outer, inner) with inner extent `factor` (or outer `nparts`)."""
        pos = self._where(parent, "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError(
                f"split on stage {self.name}, axis {parent.name}: give exactly one of "
                "factor= or nparts="
            )
        amount = convert(factor if factor is not None else nparts)
        if getattr(amount, "value", 1) <= 0:
            raise ScheduleError(
                f"split on stage {self.name}, axis {parent.name}: the split amount must be "
                f"positive, got {amount}"
            )
        outer = IterVar(None, Var(f"{parent.name}.outer"), parent.kind)
        inner = IterVar(None, Var(f"{parent.name}.inner"), parent.kind)
        self.relations.append(
            Split(parent, outer, inner, amount if factor is not None else None,
                  amount if nparts is not None else None)
        )
        self.all_iter_vars += [outer, inner]
        self.leaf_iter_vars[pos : pos + 1] = [outer, inner]
        return outer, inner

    def tile(
        self, x: IterVar, y: IterVar, x_factor: Any, y_factor: Any
    ) -> tuple[IterVar, IterVar, IterVar, IterVar]:
        xo, xi = self.split(x, x_factor)
        yo, yi = self.split(y, y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def fuse(self, *axes: IterVar) -> IterVar:
        """Fuse adjacent axes (outermost first) into one."""
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = tuple(axes[0])
        if not axes:
            raise ScheduleError(f"fuse on stage {self.name}: give at least one axis")
        pos = [self._where(a, "fuse") for a in axes]
        if pos != list(range(pos[0], pos[0] + len(pos))):
            names = ", ".join(a.name for a in axes)
            raise ScheduleError(
                f"fuse on stage {self.name}: axes {names} must be adjacent and in loop order "
                "(outermost first); reorder them first"
            )
        kinds = {a.kind for a in axes}
        if len(kinds) > 1:
            raise ScheduleError(
                f"fuse on stage {self.name}: cannot fuse a reduction axis with a data-parallel "
                f"axis ({', '.join(f'{a.name}:{a.kind}' for a in axes)})"
            )
        fused = axes[0]
        for a in axes[1:]:
            new = IterVar(None, Var(f"{fused.name}.{a.name}.fused"), a.kind)
            self.relations.append(Fuse(fused, a, new))
            self.all_iter_vars.append(new)
            fused = new
        self.leaf_iter_vars[pos[0] : pos[-1] + 1] = [fused]
        return fused

    def reorder(self, *axes: IterVar) -> None:
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = tuple(axes[0])
        pos = [self._where(a, "reorder") for a in axes]
        if len(set(pos)) != len(pos):
            raise ScheduleError(f"reorder on stage {self.name}: an axis is given twice")
        for p, a in zip(sorted(pos), axes):
            self.leaf_iter_vars[p] = a

    def compute_at(self, parent: Stage, ivar: IterVar) -> None:
        """Compute this stage inside `parent`'s loop `ivar` (only the region needed there).
        `parent` reads it, directly or through other stages; every reader must then run
        inside that loop: the parent itself, or a stage attached (possibly through a chain of
        attached stages) at that loop or inside it."""
        if parent is self:
            raise ScheduleError(
                f"compute_at: stage {self.name} cannot be computed at itself; choose a "
                "consumer stage"
            )
        p = parent
        while p is not None and p.attach_type == "scope":
            p = p.attach_stage
            if p is self:
                raise ScheduleError(
                    f"compute_at: stage {parent.name} is already attached inside stage "
                    f"{self.name}; attaching {self.name} into it would make a cycle"
                )
        if self.is_output:
            raise ScheduleError(
                f"compute_at: stage {self.name} is an output of the schedule; only "
                "intermediate stages can be attached to a consumer"
            )
        parent._where(ivar, f"compute_at({self.name} at {parent.name})")
        # the parent reads the stage, or reads a stage that does: then its readers must be
        # attached inside the loop too (bound inference checks)
        if not self.schedule._reads_through_inline(parent, self, transitive=True):
            raise ScheduleError(
                f"compute_at: stage {parent.name} does not read {self.name}; attach a stage "
                "to one of its consumers"
            )
        self.attach_type = "scope"
        self.attach_stage = parent
        self.attach_ivar = ivar

    def compute_inline(self) -> None:
        if self.is_output:
            raise ScheduleError(f"compute_inline: stage {self.name} is an output; it cannot be "
                                "inlined")
        if not isinstance(self.op, ComputeOp) or self.op.reduce_axis:
            raise ScheduleError(
                f"compute_inline: stage {self.name} is not an injective compute (it has a "
                "reduction or is a placeholder); use compute_at instead"
            )
        if len(self.relations) or any(a.kind for a in self.iter_var_attrs.values()):
            raise ScheduleError(
                f"compute_inline: stage {self.name} has loop transformations; an inlined stage "
                "has no loops of its own"
            )
        self.attach_type = "inline"

    def compute_root(self) -> None:
        self.attach_type = "root"
        self.attach_stage = None
        self.attach_ivar = None

    def vectorize(self, iv: IterVar) -> None:
        if iv.kind == REDUCE:
            raise ScheduleError(
                f"vectorize on stage {self.name}: axis {iv.name} is a reduction axis; vectorize "
                "a data-parallel axis (reorder it innermost) or use rfactor"
            )
        self._annotate(iv, "vectorize", "vectorize")

    def unroll(self, iv: IterVar) -> None:
        self._annotate(iv, "unroll", "unroll")

    def parallel(self, iv: IterVar) -> None:
        if iv.kind == REDUCE:
            raise ScheduleError(
                f"parallel on stage {self.name}: axis {iv.name} is a reduction axis; "
                "parallelize a data-parallel axis (or rfactor the reduction first)"
            )
        self._annotate(iv, "parallel", "parallel")

    def bind(self, iv: IterVar, thread: IterVar) -> None:
        """Bind a loop axis to a GPU thread axis or a virtual thread."""
        if not isinstance(thread, IterVar) or thread.kind != THREAD:
            raise ScheduleError(
                f"bind on stage {self.name}: {thread!r} is not a thread axis; create one with "
                "te.thread_axis('threadIdx.x')"
            )
        virtual = thread.thread_tag.startswith(("vthread", "cthread"))
        for other, attr in self.iter_var_attrs.items():
            bt = attr.bind_thread
            if bt is not None and other is not iv and bt.thread_tag == thread.thread_tag \
                    and not virtual:  # several axes may each be virtual threads
                raise ScheduleError(
                    f"bind on stage {self.name}: thread tag {thread.thread_tag!r} is already "
                    f"bound to axis {other.name}; each thread tag binds one axis per stage"
                )
        self._annotate(iv, "bind", "bind")
        self._attr(iv).bind_thread = thread

    def pragma(self, iv: IterVar, key: str, value: Any = None) -> None:
        self._where(iv, "pragma")
        self._attr(iv).pragmas.append((key, const(1) if value is None else convert(value)))

    def tensorize(self, iv: IterVar, intrin: Any) -> None:
        self._annotate(iv, "tensorize", "tensorize")
        self._attr(iv).tensor_intrin = intrin

    def set_scope(self, scope: str) -> None:
        self.scope = scope

    def storage_align(self, axis: IterVar, factor: int, offset: int) -> None:
        if axis not in getattr(self.op, "axis", ()):
            raise ScheduleError(
                f"storage_align on stage {self.name}: {getattr(axis, 'name', axis)} is not one "
                "of the op's original axes (storage_align pads a dimension of the buffer)"
            )
        self.align_specs.append((axis, int(factor), int(offset)))

    def double_buffer(self) -> None:
        self.is_double_buffer = True

    def env_threads(self, threads: list[IterVar]) -> None:  # pragma: no cover - GPU issue
        raise ScheduleError("env_threads is not supported yet; bind each axis instead")
