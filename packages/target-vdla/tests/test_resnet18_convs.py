"""Every distinct conv2d of ResNet-18 (the 3-channel stem padded to one input block), int8,
compiled for VDLA with two virtual threads and simulated: equal to numpy's int32 exactly."""

import numpy as np
import pytest

import tensorforge
from tensorforge_vdla.config import VDLAConfig
from tensorforge_vdla.strategies import conv2d_schedule
from tensorforge_vdla.workloads import conv_arrays, conv_reference, resnet18_convs

pytest.importorskip("tensorforge_onnx")
CFG = VDLAConfig()
WORKLOADS = resnet18_convs(CFG)


def test_all_eleven_workloads_are_found():
    assert len(WORKLOADS) == 11
    stem = WORKLOADS[0][1]
    assert (stem.icb, stem.kh, stem.stride, stem.pad) == (1, 7, 2, 3)  # 3 channels -> 16


@pytest.mark.parametrize("key,shape", WORKLOADS, ids=[k for k, _ in WORKLOADS])
def test_resnet18_conv_is_exact(vdla, key, shape):
    s, args = conv2d_schedule(shape, vdla(), n_vthreads=2)
    mod = tensorforge.build(s, args, target="vdla")
    a = conv_arrays(shape, CFG, seed=1)
    if key.startswith("conv2d_1x3x"):  # the stem: channels 3..15 are zero padding
        a["data"][:, :, :, :, 3:] = 0
        a["x"][:, 3:] = 0
    out = np.zeros((1, shape.ocb, shape.oh, shape.ow, CFG.block_out), np.int32)
    mod(a["data"], a["kernel"], out)
    np.testing.assert_array_equal(out, conv_reference(shape, a["x"], a["w"], CFG.block_out))
    assert mod.last_report.utilization > 0.2
