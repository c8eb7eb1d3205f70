"""The operator suite's Metal sources, checked with clang (no Mac needed): every case, with
the generic GPU schedule and the registered strategy."""

import pytest

from tensorforge.testing import TargetConformance


class TestMetalSourcesPassClang(TargetConformance):
    target, plugin, distribution = "metal", "tensorforge_metal.plugin", \
        "tensorforge-target-metal"
    mode = "source"

    def check_source(self, source, case):
        from tensorforge_metal.check import check_source, find_clang

        if find_clang() is None:
            pytest.skip("clang is not installed (apt install clang)")
        check_source(source)
