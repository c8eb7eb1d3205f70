"""The TensorFlow baselines of the benchmark: an ONNX model run by TensorFlow in NHWC, as a
`tf.function` (`tf`) or compiled by XLA (`tf-xla`, `jit_compile=True`).

Each node is mapped to the TensorFlow call a Keras model would make (conv2d, depthwise,
batch normalization, max pool, an LSTM cell per step); weights become NHWC/HWIO constants once,
the input is transposed to NHWC once (outside the timed call) and 4-D outputs back to NCHW
only for the correctness check. Covers the ops of the benchmark models
(`tensorforge_onnx.models`); anything else raises `NotImplementedError`, which the suite
reports as a skipped baseline."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Step = Callable[[list[Any]], list[Any]]
NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _pads(a: dict[str, Any]) -> list[list[int]]:
    """ONNX 2-D pads (top, left, bottom, right) as TensorFlow's NHWC explicit paddings."""
    t, left, b, r = list(a.get("pads") or [0, 0, 0, 0])
    return [[0, 0], [t, b], [left, r], [0, 0]]


def _padding(x: Any, pads: list[list[int]], k: tuple[int, int], s: list[int], d: list[int]
             ) -> Any:
    """"VALID" or "SAME" when the explicit paddings are what they mean, else the paddings."""
    if not any(p for pair in pads for p in pair):
        return "VALID"
    same = []
    for size, kk, ss, dd in zip(x.shape[1:3], k, s, d):
        total = max((-(-size // ss) - 1) * ss + (kk - 1) * dd + 1 - size, 0)
        same.append([total // 2, total - total // 2])
    return "SAME" if pads[1:3] == same else pads


def _pool_extra(size: int, k: int, s: int, p0: int, p1: int, ceil: bool) -> int:
    """Padding added at the end so a VALID pool gives ONNX's ceil_mode output size."""
    if not ceil:
        return 0
    out = -(-(size + p0 + p1 - k) // s) + 1
    if (out - 1) * s >= size + p0:  # no window may start in the trailing padding
        out -= 1
    return max((out - 1) * s + k - (size + p0 + p1), 0)


#: ops whose (first) output is NHWC when their first input is; the rest leave NHWC
KEEP_LAYOUT = {"Conv", "ConvTranspose", "BatchNormalization", "MaxPool", "GlobalAveragePool",
               "Relu", "Tanh", "Sigmoid", "Clip", "Add", "Mul", "Concat"}
#: ops that read only their first input at run time (the others are weights made once)
DATA_FIRST = {"Conv", "ConvTranspose", "BatchNormalization", "Gemm", "LSTM", "Clip", "Reshape",
              "Squeeze"}


class TfOnnxModel:
    """`TfOnnxModel(onnx_model).runner(inputs, xla)() -> list of numpy outputs (NCHW)`."""

    def __init__(self, model: Any):
        from onnx import numpy_helper

        from ..quiet_import import import_quietly

        tf = import_quietly("tensorflow")

        self.tf = tf
        g = model.graph
        self.arrays: dict[str, np.ndarray] = {
            t.name: np.array(numpy_helper.to_array(t)) for t in g.initializer}
        for node in g.node:
            if node.op_type == "Constant":
                self.arrays[node.output[0]] = np.array(numpy_helper.to_array(node.attribute[0].t))
        self.inputs = [v.name for v in g.input if v.name not in self.arrays]
        self.outputs = [v.name for v in g.output]
        # which values are NHWC images (4-D model inputs and what convolutions make of them)
        self.nhwc = {v.name for v in g.input if v.name in self.inputs
                     and len(v.type.tensor_type.shape.dim) == 4}
        self.steps: list[tuple[list[str], list[str], Step]] = []
        for n in g.node:
            if n.op_type == "Constant":
                continue
            ins = [i for i in n.input if i][:1] if n.op_type in DATA_FIRST else [
                i for i in n.input if i]
            image = any(i in self.nhwc for i in ins)
            if image and n.op_type in ("Add", "Mul"):
                ins = [self._nhwc_const(i) if i in self.arrays else i for i in ins]
            self.steps.append((ins, list(n.output), self._step(n, image)))
            if image and n.op_type in KEEP_LAYOUT:
                self.nhwc.add(n.output[0])

    def _nhwc_const(self, name: str) -> str:
        """A constant operand of an elementwise op on NHWC data, in NHWC broadcasting form."""
        a = self.arrays[name]
        if a.ndim >= 2:
            a4 = a.reshape((1,) * (4 - a.ndim) + a.shape)
            name = f"{name}:nhwc"
            self.arrays[name] = np.ascontiguousarray(a4.transpose(NCHW_TO_NHWC))
        return name

    # weights, made once --------------------------------------------------------------------
    def _const(self, array: np.ndarray) -> Any:
        return self.tf.constant(np.ascontiguousarray(array))

    def _array(self, name: str) -> np.ndarray:
        if name not in self.arrays:
            raise NotImplementedError(f"the TensorFlow baseline needs {name!r} to be a constant")
        return self.arrays[name]

    def _step(self, node: Any, image: bool) -> Step:
        """The TensorFlow call of `node`; `image`: its data input is NHWC."""
        tf = self.tf
        a, op = _attrs(node), node.op_type
        if op == "Conv":
            return self._conv(node, a)
        if op == "ConvTranspose":
            return self._conv_transpose(node, a)
        if op == "BatchNormalization":
            scale, bias, mean, var = (self._const(self._array(n)) for n in node.input[1:5])
            eps = float(a.get("epsilon", 1e-5))
            return lambda x: [tf.nn.batch_normalization(x[0], mean, var, bias, scale, eps)]
        if op == "MaxPool":
            return self._max_pool(a)
        if op == "Gemm":
            if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
                raise NotImplementedError("Gemm other than A @ B(.T) + C")
            w = self._array(node.input[1])
            wt = self._const(w.T if a.get("transB", 0) else w)
            bias = self._const(self._array(node.input[2])) if len(node.input) > 2 else None
            return lambda x: [tf.matmul(x[0], wt) + bias if bias is not None
                              else tf.matmul(x[0], wt)]
        if op == "LSTM":
            return self._lstm(node, a)
        if op == "Concat":
            axis = NCHW_TO_NHWC.index(a["axis"] % 4) if image else a["axis"]
            return lambda x: [tf.concat(x, axis)]
        if op == "Flatten":
            axis = a.get("axis", 1)
            order = (lambda v: tf.transpose(v, NHWC_TO_NCHW)) if image else (lambda v: v)
            return lambda x: [tf.reshape(order(x[0]), (int(np.prod(x[0].shape[:axis])), -1))]
        if op == "Squeeze":
            if image:
                raise NotImplementedError("Squeeze of NHWC data")
            axes = a.get("axes")
            if axes is None and len(node.input) > 1:
                axes = [int(v) for v in self._array(node.input[1])]
            return lambda x: [tf.squeeze(x[0], axes)]
        if op == "Reshape":
            shape = [int(v) for v in self._array(node.input[1])]
            order = (lambda v: tf.transpose(v, NHWC_TO_NCHW)) if image else (lambda v: v)
            return lambda x: [tf.reshape(order(x[0]), shape)]
        if op == "Gather":
            axis = a.get("axis", 0)
            return lambda x: [tf.gather(x[0], x[1], axis=axis)]
        if op == "Clip":
            lo, hi = (float(self._array(n).reshape(-1)[0]) if n else d for n, d in
                      zip(list(node.input[1:3]) + [""] * 2, (-np.inf, np.inf)))
            return lambda x: [tf.clip_by_value(x[0], lo, hi)]
        simple: dict[str, Step] = {
            "Relu": lambda x: [tf.nn.relu(x[0])],
            "Tanh": lambda x: [tf.tanh(x[0])],
            "Sigmoid": lambda x: [tf.sigmoid(x[0])],
            "Add": lambda x: [x[0] + x[1]],
            "Mul": lambda x: [x[0] * x[1]],
            "MatMul": lambda x: [tf.matmul(x[0], x[1])],
            "GlobalAveragePool": lambda x: [tf.reduce_mean(x[0], [1, 2], keepdims=True)],
        }
        if op not in simple:
            raise NotImplementedError(f"the TensorFlow baseline has no mapping for ONNX {op}")
        return simple[op]

    def _conv(self, node: Any, a: dict[str, Any]) -> Step:
        tf = self.tf
        w = self._array(node.input[1])  # (O, I/g, kh, kw)
        o, ig, kh, kw = w.shape
        group = a.get("group", 1)
        s, d = list(a.get("strides", (1, 1))), list(a.get("dilations", (1, 1)))
        pads = _pads(a)
        bias = self._const(self._array(node.input[2])) if len(node.input) > 2 else None
        if group == 1:
            wt = self._const(w.transpose(2, 3, 1, 0))  # HWIO

            def conv(x: Any) -> Any:
                return tf.nn.conv2d(x, wt, [1, *s, 1], _padding(x, pads, (kh, kw), s, d),
                                    dilations=[1, *d, 1])
        elif ig == 1 and o % group == 0:  # depthwise: (C*M, 1, kh, kw) -> (kh, kw, C, M)
            wt = self._const(w.reshape(group, o // group, kh, kw).transpose(2, 3, 0, 1))

            def conv(x: Any) -> Any:
                # as Keras does (ZeroPadding2D + VALID): TensorFlow 2.21's grappler aborts the
                # process on some depthwise convolutions with explicit paddings
                padding = _padding(x, pads, (kh, kw), s, d)
                if padding not in ("SAME", "VALID"):
                    x, padding = tf.pad(x, padding), "VALID"
                return tf.nn.depthwise_conv2d(x, wt, [1, *s, 1], padding, dilations=d)
        else:
            raise NotImplementedError("grouped convolutions other than depthwise")
        if bias is None:
            return lambda x: [conv(x[0])]
        return lambda x: [tf.nn.bias_add(conv(x[0]), bias)]

    def _conv_transpose(self, node: Any, a: dict[str, Any]) -> Step:
        tf = self.tf
        if a.get("group", 1) != 1 or any(a.get("output_padding", [])):
            raise NotImplementedError("ConvTranspose with groups or output_padding")
        w = self._array(node.input[1])  # (I, O, kh, kw) -> (kh, kw, O, I)
        _, o, kh, kw = w.shape
        wt = self._const(w.transpose(2, 3, 1, 0))
        sh, sw = a.get("strides", (1, 1))
        t, left, b, r = list(a.get("pads") or [0, 0, 0, 0])
        bias = self._const(self._array(node.input[2])) if len(node.input) > 2 else None

        def run(x: list[Any]) -> list[Any]:
            n, h, wd, _ = x[0].shape
            full = ((h - 1) * sh + kh, (wd - 1) * sw + kw)
            y = tf.nn.conv2d_transpose(x[0], wt, (n, *full, o), [1, sh, sw, 1], "VALID")
            y = y[:, t:full[0] - b, left:full[1] - r, :]
            return [tf.nn.bias_add(y, bias) if bias is not None else y]

        return run

    def _max_pool(self, a: dict[str, Any]) -> Step:
        tf = self.tf
        k, s = list(a["kernel_shape"]), list(a.get("strides", (1, 1)))
        (_, (t, b), (left, r), _) = _pads(a)
        ceil = bool(a.get("ceil_mode", 0))

        def run(x: list[Any]) -> list[Any]:
            _, h, w, _ = x[0].shape
            eb = b + _pool_extra(h, k[0], s[0], t, b, ceil)
            er = r + _pool_extra(w, k[1], s[1], left, r, ceil)
            y = x[0]
            if t or eb or left or er:
                y = tf.pad(y, [[0, 0], [t, eb], [left, er], [0, 0]], constant_values=-np.inf)
            return [tf.nn.max_pool2d(y, k, s, "VALID")]

        return run

    def _lstm(self, node: Any, a: dict[str, Any]) -> Step:
        """ONNX LSTM (gates i, o, f, c; forward, no initial state): one cell per step."""
        tf = self.tf
        if a.get("direction", "forward") != "forward" or len(node.input) > 4:
            raise NotImplementedError("LSTM other than forward without initial states")
        hid = a["hidden_size"]
        w, r, b = (self._array(n)[0] for n in node.input[1:4])
        wt, rt = self._const(w.T), self._const(r.T)
        bias = self._const(b[:4 * hid] + b[4 * hid:])

        def run(x: list[Any]) -> list[Any]:
            seq = x[0]
            h = c = tf.zeros((seq.shape[1], hid), seq.dtype)
            xw = tf.einsum("tbi,ig->tbg", seq, wt) + bias  # the input projection, all steps
            ys = []
            for t in range(seq.shape[0]):
                gi, go, gf, gc = tf.split(xw[t] + tf.matmul(h, rt), 4, axis=1)
                c = tf.sigmoid(gf) * c + tf.sigmoid(gi) * tf.tanh(gc)
                h = tf.sigmoid(go) * tf.tanh(c)
                ys.append(h)
            return [tf.expand_dims(tf.stack(ys), 1)]

        return run

    # running ---------------------------------------------------------------------------------
    def function(self, xla: bool = False) -> Callable[..., list[Any]]:
        """The model as one `tf.function` (XLA-compiled with `xla`) over NHWC inputs."""
        tf = self.tf

        def forward(*feeds: Any) -> list[Any]:
            env: dict[str, Any] = dict(zip(self.inputs, feeds))
            for ins, outs, fn in self.steps:
                args = [env[i] if i in env else tf.constant(self.arrays[i]) for i in ins]
                for name, val in zip(outs, fn(args)):
                    env[name] = val
            return [env[o] for o in self.outputs]

        return tf.function(forward, jit_compile=xla, autograph=False)

    def runner(self, inputs: dict[str, np.ndarray], xla: bool = False
               ) -> Callable[[], list[np.ndarray]]:
        """A callable running the model on `inputs` (made NHWC tensors once): NCHW outputs."""
        tf = self.tf
        feeds = [tf.constant(np.ascontiguousarray(
            inputs[k].transpose(NCHW_TO_NHWC) if k in self.nhwc else inputs[k]))
            for k in self.inputs]
        fn = self.function(xla)

        back = [o in self.nhwc for o in self.outputs]

        def run() -> list[np.ndarray]:
            return [o.numpy().transpose(NHWC_TO_NCHW) if b else o.numpy()
                    for o, b in zip(fn(*feeds), back)]

        return run
