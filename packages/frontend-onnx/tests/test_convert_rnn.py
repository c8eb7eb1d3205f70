"""LSTM, GRU and RNN (unrolled) against onnxruntime: every direction, initial states, all
outputs, biases, peepholes, layout 1, GRU linear_before_reset."""

from __future__ import annotations

import numpy as np
import pytest

from tensorforge.graph import run_reference
from tensorforge_onnx import load
from tensorforge_onnx.testing import check, model, node, rand

SEQ, BATCH, INP, HID = 4, 2, 3, 5
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _case(op: str, direction: str, with_bias: bool, with_init: bool, **attrs: object
          ) -> None:
    nd = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    x = rand(SEQ, BATCH, INP)
    inits = {"W": rand(nd, g * HID, INP, lo=-0.5, hi=0.5),
             "R": rand(nd, g * HID, HID, lo=-0.5, hi=0.5)}
    names = ["x", "W", "R"]
    names.append("B" if with_bias else "")
    if with_bias:
        inits["B"] = rand(nd, 2 * g * HID, lo=-0.5, hi=0.5)
    names.append("")  # sequence_lens
    feeds = {"x": x}
    state_shape = (nd, BATCH, HID)
    if with_init:
        feeds["h0"] = rand(*state_shape)
        names.append("h0")
        if op == "LSTM":
            feeds["c0"] = rand(*state_shape)
            names.append("c0")
    if op == "LSTM" and attrs.pop("peephole", False):
        if not with_init:
            names += ["", ""]
        names.append("P")
        inits["P"] = rand(nd, 3 * HID, lo=-0.5, hi=0.5)
    outs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
    n = node(op, names, outs, hidden_size=HID, direction=direction, **attrs)
    m = model([n], feeds, outs, inits, opset=13)
    check(m, feeds, atol=1e-5)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_directions(op: str, direction: str) -> None:
    _case(op, direction, with_bias=True, with_init=True)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_defaults_no_bias_no_state(op: str) -> None:
    _case(op, "forward", with_bias=False, with_init=False)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_layout1(op: str) -> None:
    """onnxruntime has no layout=1: compare with layout 0 on transposed data (checked above)."""
    g = GATES[op]
    inits = {"W": rand(2, g * HID, INP), "R": rand(2, g * HID, HID),
             "B": rand(2, 2 * g * HID)}
    x, h0 = rand(SEQ, BATCH, INP), rand(2, BATCH, HID)
    outs = ["Y", "Y_h"]
    res = []
    for layout in (0, 1):
        feeds = {"x": x.transpose(1, 0, 2) if layout else x,
                 "h0": h0.transpose(1, 0, 2) if layout else h0}
        n = node(op, ["x", "W", "R", "B", "", "h0"], outs, hidden_size=HID,
                 direction="bidirectional", layout=layout)
        graph = load(model([n], feeds, outs, inits, opset=14))
        res.append(run_reference(graph, feeds))
    np.testing.assert_allclose(res[1][0], res[0][0].transpose(2, 0, 1, 3), rtol=1e-6)
    np.testing.assert_allclose(res[1][1], res[0][1].transpose(1, 0, 2), rtol=1e-6)


def test_lstm_peepholes_and_clip() -> None:
    _case("LSTM", "bidirectional", with_bias=True, with_init=True, peephole=True)
    _case("LSTM", "forward", with_bias=True, with_init=False, clip=0.5)


def test_gru_linear_before_reset() -> None:
    _case("GRU", "bidirectional", with_bias=True, with_init=True, linear_before_reset=1)


def test_rnn_activations() -> None:
    _case("RNN", "bidirectional", with_bias=True, with_init=False,
          activations=["Relu", "Sigmoid"])
    _case("GRU", "forward", with_bias=True, with_init=False, activations=["HardSigmoid",
                                                                          "LeakyRelu"],
          activation_alpha=[0.3, 0.1], activation_beta=[0.4, 0.0])


def test_only_y_h_requested() -> None:
    x = rand(SEQ, BATCH, INP)
    inits = {"W": rand(1, 4 * HID, INP), "R": rand(1, 4 * HID, HID)}
    m = model([node("LSTM", ["x", "W", "R"], ["", "Y_h"], hidden_size=HID)], {"x": x},
              ["Y_h"], inits)
    g = check(m, {"x": x})
    assert g.outputs[0].shape == (1, BATCH, HID)
    np.testing.assert_equal(len(g.outputs), 1)
