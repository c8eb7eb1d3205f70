"""Registers the TensorFlow frontend. TensorFlow itself is imported only when a model is
loaded (it takes seconds), never by discovery."""

from __future__ import annotations

from tensorforge.plugins import Frontend, hookimpl


@hookimpl
def register_frontends(register):
    register(Frontend(
        "tensorflow", (".pb", ".keras", ".h5"), "tensorforge_tensorflow.frontend:load",
        "TensorFlow and Keras models: Keras objects, .keras/.h5 files, SavedModel "
        "directories, frozen GraphDef .pb files",
        object_modules=("keras", "tf_keras", "tensorflow"),
        directory_markers=("saved_model.pb",)))
