"""The dataflow graph: IR, op registry (pattern, type inference, numpy reference, TE compute),
a reference interpreter, and the graph passes."""

from .interpreter import run_reference
from .ir import Graph, Node, Value
from .registry import OpDef, OpPattern, all_ops, get_op, register_op

__all__ = ["Graph", "Node", "Value", "OpDef", "OpPattern", "all_ops", "get_op", "register_op",
           "run_reference"]
