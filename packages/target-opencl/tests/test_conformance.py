"""The operator suite on OpenCL (pocl's CPU device in CI)."""

import pytest

from tensorforge.testing import TargetConformance


@pytest.mark.opencl
class TestOpenCLConformance(TargetConformance):
    target, plugin, distribution = "opencl", "tensorforge_opencl.plugin", \
        "tensorforge-target-opencl"
