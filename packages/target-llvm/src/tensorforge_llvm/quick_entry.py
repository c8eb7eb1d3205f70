"""The ahead-of-time executor's native quick path as LLVM IR (`tensorforge.runtime.aot_quick`).

`quick_ir()` defines `QUICK_SYMBOL`, a CPython `METH_FASTCALL` function
`PyObject *f(PyObject *self, PyObject *const *args, int64_t nargs)` whose `self` is the
state array (int64 words, layout in `aot_quick`). It is the same for every model (the entry,
the tables and the expected shapes are in the state), so the JIT adds it once per engine and
an exported library carries one copy. It calls CPython and numpy only through the function
pointers in the state (`Py_IncRef`, `PyEval_SaveThread`, `PyList_New`,
`PyArray_NewFromDescr` ...), so the library links against neither."""

from __future__ import annotations

from llvmlite import ir

from tensorforge.runtime import aot_quick as q

from .codegen_expr import I32, I64, PTR

__all__ = ["quick_ir"]

_VOID = ir.VoidType()
_NULL = ir.Constant(PTR, None)
#: `void f(void *)`: Py_IncRef, Py_DecRef, PyEval_RestoreThread
_VOID_FN = ir.FunctionType(_VOID, [PTR])


class _Callee:
    """A function pointer as llvmlite's `call` takes it (it asks the callee for its type)."""

    def __init__(self, pointer: ir.Value, ftype: ir.FunctionType):
        self.pointer, self.function_type, self.type = pointer, ftype, PTR

    def get_reference(self) -> str:
        return str(self.pointer.get_reference())


class _Gen:
    """The function's builder and the state's words."""

    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.state = self.field(fn.args[0], "data", PTR)
        self._open: list[tuple[ir.Value, ir.Block, ir.Block]] = []  # loops, innermost last

    def field(self, obj: ir.Value, name: str, typ: ir.Type) -> ir.Value:
        """Field `name` (an `ABI` offset) of the Python object `obj`."""
        at = self.b.gep(obj, [ir.Constant(I64, q.ABI[name])], inbounds=True,
                        source_etype=ir.IntType(8))
        return self.b.load(at, typ=typ, name=name)

    def slot(self, index: ir.Value | int, base: ir.Value | None = None) -> ir.Value:
        """The address of word `index` of the state (or of the int64 array `base`)."""
        if isinstance(index, int):
            index = ir.Constant(I64, index)
        return self.b.gep(self.state if base is None else base, [index], inbounds=True,
                          source_etype=I64)

    def word(self, index: ir.Value | int, typ: ir.Type = I64, base: ir.Value | None = None
             ) -> ir.Value:
        return self.b.load(self.slot(index, base), typ=typ)

    def call(self, index: int, ftype: ir.FunctionType, args: list[ir.Value]) -> ir.Value:
        """Call the function whose address is word `index` of the state."""
        return self.b.call(_Callee(self.word(index, PTR), ftype), args)

    def record(self, k: ir.Value) -> ir.Value:
        """The address of argument `k`'s record (inputs, then outputs)."""
        return self.slot(self.word(self.b.add(k, ir.Constant(I64, q.ARGS))))

    def ret_code(self, code: int) -> None:
        """Return the state's object for `code`, a new reference."""
        obj = self.word(q.CODES + code, PTR)
        self.call(q.INCREF, _VOID_FN, [obj])
        self.b.ret(obj)

    def unless(self, cond: ir.Value, code: int) -> None:
        """Return `code` when `cond` is false; carry on in a new block otherwise."""
        fail = self.fn.append_basic_block(f"code{code}")
        ok = self.fn.append_basic_block("ok")
        self.b.cbranch(cond, ok, fail)
        self.b.position_at_end(fail)
        self.ret_code(code)
        self.b.position_at_end(ok)

    def loop(self, n: ir.Value, name: str) -> ir.Value:
        """Start `for i in range(n)` and return i; the caller's body ends with
        `next_iteration`."""
        head = self.fn.append_basic_block(f"{name}.head")
        body = self.fn.append_basic_block(f"{name}.body")
        done = self.fn.append_basic_block(f"{name}.done")
        before = self.b.block
        self.b.branch(head)
        self.b.position_at_end(head)
        i = self.b.phi(I64, name=name)
        i.add_incoming(ir.Constant(I64, 0), before)
        self.b.cbranch(self.b.icmp_signed("<", i, n), body, done)
        self.b.position_at_end(body)
        self._open.append((i, head, done))
        return i

    def next_iteration(self) -> None:
        i, head, done = self._open.pop()
        i.add_incoming(self.b.add(i, ir.Constant(I64, 1)), self.b.block)
        self.b.branch(head)
        self.b.position_at_end(done)

    def take(self) -> None:
        """Take the fast arena (compare-and-swap of BUSY) unless closed, else return BUSY."""
        b = self.b
        self.unless(b.icmp_signed("==", self.word(q.CLOSED), ir.Constant(I64, 0)),
                    q.TAKEN_ELSEWHERE)
        pair = b.cmpxchg(self.slot(q.BUSY), ir.Constant(I64, 0), ir.Constant(I64, 1),
                         "acq_rel", "monotonic")
        self.unless(b.extract_value(pair, 1), q.TAKEN_ELSEWHERE)


