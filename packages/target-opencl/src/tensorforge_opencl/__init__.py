"""OpenCL C code generation; kernels run through pyopencl (the `runtime` extra), e.g. on pocl."""

from tensorforge_opencl._version import __version__

__all__ = ["__version__"]
