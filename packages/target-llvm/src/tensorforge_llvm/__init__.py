"""CPU code generation through LLVM (llvmlite): x86-64 and AArch64, JIT and shared libraries."""

from tensorforge_llvm._version import __version__

__all__ = ["__version__"]
