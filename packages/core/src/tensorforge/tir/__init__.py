"""Loop IR: statements, PrimFunc, the printer, and the lowering pass pipeline."""

from .stmt import (
    FOR_KINDS,
    NOOP,
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)

__all__ = [name for name in dir() if not name.startswith("_")]
