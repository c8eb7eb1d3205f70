"""Generic visitors and mutators over expression nodes (and, through the same tables, over
`tir` statements): per-class child tables are derived once from the dataclass fields, so a
pass overrides only the `visit_<NodeName>` methods it cares about."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from .nodes import PrimExpr, Var

# field kinds: "e" one child node, "t" a tuple of child nodes, "o" data (not visited)
_CHILD_TABLE: dict[type, tuple[tuple[str, str], ...]] = {}
_NODE_BASES: tuple[type, ...] = (PrimExpr,)


def register_node_base(base: type) -> None:
    """Let the functors treat instances of `base` (e.g. tir.Stmt) as child nodes too."""
    global _NODE_BASES
    if base not in _NODE_BASES:
        _NODE_BASES = (*_NODE_BASES, base)
    _CHILD_TABLE.clear()


def _kind_of(annotation: str) -> str:
    a = str(annotation).replace(" ", "")
    for base in _NODE_BASES:
        n = base.__name__
        if a in (n, f"{n}|None", f"Optional[{n}]"):
            return "e"
        if a in (f"tuple[{n},...]", f"Tuple[{n},...]"):
            return "t"
    return "o"


def child_table(cls: type) -> tuple[tuple[str, str], ...]:
    t = _CHILD_TABLE.get(cls)
    if t is None:
        if dataclasses.is_dataclass(cls):
            t = tuple((f.name, _kind_of(f.type)) for f in dataclasses.fields(cls))
        else:
            t = ()
        _CHILD_TABLE[cls] = t
    return t


class _Dispatch:
    _cache: dict[type, Callable[..., Any]]

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._cache = {}

    def _method(self, node: object) -> Callable[..., Any]:
        cls = type(node)
        fn = self._cache.get(cls)
        if fn is None:
            fn = None
            for klass in cls.__mro__:
                fn = getattr(type(self), "visit_" + klass.__name__, None)
                if fn is not None:
                    break
            if fn is None:
                fn = type(self).generic_visit
            self._cache[cls] = fn
        return fn


class ExprVisitor(_Dispatch):
    """Walks every node; override `visit_<Node>` and call `generic_visit` to recurse."""

    def visit(self, node: Any) -> None:
        self._method(node)(self, node)

    def generic_visit(self, node: Any) -> None:
        for name, kind in child_table(type(node)):
            v = getattr(node, name)
            if v is None:
                continue
            if kind == "e":
                self.visit(v)
            elif kind == "t":
                for x in v:
                    self.visit(x)


class ExprMutator(_Dispatch):
    """Rebuilds a node only when a child changed (identity preserved otherwise)."""

    def visit(self, node: Any) -> Any:
        return self._method(node)(self, node)

    def generic_visit(self, node: Any) -> Any:
        table = child_table(type(node))
        changed = False
        values = []
        for name, kind in table:
            v = getattr(node, name)
            if v is not None:
                if kind == "e":
                    nv = self.visit(v)
                    if nv is not v:
                        changed = True
                    v = nv
                elif kind == "t":
                    nt = tuple(self.visit(x) for x in v)
                    if any(a is not b for a, b in zip(nt, v)):
                        changed = True
                        v = nt
            values.append(v)
        if not changed:
            return node
        return type(node)(*values)


class _Substitute(ExprMutator):
    def __init__(self, vmap: dict[Var, PrimExpr]):
        self.vmap = vmap

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.vmap.get(v, v)


def substitute(node: Any, vmap: dict[Var, Any]) -> Any:
    """Replace variables by expressions (works on expressions and statements)."""
    if not vmap:
        return node
    from .construct import convert

    return _Substitute({k: convert(v) for k, v in vmap.items()}).visit(node)


class _Collect(ExprVisitor):
    def __init__(self, pred: Callable[[Any], bool]):
        self.pred = pred
        self.found: list[Any] = []

    def generic_visit(self, node: Any) -> None:
        if self.pred(node):
            self.found.append(node)
        super().generic_visit(node)

    def visit_Var(self, v: Var) -> None:
        if self.pred(v):
            self.found.append(v)


def post_order_collect(node: Any, pred: Callable[[Any], bool]) -> list[Any]:
    c = _Collect(pred)
    c.visit(node)
    return c.found


def free_vars(node: Any) -> set[Var]:
    """Variables used in `node` (including loop variables bound inside it)."""
    return set(post_order_collect(node, lambda n: isinstance(n, Var)))


def uses_var(node: Any, pred: Callable[[Var], bool]) -> bool:
    class _Found(Exception):
        pass

    class _V(ExprVisitor):
        def visit_Var(self, v: Var) -> None:
            if pred(v):
                raise _Found

    try:
        _V().visit(node)
    except _Found:
        return True
    return False
