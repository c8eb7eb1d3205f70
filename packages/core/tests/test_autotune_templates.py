"""Every sampled config of the CPU templates builds and computes the right thing."""

from __future__ import annotations

import random

import numpy as np

import tensorforge
from tensorforge.autotune import Task
from tensorforge.autotune.features import FEATURE_LENGTH, feature_names, features_of


def test_matmul_template_configs_match_numpy(llvm_target) -> None:
    M, N, K = 32, 48, 16
    task = Task("matmul_packed.llvm", (M, N, K), "llvm -num-threads=1")
    space = task.config_space
    assert len(space) > 500
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype="float32")
    b = rng.standard_normal((K, N), dtype="float32")
    picks = [space.default_index] + random.Random(0).sample(range(len(space)), 19)
    for idx in picks:
        s, args = task.instantiate(idx)
        f = tensorforge.build(s, args, target=task.target_str)
        c = np.zeros((M, N), "float32")
        f(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4,
                                   err_msg=str(task.config(idx)))


def test_conv_template_configs_agree(llvm_target) -> None:
    shape = (1, 16, 8, 8, 32, 3, 3, 1, 1, 8, 16)
    task = Task("conv2d_nchwc.llvm", shape, "llvm -num-threads=1")
    space = task.config_space
    rng = np.random.default_rng(1)
    outs = []
    for idx in [space.default_index] + random.Random(1).sample(range(len(space)), 5):
        s, args = task.instantiate(idx)
        f = tensorforge.build(s, args, target=task.target_str)
        arrays = [rng.standard_normal([int(x.value) for x in a.shape]).astype("float32")
                  if i < 2 else np.zeros([int(x.value) for x in a.shape], "float32")
                  for i, a in enumerate(args)]
        if outs:
            arrays[:2] = outs[0][:2]
        f(*arrays)
        outs.append(arrays)
    # the NCHWc result, checked once against numpy in NCHW
    data, kernel, out = outs[0]
    x = data.transpose(0, 1, 4, 2, 3).reshape(1, 16, 8, 8)
    w = kernel.transpose(0, 5, 1, 4, 2, 3).reshape(32, 16, 3, 3)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 32, 8, 8), "float32")
    for r in range(3):
        for c in range(3):
            ref += np.einsum("nchw,oc->nohw", xp[:, :, r:r + 8, c:c + 8], w[:, :, r, c])
    got = out.reshape(1, 2, 8, 8, 16).transpose(0, 1, 4, 2, 3).reshape(1, 32, 8, 8)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    for arrays in outs[1:]:
        np.testing.assert_allclose(arrays[2], out, rtol=1e-4, atol=1e-4)


def test_features_fixed_length_and_distinct(llvm_target) -> None:
    task = Task("matmul_packed.llvm", (64, 64, 64), "llvm -num-threads=1")
    assert len(feature_names()) == FEATURE_LENGTH
    feats = [features_of(task, i) for i in range(0, len(task.config_space), 97)]
    assert all(f is not None and f.shape == (FEATURE_LENGTH,) for f in feats)
    assert all(np.isfinite(f).all() for f in feats)
    assert len({f.tobytes() for f in feats}) == len(feats)
    names = feature_names()
    f = dict(zip(names, features_of(task, task.config_space.default_index)))
    assert f["flops"] > 17 and f["loop0_vec"] == 1.0 and f["depth"] >= 4
