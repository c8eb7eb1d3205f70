"""A C-like GPU language described as data: what `CPrinter` needs to spell a kernel.

Every difference between OpenCL C, CUDA C++ and Metal that a table can express lives in a
frozen `Dialect`: qualifiers per memory scope, how thread and block indices are read, barrier
spellings, type and vector names, math function names (merged over `BASE_MATH`), shuffle
templates, a preamble built from the features a pre-scan found, and the device's capabilities.
A backend is then a `Dialect(...)` (or `dataclasses.replace(OPENCL, ...)`) plus its runtime.

Templates are `str.format` strings: math entries take positional `{0}`, `{1}` ...; shuffles
take `{value}`, `{offset}`, `{width}`; parameters take `{qual}`, `{const}`, `{type}`,
`{restrict}`, `{name}`, `{index}`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


class Scope(enum.Enum):
    """Memory scopes the printer qualifies (accelerator scopes never reach a C dialect)."""

    GLOBAL = "global"
    SHARED = "shared"
    LOCAL = "local"


class SyncKind(enum.Enum):
    """What a barrier orders: `storage_sync("shared")` etc."""

    SHARED = "shared"
    GLOBAL = "global"
    WARP = "warp"


class ThreadAxis(enum.Enum):
    """The two levels of the launch: blocks of the grid and threads of a block."""

    BLOCK = "blockIdx"
    THREAD = "threadIdx"


@dataclass(frozen=True)
class Capabilities:
    """Limits and abilities of the device class (the verifier and schedules read them)."""

    warp_size: int = 1
    max_threads_per_block: int = 1024
    max_shared_bytes: int = 48 * 1024
    shuffle: bool = False
    dtypes: tuple[str, ...] = ("float32", "int32", "int64", "int8", "uint8", "int16", "bool")


#: math spellings shared by the C dialects; `(op, element dtype)` or `(op, "")` for any dtype
BASE_MATH: Mapping[tuple[str, str], str] = MappingProxyType({
    ("exp", ""): "exp({0})", ("exp2", ""): "exp2({0})", ("log", ""): "log({0})",
    ("log2", ""): "log2({0})", ("log10", ""): "log10({0})", ("sqrt", ""): "sqrt({0})",
    ("rsqrt", ""): "rsqrt({0})", ("tanh", ""): "tanh({0})", ("erf", ""): "erf({0})",
    ("floor", ""): "floor({0})", ("ceil", ""): "ceil({0})", ("round", ""): "rint({0})",
    ("nearbyint", ""): "rint({0})", ("trunc", ""): "trunc({0})", ("sin", ""): "sin({0})",
    ("cos", ""): "cos({0})", ("tan", ""): "tan({0})", ("atan", ""): "atan({0})",
    ("asin", ""): "asin({0})", ("acos", ""): "acos({0})", ("sinh", ""): "sinh({0})",
    ("cosh", ""): "cosh({0})", ("asinh", ""): "asinh({0})", ("acosh", ""): "acosh({0})",
    ("atanh", ""): "atanh({0})",
    ("log1p", ""): "log1p({0})", ("expm1", ""): "expm1({0})",
    ("pow", ""): "pow({0}, {1})", ("fma", ""): "fma({0}, {1}, {2})",
    ("fabs", ""): "fabs({0})", ("abs", "float"): "fabs({0})", ("abs", "int"): "abs({0})",
    ("sigmoid", "float32"): "(1.0f / (1.0f + exp(-({0}))))",
    ("sigmoid", "float64"): "(1.0 / (1.0 + exp(-({0}))))",
    # NaN-propagating, the first of equal operands (tensorforge.expr.numeric): a preamble
    # helper per type (`nan_minmax_helpers`); C's fmin/fmax drop a NaN
    ("min", "float"): "tf_fmin_{type}({0}, {1})", ("max", "float"): "tf_fmax_{type}({0}, {1})",
    ("min", "int"): "min({0}, {1})", ("max", "int"): "max({0}, {1})",
    # C promotes narrow integers to int inside expressions: cast back, or min/max of a
    # uchar and an int is ambiguous
    **{(op, t): f"{op}(({{type}})({{0}}), ({{type}})({{1}}))" for op in ("min", "max")
       for t in ("int8", "uint8", "int16", "uint16")},
    ("fmod", ""): "fmod({0}, {1})",
    # integer bit operations in the operands' type (C promotes narrow integers to int; the
    # ops that emit shifts guard the amount); operands in parentheses (the printer strips
    # one enclosing pair, which function-call templates do not need)
    **{(op, ""): f"(({{type}})(({{0}}) {sym} ({{1}})))" for op, sym in (
        ("bitwise_and", "&"), ("bitwise_or", "|"), ("bitwise_xor", "^"),
        ("shift_left", "<<"), ("shift_right", ">>"))},
})

#: element dtype -> C type name shared by the dialects
BASE_TYPES: Mapping[str, str] = MappingProxyType({
    "float32": "float", "float64": "double", "float16": "half", "int8": "char",
    "uint8": "uchar", "int16": "short", "uint16": "ushort", "int32": "int", "uint32": "uint",
    "int64": "long", "uint64": "ulong", "bool": "bool",
})


@dataclass(frozen=True)
class Dialect:
    """How one C-like GPU language spells a kernel (see the module docstring)."""

    name: str
    #: what precedes the return type and name: "__kernel void", 'extern "C" __global__ void'
    kernel_qualifier: str
    #: address-space qualifier of pointer parameters, and of allocations, per scope
    param_qualifier: Mapping[Scope, str]
    alloc_qualifier: Mapping[Scope, str]
    #: the expression that reads each launch index, e.g. "(int)get_local_id(0)"
    thread_index: Mapping[tuple[ThreadAxis, int], str]
    #: barrier spelling per kind; None: the dialect cannot (a compile error naming it)
    barrier: Mapping[SyncKind, str | None]
    #: whether a cast of a pointer must repeat its scope (OpenCL's address spaces)
    scope_in_pointer_type: bool = True
    restrict: str = "restrict"
    #: parameters the language passes implicitly (Metal's thread positions)
    implicit_params: tuple[str, ...] = ()
    buffer_param: str = "{qual}{const}{type}* {restrict}{name}"
    scalar_param: str = "{type} {name}"
    #: text between the qualifier and the name, from the block size ("" or launch bounds)
    kernel_attrs: Callable[[tuple[int, int, int]], str] | None = None
    type_names: Mapping[str, str] = field(default_factory=lambda: BASE_TYPES)
    #: storage type of bool buffers (bool has no defined size in kernel arguments)
    bool_storage: str = "uchar"
    #: vector type name "{type}{lanes}" and constructor; lanes the language has
    vector_type: str = "{type}{lanes}"
    vector_ctor: str = "(({vtype})({args}))"
    vector_broadcast: str = "(({vtype})({value}))"
    #: lane k of a vector value: a template of `lane`, or one name per lane (".x" ".y" ...)
    lane_access: str | tuple[str, ...] = ".s{lane:x}"
    vector_lanes: tuple[int, ...] = (2, 3, 4, 8, 16)
    #: whether +, *, compares ... work on vector types (CUDA's float4 has no operators)
    vector_arith: bool = True
    #: element dtypes a dialect without vector arithmetic still copies as vectors (a store of
    #: a contiguous load, e.g. a cooperative fetch: CUDA's float4 loads and stores)
    vector_copy: tuple[str, ...] = ()
    #: contiguous vector load/store of `lanes` elements at `ptr + offset`, where `offset` is
    #: proven a multiple of `lanes` (a cast to a vector pointer is then safe) ...
    vector_load: str = "vload{lanes}(0, {ptr} + {offset})"
    vector_store: str = "vstore{lanes}({value}, 0, {ptr} + {offset})"
    #: ... and where it is not (None: load and store lane by lane)
    vector_load_unaligned: str | None = "vload{lanes}(0, {ptr} + {offset})"
    vector_store_unaligned: str | None = "vstore{lanes}({value}, 0, {ptr} + {offset})"
    #: the bits of `{0}` read as `{type}` (same width); None: the dialect cannot
    reinterpret: str | None = "as_{type}({0})"
    #: vector conversion; None: a C cast
    vector_convert: str | None = "convert_{vtype}({value})"
    math: Mapping[tuple[str, str], str] = field(default_factory=lambda: BASE_MATH)
    float_suffix: str = "f"
    inf: str = "INFINITY"
    nan: str = "NAN"
    #: float16 storage only: loads and stores convert, arithmetic runs in float32
    half_storage_only: bool = False
    half_load: str = "vload_half({offset}, {ptr})"
    half_store: str = "vstore_half({value}, {offset}, {ptr})"
    half_vector_load: str = "vload_half{lanes}(0, {ptr} + {offset})"
    half_vector_store: str = "vstore_half{lanes}({value}, 0, {ptr} + {offset})"
    int64_suffix: str = "L"
    shuffle_down: str | None = None
    shuffle_idx: str | None = None
    unroll_pragma: str = ""
    #: extra source before the kernels, from the features the pre-scan found
    preamble: Callable[[Any], str] | None = None
    capabilities: Capabilities = field(default_factory=Capabilities)

    def __post_init__(self) -> None:
        for axis in ThreadAxis:
            for dim in range(3):
                if (axis, dim) not in self.thread_index:
                    raise ValueError(f"dialect {self.name!r}: thread_index lacks "
                                     f"{axis.value}.{'xyz'[dim]}")
        if self.math is not BASE_MATH:  # dialect entries override the shared ones
            object.__setattr__(self, "math", MappingProxyType({**BASE_MATH, **self.math}))
        if self.type_names is not BASE_TYPES:
            object.__setattr__(self, "type_names",
                               MappingProxyType({**BASE_TYPES, **self.type_names}))

    def type_name(self, element: str) -> str:
        try:
            return self.type_names[element]
        except KeyError:
            raise ValueError(f"dialect {self.name!r} has no type for {element}") from None

    def lane(self, k: int) -> str:
        """How lane `k` of a vector value is read (`.s3`, `.w` ...)."""
        la = self.lane_access
        return "." + la[k] if isinstance(la, tuple) else la.format(lane=k)

    def math_template(self, op: str, element: str) -> str | None:
        """The spelling of math call `op` on `element` values: exact dtype, then its class
        ("float", "int"), then any dtype."""
        klass = "float" if element.startswith("float") else "int"
        for key in ((op, element), (op, klass), (op, "")):
            t = self.math.get(key)
            if t is not None:
                return t
        return None


_FLOOR_HELPERS = """\
{q} {t} tf_floordiv_{t}({t} a, {t} b) {{
  {t} q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}}
{q} {t} tf_floormod_{t}({t} a, {t} b) {{
  {t} r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}}"""


def floor_helpers(features: Any, dialect: Dialect, qualifier: str = "inline") -> list[str]:
    """Integer floor division and modulo for the int types the kernels divide."""
    return [_FLOOR_HELPERS.format(q=qualifier, t=dialect.type_name(t))
            for t in sorted(features.floor_int)]


def nan_minmax_helpers(features: Any, dialect: Dialect, qualifier: str = "inline",
                       vector_pick: str = "select({b}, {a}, {cond})") -> list[str]:
    """`tf_fmax_<type>` / `tf_fmin_<type>` for the float types the kernels take a min or max
    of: NaN in either operand gives NaN, equal operands give the first (so `max(-0.0, 0.0)` is
    -0.0, as `tensorforge.expr.numeric` and ONNX Runtime's Relu). `vector_pick` spells an
    elementwise choice for vector types (OpenCL's and Metal's `select`)."""
    out = []
    for elem, lanes in sorted(features.minmax):
        if elem == "float16" and dialect.half_storage_only:
            elem = "float32"
        base = dialect.type_name(elem)
        t = base if lanes == 1 else dialect.vector_type.format(type=base, lanes=lanes)
        for name, op in (("fmax", ">="), ("fmin", "<=")):
            cond = f"(a {op} b) || isnan(a)"
            pick = (f"({cond}) ? a : b" if lanes == 1 else
                    vector_pick.format(a="a", b="b", cond=cond))
            out.append(f"{qualifier} {t} tf_{name}_{t}({t} a, {t} b) {{ return {pick}; }}")
    return list(dict.fromkeys(out))
