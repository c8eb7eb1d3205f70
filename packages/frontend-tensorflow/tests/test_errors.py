"""Bad input gets one clear error naming the thing and what to do: truncated, empty, foreign
and incomplete files, unsupported ops (all at once, in functions too), unknown shapes, loops
that depend on data or run too long, a missing TensorFlow."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tensorforge.cli import inspect_report

tf = pytest.importorskip("tensorflow",
                         reason="no TensorFlow here (pip install tensorflow-cpu)")

import keras  # noqa: E402

from tensorforge_tensorflow import control_flow, load, unsupported_ops  # noqa: E402
from tensorforge_tensorflow.errors import (  # noqa: E402
    DynamicShapeError,
    ModelFileError,
    TensorFlowImportError,
    TensorFlowMissingError,
    UnsupportedOpError,
)
from tensorforge_tensorflow.testing import assert_close, import_function  # noqa: E402


def frozen_pb(fn: Any, *specs: Any, path: Path) -> Path:
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    cf = tf.function(fn).get_concrete_function(*specs)
    gd = convert_variables_to_constants_v2(cf, lower_control_flow=False).graph.as_graph_def()
    path.write_bytes(gd.SerializeToString())
    return path


@pytest.fixture(scope="module")
def small_cnn() -> Any:
    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 3), name="image")
    x = keras.layers.Conv2D(4, 3, padding="same")(inputs)
    return keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(x))


def test_truncated_and_foreign_pb(small_cnn: Any, tmp_path: Path) -> None:
    pb = frozen_pb(lambda x: small_cnn(x), tf.TensorSpec((1, 8, 8, 3)), path=tmp_path / "m.pb")
    data = pb.read_bytes()
    (tmp_path / "cut.pb").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="truncated or corrupt"):
        load(tmp_path / "cut.pb")
    (tmp_path / "text.pb").write_text("this is not a graph\n")
    with pytest.raises(ModelFileError, match="not a TensorFlow GraphDef|does not parse"):
        load(tmp_path / "text.pb")
    (tmp_path / "empty.pb").write_bytes(b"")
    with pytest.raises(ModelFileError, match="empty"):
        load(tmp_path / "empty.pb")
    with pytest.raises(ModelFileError, match="does not exist"):
        load(tmp_path / "missing.pb")
    with pytest.raises(ModelFileError, match="no node 'nope'"):
        load(pb, outputs=["nope"])


def test_saved_model_without_variables(small_cnn: Any, tmp_path: Path) -> None:
    saved = tmp_path / "saved"
    small_cnn.export(str(saved), verbose=False)
    with pytest.raises(ModelFileError, match="no signature 'predict'.*serving_default"):
        load(saved, signature="predict")
    shutil.rmtree(saved / "variables")
    with pytest.raises(ModelFileError, match="no variables/ folder"):
        load(saved)
    (saved / "saved_model.pb").unlink()
    with pytest.raises(ModelFileError, match="without saved_model.pb"):
        load(saved)


def test_corrupt_keras_file(tmp_path: Path) -> None:
    bad = tmp_path / "m.keras"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ModelFileError, match="could not be loaded"):
        load(bad)


def test_unsupported_ops_listed_at_once_with_nodes(tmp_path: Path, tf_frontend: Any) -> None:
    def fn(x: Any) -> Any:
        y = tf.sin(x) + tf.sin(x * 2.0)
        y = tf.math.cumsum(y, axis=1)
        # and one inside a loop body: the library functions are scanned too
        _, z = tf.while_loop(lambda i, z: i < 2, lambda i, z: (i + 1, tf.math.atan(z)), (0, y))
        return z

    pb = frozen_pb(fn, tf.TensorSpec((2, 3)), path=tmp_path / "ops.pb")
    with pytest.raises(UnsupportedOpError) as err:
        load(pb)
    msg = str(err.value)
    assert "3 unsupported ops" in msg
    assert "Sin (nodes 'Sin', 'Sin_1')" in msg and "Cumsum (node 'Cumsum')" in msg
    assert "Atan (node 'while/Atan' in function" in msg
    assert "supported_ops()" in msg
    listed = unsupported_ops(pb)
    assert [entry.split()[0] for entry in listed] == ["Atan", "Cumsum", "Sin"]
    assert inspect_report(str(pb))["unsupported_ops"] == sorted(listed)


def test_unknown_dims_need_input_shapes(tmp_path: Path) -> None:
    keras.utils.set_random_seed(0)
    inputs = keras.Input((None, 6), name="seq")  # variable sequence length
    model = keras.Model(inputs, keras.layers.LSTM(4)(inputs))
    with pytest.raises(DynamicShapeError, match=r"'seq'.*\(\?, \?, 6\).*unknown in dim 1.*"
                       r"input_shapes=\{'seq': \(1, 1, 6\)\}"):
        load(model)
    with pytest.raises(DynamicShapeError, match="does not fit"):
        load(model, input_shapes={"seq": (1, 5, 7)})
    with pytest.raises(DynamicShapeError, match=r"names \['sequence'\].*\['seq'\]"):
        load(model, input_shapes={"sequence": (1, 5, 6)})
    with pytest.raises(DynamicShapeError, match=r"names \['sequence'\].*\['seq'\]"):
        load(frozen_pb(lambda t: model(t), tf.TensorSpec((None, None, 6), name="seq"),
                       path=tmp_path / "lstm.pb"), input_shapes={"sequence": (1, 5, 6)})
    x = np.random.default_rng(0).standard_normal((2, 5, 6)).astype("float32")
    g = load(model, input_shapes={"seq": (2, 5, 6)})
    from tensorforge.graph import run_reference

    assert_close(run_reference(g, {"seq": x})[0], model(x).numpy())
    pb = frozen_pb(lambda t: model(t), tf.TensorSpec((None, None, 6), name="seq"),
                   path=tmp_path / "lstm.pb")
    with pytest.raises(DynamicShapeError, match="unknown in dim 1"):
        load(pb)
    g = load(pb, input_shapes={"seq": (2, 5, 6)})
    assert_close(run_reference(g, {"seq": x})[0], model(x).numpy())


def test_loops_resolved_at_import_only() -> None:
    def data_dependent(x: Any) -> Any:
        return tf.while_loop(lambda v: tf.reduce_sum(v) < 100.0, lambda v: v * 2.0, (x,))[0]

    with pytest.raises(DynamicShapeError, match="loop condition depends on run-time data"):
        import_function(data_dependent, np.ones((2,), "float32"))


def test_loop_iteration_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(control_flow, "MAX_ITERATIONS", 3)

    def five(x: Any) -> Any:
        return tf.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v + 1.0), (0, x))[1]

    with pytest.raises(TensorFlowImportError, match="more than 3 iterations"):
        import_function(five, np.ones((2,), "float32"))


def test_options_checked() -> None:
    with pytest.raises(TensorFlowImportError, match=r"unknown option\(s\) \['batch'\]"):
        load("x.pb", batch=4)
    with pytest.raises(ModelFileError, match="not int"):
        load(42)


def test_missing_tensorflow_says_what_to_install(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m.pb").write_bytes(b"\n\x01x")
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # `import tensorflow` fails
    with pytest.raises(TensorFlowMissingError, match=r"pip install 'tensorforge-frontend-"
                       r"tensorflow\[tensorflow\]'"):
        load(tmp_path / "m.pb")
