"""The operator suite every target runs (`tensorforge.testing.TargetConformance`), on llvm
with core's generic CPU schedule (the CPU schedule variants are in `test_ops_numpy.py`)."""

from tensorforge.testing import TargetConformance


class TestLLVMConformance(TargetConformance):
    target, plugin, distribution = "llvm", "tensorforge_llvm.plugin", "tensorforge-target-llvm"
