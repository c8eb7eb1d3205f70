"""The FMA peak calibration kernel; it lives in `tensorforge.bench.fma` (so `tforge bench`
works from an installed package) and is re-exported here for the issue-3 benchmarks."""

from tensorforge.bench.fma import fma_flops, fma_peak_func, peak_kernel

__all__ = ["fma_flops", "fma_peak_func", "peak_kernel"]
