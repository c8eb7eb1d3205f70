"""The operator suite on OpenCL (pocl's CPU device in CI)."""

import pytest

from tensorforge.testing import TargetConformance


@pytest.mark.opencl
class TestOpenCLConformance(TargetConformance):
    target, plugin, distribution = "opencl", "tensorforge_opencl.plugin", \
        "tensorforge-target-opencl"


class TestOpenCLSourceMode(TargetConformance):
    """Source-check mode (what a target without its device uses): no device needed."""

    target, plugin, distribution = "opencl", "tensorforge_opencl.plugin", \
        "tensorforge-target-opencl"
    mode = "source"
    only = ("matmul", "softmax", "float16", "bool")

    def check_source(self, source, case):
        assert "__kernel void" in source, case
        if case.name == "float16":
            assert "vload_half" in source and "vstore_half" in source
