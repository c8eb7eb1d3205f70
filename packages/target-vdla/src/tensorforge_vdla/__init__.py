"""The VDLA accelerator: ISA, a cycle-approximate simulator and its tensorization intrinsics."""

from tensorforge_vdla._version import __version__

__all__ = ["__version__"]