def _check_input(g: _Gen, obj: ir.Value, k: ir.Value) -> None:
    """Return NOT_QUICK unless `obj` is an ndarray as input `k`'s record says."""
    b = g.b
    eq = b.icmp_unsigned
    g.unless(eq("==", g.field(obj, "ob_type", I64), g.word(q.NDARRAY)), q.NOT_QUICK)
    rec = g.record(k)
    nd = b.sext(g.field(obj, "nd", I32), I64)
    ok = b.and_(eq("==", nd, g.word(q.REC_ND, base=rec)),
                eq("==", g.field(obj, "descr", I64), g.word(q.REC_DESCR, base=rec)))
    data = g.field(obj, "data", I64)
    g.unless(b.and_(ok, eq("==", b.urem(data, g.word(q.REC_ITEMSIZE, base=rec)),
                           ir.Constant(I64, 0))), q.NOT_QUICK)
    dims, strides = g.field(obj, "dimensions", PTR), g.field(obj, "strides", PTR)
    d = g.loop(nd, "d")
    want_dim = g.word(b.add(d, ir.Constant(I64, q.REC_DIMS)), base=rec)
    want_stride = g.word(b.add(d, b.add(nd, ir.Constant(I64, q.REC_DIMS))), base=rec)
    g.unless(b.and_(eq("==", g.word(d, base=dims), want_dim),
                    eq("==", g.word(d, base=strides), want_stride)), q.NOT_QUICK)
    g.next_iteration()


def _give_back(g: _Gen) -> None:
    """Give the fast arena back (the pool may lend it from now on)."""
    g.b.atomic_rmw("xchg", g.slot(q.BUSY), ir.Constant(I64, 0), "release")


def _make_outputs(g: _Gen) -> ir.Value:
    """A new list of new output arrays, their data pointers in the output table; on an error
    (no memory: numpy has set the exception), the arena is given back and NULL returned."""
    b = g.b
    n_out, n_in = g.word(q.N_OUT), g.word(q.N_IN)
    outs = g.call(q.LIST_NEW, ir.FunctionType(PTR, [I64]), [n_out])
    with b.if_then(b.icmp_unsigned("==", outs, _NULL), likely=False):
        _give_back(g)
        b.ret(_NULL)
    j = g.loop(n_out, "out")
    rec = g.record(b.add(n_in, j))
    descr = g.word(q.REC_DESCR, PTR, base=rec)
    g.call(q.INCREF, _VOID_FN, [descr])  # the call steals it
    arr = g.call(q.NEW_ARRAY, ir.FunctionType(PTR, [PTR, PTR, I32, PTR, PTR, PTR, I32, PTR]),
                 [g.word(q.NDARRAY, PTR), descr, b.trunc(g.word(q.REC_ND, base=rec), I32),
                  g.slot(q.REC_DIMS, base=rec), _NULL, _NULL, ir.Constant(I32, 0), _NULL])
    with b.if_then(b.icmp_unsigned("==", arr, _NULL), likely=False):
        _give_back(g)
        g.call(q.DECREF, _VOID_FN, [outs])
        b.ret(_NULL)
    g.call(q.LIST_SET_ITEM, ir.FunctionType(I32, [PTR, I64, PTR]), [outs, j, arr])
    b.store(g.field(arr, "data", PTR), g.slot(j, g.word(q.OUT_TABLE, PTR)))
    g.next_iteration()
    return outs


def quick_ir() -> str:
    """LLVM IR of `QUICK_SYMBOL` (see the module docstring)."""
    mod = ir.Module(name="tensorforge_aot_quick")
    fn = ir.Function(mod, ir.FunctionType(PTR, [PTR, PTR, I64]), name=q.QUICK_SYMBOL)
    fn.attributes.add("nounwind")
    g = _Gen(fn)
    b = g.b
    args, nargs = fn.args[1], fn.args[2]
    # no arguments: only take the fast arena (the pool's general path)
    takes = fn.append_basic_block("take_only")
    run = fn.append_basic_block("run")
    b.cbranch(b.icmp_signed("==", nargs, ir.Constant(I64, 0)), takes, run)
    b.position_at_end(takes)
    g.take()
    g.ret_code(q.OK)
    b.position_at_end(run)
    n_in = g.word(q.N_IN)
    g.unless(b.icmp_signed("==", nargs, n_in), q.NOT_QUICK)
    k = g.loop(n_in, "check")
    _check_input(g, g.word(k, PTR, base=args), k)
    g.next_iteration()
    g.take()
    outs = _make_outputs(g)
    in_table = g.word(q.IN_TABLE, PTR)
    k = g.loop(n_in, "in")  # the inputs are read where they are
    b.store(g.field(g.word(k, PTR, base=args), "data", PTR), g.slot(k, in_table))
    g.next_iteration()
    saved = g.call(q.SAVE_THREAD, ir.FunctionType(PTR, []), [])
    status = g.call(q.ENTRY, ir.FunctionType(I32, [PTR] * 5),
                    [g.word(i, PTR) for i in (q.IN_TABLE, q.OUT_TABLE, q.PARAMS, q.WORKSPACE,
                                              q.FAILED_AT)])
    g.call(q.RESTORE_THREAD, _VOID_FN, [saved])
    with b.if_then(b.icmp_signed("!=", status, ir.Constant(I32, 0)), likely=False):
        b.store(b.sext(status, I64), g.slot(q.STATUS))  # the arena stays taken: Python
        g.call(q.DECREF, _VOID_FN, [outs])  # reads the error from it
        g.ret_code(q.FAILED)
    _give_back(g)
    waiting = b.icmp_signed("!=", g.word(q.WAITING), ir.Constant(I64, 0))
    with b.if_then(waiting, likely=False):  # wake a thread waiting in the pool
        woke = g.call(q.CALL_OBJECT, ir.FunctionType(PTR, [PTR, PTR]),
                      [g.word(q.ON_RETURN, PTR), _NULL])
        with b.if_then(b.icmp_unsigned("==", woke, _NULL), likely=False):
            g.call(q.DECREF, _VOID_FN, [outs])
            b.ret(_NULL)  # its exception goes to the caller
        g.call(q.DECREF, _VOID_FN, [woke])
    b.ret(outs)
    return str(mod)
