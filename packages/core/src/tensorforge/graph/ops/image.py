"""Image-layout ops: `col2im` (sum of sliding blocks into an image), `roi_align` (pooled
bilinear samples of regions of interest), `max_unpool` (values to the positions their max
pool took them from), `det` (determinants of small matrices).

All are gathers over the output (each output element sums or picks what lands on it), so
there are no write conflicts; reads at run-time positions are clamped inside the input."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ... import te
from ...errors import TensorforgeError
from ...expr import PrimExpr, const
from ..registry import OpPattern, TypeList, register_op


def _dims(t: Any) -> list[int]:
    return [int(s.value) for s in t.shape]


# col2im -------------------------------------------------------------------------------------
def _blocks(at: dict[str, Any]) -> list[int]:
    img, k, d, s, p = (at[n] for n in ("image", "block", "dilations", "strides", "pads"))
    m = len(img)
    return [(img[i] + p[i] + p[m + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(m)]


def _col2im_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0]
    img, k, d, s, p = (at[n] for n in ("image", "block", "dilations", "strides", "pads"))
    m = len(img)
    nb = _blocks(at)
    kk = int(np.prod(k))
    c = x.shape[1] // kk
    out = np.zeros((x.shape[0], c, *img), x.dtype)
    for ko in itertools.product(*[range(v) for v in k]):
        kf = int(np.ravel_multi_index(ko, k))
        for lo in itertools.product(*[range(v) for v in nb]):
            lf = int(np.ravel_multi_index(lo, nb))
            pos = [lo[i] * s[i] - p[i] + ko[i] * d[i] for i in range(m)]
            if all(0 <= pos[i] < img[i] for i in range(m)):
                out[(slice(None), slice(None), *pos)] += x[:, kf::kk, lf]
    return [out]


def _col2im_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    img, k, d, s, p = (at[n] for n in ("image", "block", "dilations", "strides", "pads"))
    m = len(img)
    nb = _blocks(at)
    kk = int(np.prod(k))
    ks = [te.reduce_axis((0, v), name=f"k{i}") for i, v in enumerate(k)]
    i32 = "int32"

    def f(n: Any, c: Any, *pos: Any) -> PrimExpr:
        conds, lidx = [], []
        for i in range(m):
            t = pos[i] + const(p[i], i32) - ks[i].var * const(d[i], i32)
            conds += [t >= const(0, i32), te.floormod(t, const(s[i], i32)) == const(0, i32),
                      t < const(nb[i] * s[i], i32)]
            lidx.append(te.floordiv(t, const(s[i], i32)))
        kf, lf = ks[0].var, lidx[0]
        for i in range(1, m):
            kf = kf * const(k[i], i32) + ks[i].var
            lf = lf * const(nb[i], i32) + lidx[i]
        ok = te.all(*conds)
        lf = te.select(ok, lf, const(0, i32))
        return te.sum(x[n, c * const(kk, i32) + kf, lf], axis=ks, where=ok)

    return [te.compute(out[0][0], f, name="col2im", tag="col2im")]


register_op("col2im", OpPattern.OPAQUE,
            lambda types, at: [((types[0][0][0], types[0][0][1] // int(np.prod(at["block"])),
                                 *at["image"]), types[0][1])],
            _col2im_ref, _col2im_compute,
            doc="sum sliding blocks (N, C*prod(block), L) into images (N, C, *image); attrs "
            "image, block, dilations, strides, pads (begins then ends)")


# roi_align ----------------------------------------------------------------------------------
def _roi_params(roi: Any, at: dict[str, Any], xp: Any) -> tuple[Any, ...]:
    """(start_h, start_w, roi_h, roi_w) of one roi (x1, y1, x2, y2) in image coordinates."""
    off = 0.5 if at["half_pixel"] else 0.0
    sc = at["spatial_scale"]
    sw, sh = roi[0] * sc - off, roi[1] * sc - off
    rw, rh = roi[2] * sc - off - sw, roi[3] * sc - off - sh
    if not at["half_pixel"]:
        rw, rh = xp.maximum(rw, 1.0), xp.maximum(rh, 1.0)
    return sh, sw, rh, rw


def grid_bound(size: int, pooled: int) -> int:
    """The static bound on samples per bin when sampling_ratio is 0 (adaptive): enough for
    any region inside the image. A region needing more gives NaN (see `roi_align`)."""
    return max(1, math.ceil(size / pooled)) + 2


def _roi_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, rois, bidx = ins[0].astype("float64"), ins[1].astype("float64"), ins[2]
    ph_n, pw_n = at["out"]
    h, w = x.shape[2:]
    out = np.zeros((rois.shape[0], x.shape[1], ph_n, pw_n))
    for r in range(rois.shape[0]):
        sh, sw, rh, rw = _roi_params(rois[r], at, np)
        bh, bw = rh / ph_n, rw / pw_n
        sr = at["sampling_ratio"]
        gh = sr if sr > 0 else int(np.ceil(rh / ph_n))
        gw = sr if sr > 0 else int(np.ceil(rw / pw_n))
        if sr <= 0 and (gh > grid_bound(h, ph_n) or gw > grid_bound(w, pw_n)):
            out[r] = np.nan
            continue
        count = max(gh * gw, 1)
        img = x[int(bidx[r])]
        for ph, pw in itertools.product(range(ph_n), range(pw_n)):
            vals = []
            for iy, ix in itertools.product(range(gh), range(gw)):
                y = sh + ph * bh + (iy + 0.5) * bh / gh
                xx = sw + pw * bw + (ix + 0.5) * bw / gw
                vals.append(_bilinear_np(img, y, xx, h, w, at["mode"]))
            v = np.stack(vals) if vals else np.zeros((1, x.shape[1]))
            out[r, :, ph, pw] = v.sum(0) / count if at["mode"] == "avg" else v.max(0)
    return [out.astype(ins[0].dtype)]


def _bilinear_np(img: np.ndarray, y: float, x: float, h: int, w: int, mode: str
                 ) -> np.ndarray:
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return np.zeros(img.shape[0])
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    terms = [hy * hx * img[:, y0, x0], hy * lx * img[:, y0, x1], ly * hx * img[:, y1, x0],
             ly * lx * img[:, y1, x1]]
    return sum(terms) if mode == "avg" else np.max(np.stack(terms), 0)


def _roi_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, rois, bidx = ins
    h, w = _dims(x)[2:]
    ph_n, pw_n = at["out"]
    f = "float32" if x.dtype != "float64" else "float64"
    sr = at["sampling_ratio"]
    bound_h = sr if sr > 0 else grid_bound(h, ph_n)
    bound_w = sr if sr > 0 else grid_bound(w, pw_n)
    iy = te.reduce_axis((0, bound_h), name="iy")
    ix = te.reduce_axis((0, bound_w), name="ix")
    i32 = "int32"

    def cf(v: float) -> PrimExpr:
        return const(v, f)

    def params(r: Any) -> tuple[Any, ...]:
        roi = [rois[r, const(k, i32)].astype(f) for k in range(4)]
        off, sc = cf(0.5 if at["half_pixel"] else 0.0), cf(at["spatial_scale"])
        sw, sh = roi[0] * sc - off, roi[1] * sc - off
        rw, rh = roi[2] * sc - off - sw, roi[3] * sc - off - sh
        if not at["half_pixel"]:
            rh, rw = te.max_expr(rh, cf(1.0)), te.max_expr(rw, cf(1.0))
        gh = const(float(sr), f) if sr > 0 else te.ceil(rh / cf(float(ph_n)))
        gw = const(float(sr), f) if sr > 0 else te.ceil(rw / cf(float(pw_n)))
        return sh, sw, rh, rw, gh, gw

    def sample(r: Any, c: Any, ph: Any, pw: Any) -> tuple[PrimExpr, PrimExpr]:
        sh, sw, rh, rw, gh, gw = params(r)
        bh, bw = rh / cf(float(ph_n)), rw / cf(float(pw_n))
        y = sh + ph.astype(f) * bh + (iy.var.astype(f) + cf(0.5)) * bh / gh
        xx = sw + pw.astype(f) * bw + (ix.var.astype(f) + cf(0.5)) * bw / gw
        inside = te.all(y >= cf(-1.0), y <= cf(float(h)), xx >= cf(-1.0), xx <= cf(float(w)))
        y, xx = te.max_expr(y, cf(0.0)), te.max_expr(xx, cf(0.0))
        y0, x0 = y.astype(i32), xx.astype(i32)
        ylast, xlast = y0 >= const(h - 1, i32), x0 >= const(w - 1, i32)
        y0 = te.select(ylast, const(h - 1, i32), y0)
        x0 = te.select(xlast, const(w - 1, i32), x0)
        y = te.select(ylast, y0.astype(f), y)
        xx = te.select(xlast, x0.astype(f), xx)
        y1 = te.select(ylast, y0, y0 + const(1, i32))
        x1 = te.select(xlast, x0, x0 + const(1, i32))
        ly, lx = y - y0.astype(f), xx - x0.astype(f)
        hy, hx = cf(1.0) - ly, cf(1.0) - lx
        b = bidx[r].astype(i32)

        def px(yy: Any, xq: Any) -> PrimExpr:
            return x[b, c, yy, xq].astype(f)

        terms = [hy * hx * px(y0, x0), hy * lx * px(y0, x1), ly * hx * px(y1, x0),
                 ly * lx * px(y1, x1)]
        if at["mode"] == "avg":
            v = terms[0] + terms[1] + terms[2] + terms[3]
        else:
            v = te.max_expr(te.max_expr(terms[0], terms[1]), te.max_expr(terms[2], terms[3]))
        used = te.all(iy.var.astype(f) < gh, ix.var.astype(f) < gw)
        return te.select(inside, v, cf(0.0)), used

    def body(r: Any, c: Any, ph: Any, pw: Any) -> PrimExpr:
        v, used = sample(r, c, ph, pw)
        if at["mode"] == "avg":
            return te.sum(v, axis=[iy, ix], where=used)
        return te.max(v, axis=[iy, ix], where=used)

    red = te.compute(out[0][0], body, name="roi_align_reduce")

    def finish(r: Any, c: Any, ph: Any, pw: Any) -> PrimExpr:
        _, _, _, _, gh, gw = params(r)
        v = red[r, c, ph, pw]
        if at["mode"] == "avg":
            v = v / te.max_expr(gh * gw, cf(1.0))
        too_many = te.any(gh > cf(float(bound_h)), gw > cf(float(bound_w)))
        return te.select(too_many, cf(float("nan")), v).astype(x.dtype)

    return [te.compute(out[0][0], finish, name="roi_align", tag="elemwise")]


register_op("roi_align", OpPattern.OPAQUE,
            lambda types, at: [((types[1][0][0], types[0][0][1], *at["out"]), types[0][1])],
            _roi_ref, _roi_compute,
            doc="RoiAlign (x, rois (R, 4), batch_indices (R,)); attrs out, mode (avg, max), "
            "sampling_ratio (0: adaptive, at most grid_bound samples per bin: a region "
            "needing more gives NaN), spatial_scale, half_pixel")


# max_unpool ---------------------------------------------------------------------------------
def _unpool_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, idx = ins[0], ins[1].astype("int64")
    out = np.zeros(int(np.prod(at["shape"])), x.dtype)
    out[idx.reshape(-1)] = x.reshape(-1)
    return [out.reshape(at["shape"])]


def _unpool_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, idx = ins
    xs = _dims(x)
    n = int(np.prod(xs))
    shape = list(at["shape"])
    j = te.reduce_axis((0, n), name="j")

    def unravel(v: Any, dims: list[int]) -> tuple:
        res = []
        for s in reversed(dims):
            res.append(te.floormod(v, const(s, "int32")))
            v = te.floordiv(v, const(s, "int32"))
        return tuple(res[::-1])

    def src(*o: Any) -> PrimExpr:  # the last input position whose index is this output's
        flat = o[0]
        for d in range(1, len(o)):
            flat = flat * const(shape[d], "int32") + o[d]
        hit = idx[unravel(j.var, xs)].astype("int64") == flat.astype("int64")
        return te.max(te.select(hit, j.var, const(-1, "int32")), axis=j)

    pos = te.compute(out[0][0], src, name="max_unpool_source")

    def f(*o: Any) -> PrimExpr:
        p = pos[o]
        v = x[unravel(te.max_expr(p, const(0, "int32")), xs)]
        return te.select(p >= const(0, "int32"), v, const(0, x.dtype))

    return [te.compute(out[0][0], f, name="max_unpool", tag="injective")]


register_op("max_unpool", OpPattern.OPAQUE, lambda types, at: [(tuple(at["shape"]),
                                                                types[0][1])],
            _unpool_ref, _unpool_compute,
            doc="zeros of attrs shape with x's values at the flattened positions in indices")


# det ----------------------------------------------------------------------------------------
DET_MAX_N = 5


def _det_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    n = _dims(x)[-1]
    f = "float64" if x.dtype == "float64" else "float32"
    perms = list(itertools.permutations(range(n)))

    def sign(p: tuple[int, ...]) -> int:
        s, seen = 1, list(p)
        for i in range(len(seen)):
            while seen[i] != i:
                j = seen[i]
                seen[i], seen[j] = seen[j], seen[i]
                s = -s
        return s

    def f_(*b: Any) -> PrimExpr:  # Leibniz: sum over permutations
        total = None
        for p in perms:
            term = const(float(sign(p)), f)
            for i, j in enumerate(p):
                term = term * x[(*b, const(i, "int32"), const(j, "int32"))].astype(f)
            total = term if total is None else total + term
        assert total is not None
        return total.astype(x.dtype)

    return [te.compute(out[0][0], f_, name="det", tag="injective")]


def _det_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape, dt = types[0]
    if shape[-1] > DET_MAX_N:
        raise TensorforgeError(f"det of {shape[-1]}x{shape[-1]} matrices: the generated "
                               f"kernel sums the n! permutation terms, up to n={DET_MAX_N}")
    return [(tuple(shape[:-2]), dt)]


register_op("det", OpPattern.INJECTIVE, _det_infer,
            lambda ins, at: [np.linalg.det(ins[0]).astype(ins[0].dtype)], _det_compute,
            doc="determinants of the (..., n, n) matrices (n <= DET_MAX_N, Leibniz formula)")


# deform_conv2d --------------------------------------------------------------------------------
def _bilinear_zero_np(img: np.ndarray, y: float, x: float) -> float:
    h, w = img.shape
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    total = 0.0
    for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            if 0 <= yy < h and 0 <= xx < w:
                total += wy * wx * img[yy, xx]
    return total


def _deform_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, w, off = (a.astype("float64") for a in ins[:3])
    bias = ins[3] if len(ins) > 3 and ins[3].size else None
    mask = ins[4].astype("float64") if len(ins) > 4 else None
    n, ic = x.shape[:2]
    oc, cg, kh, kw = w.shape
    oh, ow = off.shape[2:]
    (sh, sw), (dh, dw), pads = at["strides"], at["dilations"], at["pads"]
    g, og_n = at["groups"], at["offset_groups"]
    out = np.zeros((n, oc, oh, ow))
    for b, o, c, i, j in itertools.product(range(n), range(oc), range(cg), range(oh),
                                           range(ow)):
        ci = (o // (oc // g)) * cg + c
        og = ci // (ic // og_n)
        for ky, kx in itertools.product(range(kh), range(kw)):
            k = (og * kh + ky) * kw + kx
            py = -pads[0] + sh * i + ky * dh + off[b, 2 * k, i, j]
            px = -pads[1] + sw * j + kx * dw + off[b, 2 * k + 1, i, j]
            m = mask[b, k, i, j] if mask is not None else 1.0
            out[b, o, i, j] += w[o, c, ky, kx] * m * _bilinear_zero_np(x[b, ci], py, px)
    if bias is not None:
        out += bias.reshape(1, -1, 1, 1)
    return [out.astype(ins[0].dtype)]


def _deform_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, w, off = ins[:3]
    bias = ins[3] if len(ins) > 3 and int(ins[3].shape[0].value) else None
    mask = ins[4] if len(ins) > 4 else None
    ic, h, wd = (int(v.value) for v in x.shape[1:])
    oc, cg, kh, kw = (int(v.value) for v in w.shape)
    (sh, sw), (dh, dw), pads = at["strides"], at["dilations"], at["pads"]
    g, og_n = at["groups"], at["offset_groups"]
    f = "float32" if x.dtype != "float64" else "float64"
    i32 = "int32"
    rc = te.reduce_axis((0, cg), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")

    def body(b: Any, o: Any, i: Any, j: Any) -> PrimExpr:
        ci = (o // (oc // g)) * cg + rc.var
        og = ci // (ic // og_n)
        k = (og * kh + ry.var) * kw + rx.var
        py = (i * sh + ry.var * dh - pads[0]).astype(f) + off[b, k * 2, i, j].astype(f)
        px = (j * sw + rx.var * dw - pads[1]).astype(f) + off[b, k * 2 + 1, i, j].astype(f)
        y0f, x0f = te.floor(py), te.floor(px)
        fy, fx = py - y0f, px - x0f
        y0, x0 = y0f.astype(i32), x0f.astype(i32)
        acc = None
        for dy, wy in ((0, const(1.0, f) - fy), (1, fy)):
            for dx, wx in ((0, const(1.0, f) - fx), (1, fx)):
                yy, xx = y0 + const(dy, i32), x0 + const(dx, i32)
                ok = te.all(yy >= const(0, i32), yy < const(h, i32), xx >= const(0, i32),
                            xx < const(wd, i32))
                v = x[b, ci, te.select(ok, yy, const(0, i32)),
                      te.select(ok, xx, const(0, i32))].astype(f)
                term = te.select(ok, wy * wx * v, const(0.0, f))
                acc = term if acc is None else acc + term
        assert acc is not None
        m = mask[b, k, i, j].astype(f) if mask is not None else const(1.0, f)
        return te.sum(w[o, rc.var, ry.var, rx.var].astype(f) * m * acc, axis=[rc, ry, rx])

    y = te.compute(out[0][0], body, name="deform_conv2d", tag="deform_conv2d")
    return [te.compute(y.shape, lambda b, o, i, j: (y[b, o, i, j] + (
        bias[o].astype(f) if bias is not None else const(0.0, f))).astype(x.dtype),
        name="deform_bias", tag="broadcast")]


register_op("deform_conv2d", OpPattern.OPAQUE,
            lambda types, at: [((types[0][0][0], types[1][0][0], *types[2][0][2:]),
                                types[0][1])],
            _deform_ref, _deform_compute,
            doc="deformable conv (x, w, offset[, bias[, mask]]): bilinear samples at the "
            "kernel taps moved by offset (zeros outside); attrs strides, dilations, pads, "
            "groups, offset_groups")
