"""Every converter on small tf.functions: the imported graph run by the reference interpreter
(numpy) against TensorFlow's eager result, and the layout decisions (which values stay NCHW,
where transposes go). A few graphs are also compiled, so the kernels are checked too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tensorforge
from tensorforge.graph import run_reference

tf = pytest.importorskip("tensorflow",
                         reason="no TensorFlow here (pip install tensorflow-cpu)")

from tensorforge_tensorflow.testing import import_function  # noqa: E402

RNG = np.random.default_rng(0)


def rand(*shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return RNG.uniform(lo, hi, size=shape).astype("float32")


def c(*shape: int, seed: int = 0, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    """A constant the same on every call (the functions run twice: traced and eagerly)."""
    return np.random.default_rng([seed, *shape]).uniform(lo, hi, size=shape).astype("float32")


def check(fn: Callable[..., Any], *inputs: np.ndarray, rtol: float = 1e-5,
          atol: float = 1e-5) -> Any:
    g, ref = import_function(fn, *inputs)
    got = run_reference(g, {v.name: x for v, x in zip(g.inputs, inputs)})
    assert len(got) == len(ref)
    for a, b in zip(got, ref):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return g


X = rand(1, 9, 9, 4)
W = tf.constant(c(3, 3, 4, 6, lo=-0.5, hi=0.5))
DW = tf.constant(c(3, 3, 4, 2, lo=-0.5, hi=0.5))


def conv(x: Any, stride: int = 1, padding: Any = "SAME", dilations: int = 1) -> Any:
    return tf.nn.conv2d(x, W, stride, padding, dilations=dilations)


CASES: dict[str, tuple[Callable[..., Any], tuple[np.ndarray, ...]]] = {
    "conv_same_s2": (lambda x: conv(x, 2), (X,)),
    "conv_valid": (lambda x: conv(x, 1, "VALID"), (X,)),
    "conv_dilated": (lambda x: conv(x, 1, "SAME", 2), (X,)),
    "conv_explicit": (lambda x: conv(x, 2, [[0, 0], [1, 2], [0, 1], [0, 0]]), (X,)),
    "conv_grouped": (lambda x: tf.nn.conv2d(x, tf.constant(c(3, 3, 2, 6)), 1, "SAME"), (X,)),
    "depthwise_mult2": (lambda x: tf.nn.depthwise_conv2d(x, DW, [1, 2, 2, 1], "SAME"), (X,)),
    "max_pool_same": (lambda x: tf.nn.max_pool2d(x, 3, 2, "SAME"), (X,)),
    "avg_pool_same": (lambda x: tf.nn.avg_pool2d(x, 3, 2, "SAME"), (X,)),
    "avg_pool_valid": (lambda x: tf.nn.avg_pool2d(x, 2, 2, "VALID"), (X,)),
    "bias_add": (lambda x: tf.nn.bias_add(conv(x), tf.constant(c(6))), (X,)),
    "bias_add_2d": (lambda x: tf.nn.bias_add(x, tf.constant(c(4))), (rand(3, 4),)),
    "fused_batch_norm": (lambda x: tf.compat.v1.nn.fused_batch_norm(
        conv(x), c(6, seed=1), c(6, seed=2), c(6, seed=3), c(6, seed=4, lo=0.5, hi=2), 1e-3,
        is_training=False)[0], (X,)),
    "matmul_dense": (lambda x: tf.matmul(x, tf.constant(c(4, 5))), (rand(3, 4),)),
    "matmul_transposes": (lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True),
                          (rand(4, 3), rand(5, 4))),
    "matmul_const_transposed": (lambda x: tf.matmul(x, tf.constant(c(5, 4)),
                                                    transpose_b=True), (rand(2, 3, 4),)),
    "batch_matmul_adj": (lambda a, b: tf.linalg.matmul(a, b, adjoint_b=True),
                         (rand(2, 3, 4), rand(2, 5, 4))),
    "reduce_nhwc": (lambda x: [tf.reduce_mean(conv(x), [1, 2]),
                               tf.reduce_sum(conv(x), [3], keepdims=True),
                               tf.reduce_max(conv(x), [1], keepdims=False),
                               tf.reduce_min(conv(x), [0, 2], keepdims=True)], (X,)),
    "reduce_plain": (lambda x: [tf.reduce_mean(x, [1]), tf.reduce_max(x, [-1], keepdims=True)],
                     (rand(2, 3, 4),)),
    "softmax": (lambda x: [tf.nn.softmax(conv(x)), tf.nn.log_softmax(x[0, 0])], (X,)),
    "pads": (lambda x: [tf.pad(conv(x), [[0, 0], [1, 2], [0, 1], [2, 0]]),
                        tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], constant_values=0.5),
                        tf.pad(conv(x), [[0, 0], [1, 1], [2, 2], [0, 0]], mode="REFLECT")],
             (X,)),
    "reshape_squeeze_expand": (lambda x: [
        tf.reshape(conv(x), [1, -1]), tf.squeeze(tf.reduce_mean(conv(x), [1, 2], True)),
        tf.expand_dims(x[0], 0), tf.squeeze(x[:, :1], axis=[1])], (X,)),
    "concat": (lambda x: [tf.concat([conv(x), x], 3), tf.concat([conv(x), conv(x)], 1),
                          tf.concat([x[0], x[0]], 0)], (X,)),
    "split": (lambda x: tf.split(conv(x), [2, 4], 3) + tf.split(x, 3, 1)
              + tf.split(x, [2, -1], 2), (X,)),
    "pack_unpack": (lambda a, b: [tf.stack([a, b], 1)] + tf.unstack(a, axis=1),
                    (rand(2, 3), rand(2, 3))),
    "strided_slices": (lambda x: [x[0, 1:-1:2, ::-2], x[..., 1], x[:, None, 2:, ..., :3],
                                  conv(x)[:, ::3, 1:, 1:2], x[-1]], (X,)),
    "slice": (lambda x: tf.slice(x, [0, 1, 2, 0], [1, -1, 3, 2]), (X,)),
    "reverse": (lambda x: [tf.reverse(x, [1, -1]), tf.reverse(conv(x), [3])], (X,)),
    "transposes": (lambda x: [tf.transpose(conv(x), [0, 3, 1, 2]), tf.transpose(x, [2, 0, 3, 1])],
                   (X,)),
    "shape_fill_range": (lambda x: [tf.fill(tf.shape(x)[1:3], 2.5) + x[0, :, :, 0],
                                    tf.cast(tf.range(2, 11, 3), tf.float32) * x[0, 0, 0, 0],
                                    tf.zeros_like(x) + tf.ones_like(x)], (X,)),
    "gather_cast": (lambda x: [tf.gather(x, [2, 0, 2], axis=1), tf.cast(x > 0.5, tf.float32),
                               tf.cast(x * 3, tf.int32)], (X,)),
    "unary": (lambda x: [tf.nn.relu(x), tf.nn.relu6(3 * x), tf.nn.elu(x), tf.nn.selu(x),
                         tf.nn.leaky_relu(x, 0.3), tf.sigmoid(x), tf.tanh(x),
                         tf.sqrt(tf.abs(x) + 1), tf.math.rsqrt(tf.abs(x) + 1), tf.exp(x),
                         tf.math.log(tf.abs(x) + 1), -x, tf.abs(x), tf.floor(x), tf.math.ceil(x),
                         tf.math.reciprocal(x + 3), tf.math.erf(x), tf.nn.softplus(x),
                         tf.square(x)], (rand(2, 5),)),
    "binary": (lambda a, b: [a + b, a - b, a * b, a / (tf.abs(b) + 1), tf.maximum(a, b),
                             tf.minimum(a, b), tf.math.squared_difference(a, b),
                             tf.add_n([a, b + a, a]), tf.pow(tf.abs(a) + 1, b),
                             tf.cast(tf.logical_and(a < b, tf.logical_not(a >= 0.5)),
                                     tf.float32)], (rand(2, 5), rand(5))),
    "nhwc_with_constants": (lambda x: [conv(x) * tf.constant(c(6)) + tf.constant(c(1, 9,
                                                                                      9, 1)),
                                       conv(x) - x[..., :1], tf.nn.relu(conv(x)) + 1.0], (X,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_tensorflow(name: str) -> None:
    fn, inputs = CASES[name]
    check(fn, *inputs)


def test_nhwc_chain_has_one_transpose_in_and_none_out() -> None:
    """conv -> bias -> relu -> pool -> concat -> depthwise -> mean: the data is relaid once."""
    def net(x: Any) -> Any:
        y = tf.nn.relu(tf.nn.bias_add(conv(x), tf.constant(c(6))))
        y = tf.concat([tf.nn.max_pool2d(y, 2, 1, "SAME"), y], 3)
        y = tf.nn.depthwise_conv2d(y, tf.constant(c(3, 3, 12, 1)), [1, 1, 1, 1], "SAME")
        return tf.reduce_mean(y, [1, 2])

    g = check(net, X, rtol=1e-4)
    assert g.op_counts()["transpose"] == 1
    # the transposed input feeds the first convolution; everything after stays NCHW
    assert g.nodes[0].op == "transpose" and g.nodes[1].op == "conv2d"


def test_transpose_to_nchw_is_free_and_output_is_nhwc() -> None:
    g = check(lambda x: [tf.transpose(conv(x), [0, 3, 1, 2]), conv(x)], X)
    assert g.op_counts()["transpose"] == 2  # at the input, and the NHWC output
    assert g.outputs[0].producer.op == "conv2d"  # the NCHW output is the conv's own value


def test_while_if_call_and_tensor_arrays() -> None:
    @tf.function
    def inner(a: Any) -> Any:
        return a * 2.0 + 1.0

    def fn(x: Any) -> Any:
        ta = tf.TensorArray(tf.float32, size=4)
        xs = tf.TensorArray(tf.float32, size=4).unstack(x)

        def body(i: Any, h: Any, ta: Any) -> Any:
            h = tf.tanh(inner(h) + xs.read(i))
            return i + 1, h, ta.write(i, h)

        _, h, ta = tf.while_loop(lambda i, h, ta: i < 4, body, (0, tf.zeros_like(x[0]), ta))
        h = tf.cond(tf.constant(True), lambda: h + 1.0, lambda: h - 1.0)
        return [h, ta.stack()]

    g = check(fn, rand(4, 3))
    assert "tanh" in g.op_counts() and g.op_counts()["tanh"] == 4


@pytest.mark.slow
def test_compiled_kernels_match(llvm_target: Any, plugins: Any) -> None:
    def net(x: Any) -> Any:
        y = tf.nn.relu6(tf.nn.bias_add(conv(x, 2), tf.constant(c(6))))
        y = tf.pad(y, [[0, 0], [1, 0], [0, 1], [0, 0]])
        a, b = tf.split(tf.nn.avg_pool2d(y, 2, 1, "SAME"), 2, 3)
        y = tf.concat([b * 2.0, a], 3)
        y = tf.nn.depthwise_conv2d(y, tf.constant(c(3, 3, 6, 1)), [1, 1, 1, 1], "VALID")
        return [tf.nn.softmax(tf.reshape(y, [1, -1])), tf.transpose(y, [0, 3, 1, 2])]

    g, ref = import_function(net, X)
    out = tensorforge.compile(g, "llvm -num-threads=1").run({g.inputs[0].name: X})
    for a, b in zip(out, ref):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_function_calls_in_an_unfrozen_graph() -> None:
    """A GraphDef straight from a tf.function keeps its calls: PartitionedCall, a node whose
    op is the function's name, If with a constant predicate, IdentityN."""
    from tensorforge_tensorflow import load

    @tf.function
    def inner(a: Any) -> Any:
        return tf.nn.relu(a * 2.0 - 1.0)

    def fn(x: Any) -> Any:
        y = tf.cond(tf.constant(False), lambda: x, lambda: inner(x) + 1.0)
        return tf.identity_n([y, x])[0]

    x = rand(2, 3)
    gd = tf.function(fn).get_concrete_function(tf.TensorSpec((2, 3))).graph.as_graph_def()
    ops = {n.op for n in gd.node} | {n.op for f in gd.library.function for n in f.node_def}
    assert "PartitionedCall" in ops and {"If", "StatelessIf"} & ops and "IdentityN" in ops
    ref = fn(tf.constant(x)).numpy()
    for form in ("call", "op"):
        if form == "op":  # the same call written as an op named after the function
            sigs = {f.signature.name: f.signature for f in gd.library.function}
            for f in gd.library.function:
                for n in f.node_def:
                    if n.op not in ("PartitionedCall", "StatefulPartitionedCall"):
                        continue
                    n.op = n.attr["f"].func.name
                    for key in list(n.attr):
                        del n.attr[key]
                    # its results are then read by the callee's output names
                    old_ref = f"{n.name}:output:0"
                    new_ref = f"{n.name}:{sigs[n.op].output_arg[0].name}:0"
                    for m in f.node_def:
                        m.input[:] = [new_ref if i == old_ref else i for i in m.input]
                    for k, v in f.ret.items():
                        if v == old_ref:
                            f.ret[k] = new_ref
        g = load(gd, outputs=["Identity"])
        (got,) = run_reference(g, {"x": x})
        np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_bidirectional_lstm() -> None:
    """Keras' Bidirectional runs its backward LSTM on the reversed sequence (ReverseV2)."""
    import keras

    keras.utils.set_random_seed(0)
    inputs = keras.Input((6, 5))
    y = keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True))(inputs)
    model = keras.Model(inputs, keras.layers.GRU(3, go_backwards=True)(y))
    check(lambda t: model(t, training=False), rand(1, 6, 5), rtol=1e-4)
