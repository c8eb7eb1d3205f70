"""Test helpers (this package's tests and the benchmarks): seeded Keras models, saving a model
in every form the frontend reads, freezing a tf.function, and the comparison with TensorFlow
(rtol 1e-4, atol 1e-5 x max |output|). TensorFlow and Keras are imported by the functions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

RTOL = 1e-4


def assert_close(ours: np.ndarray, ref: np.ndarray) -> None:
    ref = np.asarray(ref)
    np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=1e-5 * float(np.abs(ref).max()))


def randomize_batch_norm(model: Any, seed: int = 1) -> None:
    """Keras initializes batch norm to the identity; give it statistics so folding matters."""
    import keras

    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            shapes = [w.shape for w in layer.get_weights()]
            gamma, beta, mean, var = (rng.uniform(0.5, 1.5, shapes[0]),
                                      rng.normal(0, 0.1, shapes[1]),
                                      rng.normal(0, 0.1, shapes[2]),
                                      rng.uniform(0.5, 1.5, shapes[3]))
            layer.set_weights([a.astype("float32") for a in (gamma, beta, mean, var)])


def mobilenet_v2() -> Any:
    import keras

    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(weights=None, classifier_activation=None)
    randomize_batch_norm(model)
    return model


def lstm_gru() -> Any:
    """LSTM and GRU with the default unroll=False (While loops over TensorLists)."""
    import keras

    keras.utils.set_random_seed(0)
    inputs = keras.Input((7, 10), name="tokens")
    x = keras.layers.LSTM(16, return_sequences=True)(inputs)
    x = keras.layers.GRU(12)(x)
    return keras.Model(inputs, keras.layers.Dense(5)(x), name="lstm_gru")


def resnet50() -> Any:
    import keras

    keras.utils.set_random_seed(0)
    model = keras.applications.ResNet50(weights=None, classifier_activation=None)
    randomize_batch_norm(model)
    return model


@dataclass
class SavedModelCase:
    """A model, an input, TensorFlow's output, and the model saved as .keras, SavedModel and a
    frozen .pb (with an unknown batch)."""

    model: Any
    x: np.ndarray
    ref: np.ndarray
    keras_file: Path
    saved_model: Path
    frozen_pb: Path

    @property
    def input_name(self) -> str:
        return self.model.inputs[0].name


def save_forms(model: Any, x: np.ndarray, folder: Path) -> SavedModelCase:
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    folder.mkdir(parents=True, exist_ok=True)
    keras_file = folder / f"{model.name}.keras"
    model.save(keras_file)
    saved = folder / "saved_model"
    model.export(str(saved), verbose=False)
    spec = tf.TensorSpec((None, *x.shape[1:]), tf.float32, name="input")
    fn = tf.function(lambda t: model(t, training=False)).get_concrete_function(spec)
    frozen = convert_variables_to_constants_v2(fn, lower_control_flow=False)
    pb = folder / f"{model.name}.pb"
    pb.write_bytes(frozen.graph.as_graph_def().SerializeToString())
    ref = model(x, training=False).numpy()
    return SavedModelCase(model, x, ref, keras_file, saved, pb)


BUILDERS: dict[str, tuple[Callable[[], Any], tuple[int, ...]]] = {
    "mobilenet_v2": (mobilenet_v2, (1, 224, 224, 3)),
    "lstm_gru": (lstm_gru, (1, 7, 10)),
}


def import_function(fn: Callable[..., Any], *inputs: np.ndarray) -> tuple[Any, list[np.ndarray]]:
    """`fn` (TensorFlow ops on tensors) traced at the inputs' shapes and imported, and its
    eager results on `inputs`: (graph, reference outputs)."""
    import tensorflow as tf

    from . import load

    specs = [tf.TensorSpec(x.shape, tf.as_dtype(x.dtype)) for x in inputs]
    graph = load(tf.function(fn).get_concrete_function(*specs))
    ref = [np.asarray(t) for t in tf.nest.flatten(fn(*[tf.constant(x) for x in inputs]))]
    return graph, ref
