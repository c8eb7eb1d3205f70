"""Fourier transforms: `dft` (ONNX DFT: forward, inverse, one-sided and its inverse along
any axis, complex numbers as a trailing dim of 2) and `stft` (windowed frames).

Direct O(N^2) sums as TE reductions in float64; the twiddle angle is 2*pi*((k*n) mod N)/N, so it
stays accurate for long transforms. The numpy references use numpy.fft."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import te
from ...expr import PrimExpr, const
from ..registry import OpPattern, TypeList, register_op


def _dft_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape, dt = types[0]
    axis, n = at["axis"], at["length"]
    out = list(shape)
    if at.get("inverse") and at.get("onesided"):
        out[axis], out[-1] = n, 1
    else:
        out[axis], out[-1] = (n // 2 + 1 if at.get("onesided") else n), 2
    return [(tuple(out), dt)]


def _complex(x: np.ndarray) -> np.ndarray:
    return x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)


def _dft_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = _complex(ins[0].astype("float64"))
    axis, n = at["axis"], at["length"]
    if at.get("inverse"):
        if at.get("onesided"):
            return [np.fft.irfft(x, n=n, axis=axis)[..., None].astype(ins[0].dtype)]
        y = np.fft.ifft(x, n=n, axis=axis)
    else:
        y = np.fft.fft(x, n=n, axis=axis)
        if at.get("onesided"):
            y = np.take(y, range(n // 2 + 1), axis=axis)
    return [np.stack([y.real, y.imag], -1).astype(ins[0].dtype)]


def _twiddle(k: Any, j: Any, n: int) -> PrimExpr:
    """2 pi ((k j) mod n) / n in float64 (sums are float64: sin(pi) is 1e-16, not 1e-7)."""
    r = te.floormod(k.astype("int64") * j.astype("int64"), const(n, "int64"))
    return r.astype("float64") * const(2 * math.pi / n, "float64")


def _dft_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    axis, n = at["axis"], at["length"]
    length = int(x.shape[axis].value)
    comps = int(x.shape[-1].value)
    inverse, onesided = at.get("inverse", False), at.get("onesided", False)
    f = "float64"
    used = min(length, n) if not (inverse and onesided) else min(length, n // 2 + 1)
    j = te.reduce_axis((0, used), name="j")

    def part(i: tuple, c: int) -> PrimExpr:
        src = tuple(j if d == axis else (const(c, "int32") if d == len(i) - 1 else v)
                    for d, v in enumerate(i))
        return x[src].astype(f)

    def body(*i: Any) -> PrimExpr:
        k = i[axis]
        th = _twiddle(k, j.var, n)
        cs, sn = te.cos(th), te.sin(th)
        xr = part(i, 0)
        xi = part(i, 1) if comps == 2 else const(0.0, f)
        if inverse and onesided:  # irfft: the mirrored bins counted twice, real result
            edge = te.any(j.var == const(0, "int32"), (j.var * const(2, "int32")) == const(
                n, "int32"))
            w = te.select(edge, const(1.0, f), const(2.0, f))
            return te.sum(w * (xr * cs - xi * sn) * const(1.0 / n, f), axis=j)
        sign = const(1.0 if inverse else -1.0, f)
        re = xr * cs - sign * xi * sn
        im = xi * cs + sign * xr * sn
        scale = const(1.0 / n if inverse else 1.0, f)
        return te.sum(te.select(i[-1] == const(0, "int32"), re, im) * scale, axis=j)

    y = te.compute(out[0][0], body, name="dft", tag="dft")
    if x.dtype != f:
        y = te.compute(y.shape, lambda *i: y[i].astype(x.dtype), name="cast", tag="elemwise")
    return [y]


register_op("dft", OpPattern.OPAQUE, _dft_infer, _dft_ref, _dft_compute,
            doc="discrete Fourier transform of x (..., 1|2) along attrs axis; attrs length, "
            "inverse, onesided")


# stft ---------------------------------------------------------------------------------------
def _stft_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    (b, length, _), dt = types[0]
    n, step = at["length"], at["step"]
    frames = 1 + (length - n) // step
    bins = n // 2 + 1 if at.get("onesided", True) else n
    return [((b, frames, bins, 2), dt)]


def _stft_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = _complex(ins[0].astype("float64"))
    n, step = at["length"], at["step"]
    w = ins[1].astype("float64") if len(ins) > 1 else np.ones(n)
    b, frames, bins, _ = _stft_infer([(ins[0].shape, "")], at)[0][0]
    out = np.zeros((b, frames, bins, 2))
    for fr in range(frames):
        seg = x[:, fr * step: fr * step + n] * w
        y = np.fft.fft(seg, n=n, axis=1)[:, :bins]
        out[:, fr, :, 0], out[:, fr, :, 1] = y.real, y.imag
    return [out.astype(ins[0].dtype)]


def _stft_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    win = ins[1] if len(ins) > 1 else None
    n, step = at["length"], at["step"]
    comps = int(x.shape[-1].value)
    f = "float64"
    j = te.reduce_axis((0, n), name="j")

    def body(b: Any, fr: Any, k: Any, c: Any) -> PrimExpr:
        t = fr * const(step, "int32") + j.var
        w = win[j].astype(f) if win is not None else const(1.0, f)
        xr = x[b, t, const(0, "int32")].astype(f) * w
        xi = x[b, t, const(1, "int32")].astype(f) * w if comps == 2 else const(0.0, f)
        th = _twiddle(k, j.var, n)
        cs, sn = te.cos(th), te.sin(th)
        return te.sum(te.select(c == const(0, "int32"), xr * cs + xi * sn, xi * cs - xr * sn),
                      axis=j)

    y = te.compute(out[0][0], body, name="stft", tag="dft")
    if x.dtype != f:
        y = te.compute(y.shape, lambda *i: y[i].astype(x.dtype), name="cast", tag="elemwise")
    return [y]


register_op("stft", OpPattern.OPAQUE, _stft_infer, _stft_ref, _stft_compute,
            doc="short-time Fourier transform of signal (B, L, 1|2)[, window (n,)]; attrs "
            "length (frame and DFT length), step, onesided")


# mel_weight_matrix --------------------------------------------------------------------------
def _mel_bins_np(n_mel: int, n_dft: int, sr: float, lo: float, hi: float) -> np.ndarray:
    lo_mel = 2595 * np.log1p(lo / 700) / np.log(10)
    hi_mel = 2595 * np.log1p(hi / 700) / np.log(10)
    f = np.arange(n_mel + 2) * ((hi_mel - lo_mel) / (n_mel + 2)) + lo_mel
    f = 700 * np.expm1(f / 2595 * np.log(10))
    return (((n_dft + 1) * f) // sr).astype(int)


def _mel_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    sr, lo, hi = (float(np.asarray(v).reshape(-1)[0]) for v in ins)
    n_mel, n_dft = at["mel_bins"], at["dft_length"]
    b = _mel_bins_np(n_mel, n_dft, sr, lo, hi)
    out = np.zeros((n_dft // 2 + 1, n_mel))
    for i in range(n_mel):
        left, center, right = b[i], b[i + 1], b[i + 2]
        if center == left:
            out[center, i] = 1
        else:
            for j in range(left, center + 1):
                out[j, i] = (j - left) / (center - left)
        for j in range(center, right):
            out[j, i] = (right - j) / (right - center)
    return [out.astype(at["dtype"])]


def _mel_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    sr, lo, hi = (v[(const(0, "int32"),) * len(v.shape)].astype("float64") for v in ins)
    n_mel, n_dft = at["mel_bins"], at["dft_length"]
    f64 = "float64"
    ln10 = const(math.log(10), f64)

    def mel(hz: PrimExpr) -> PrimExpr:
        return const(2595.0, f64) * te.log1p(hz / const(700.0, f64)) / ln10

    lo_m, hi_m = mel(lo), mel(hi)

    def edge(k: PrimExpr) -> PrimExpr:  # spectrogram bin of mel point k (an int64 value)
        m = k.astype(f64) * ((hi_m - lo_m) / const(float(n_mel + 2), f64)) + lo_m
        hz = const(700.0, f64) * te.expm1(m / const(2595.0, f64) * ln10)
        return te.floor(const(float(n_dft + 1), f64) * hz / sr).astype("int64")

    def f(j: Any, i: Any) -> PrimExpr:
        left, center, right = (edge(i.astype("int64") + const(d, "int64")) for d in range(3))
        jj = j.astype("int64")
        up = te.select(center == left, te.select(jj == center, const(1.0, f64),
                                                 const(0.0, f64)),
                       (jj - left).astype(f64) / te.max_expr(center - left, const(
                           1, "int64")).astype(f64))
        down = (right - jj).astype(f64) / te.max_expr(right - center, const(1, "int64")).astype(
            f64)
        v = te.select(te.all(jj >= center, jj < right), down,
                      te.select(te.all(jj >= left, jj <= center), up, const(0.0, f64)))
        return v.astype(out[0][1])

    return [te.compute(out[0][0], f, name="mel_weight_matrix", tag="injective")]


register_op("mel_weight_matrix", OpPattern.INJECTIVE,
            lambda types, at: [((at["dft_length"] // 2 + 1, at["mel_bins"]), at["dtype"])],
            _mel_ref, _mel_compute,
            doc="triangular mel filters (sample_rate, lower_edge_hertz, upper_edge_hertz read "
            "at run time); attrs mel_bins, dft_length, dtype")
