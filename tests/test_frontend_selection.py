"""How core picks a frontend: file suffixes, directory markers (a SavedModel), the module of a
model object (a Keras model), and `model_format=` / `--model-format`; and what it says when no
loaded frontend reads the model. A toy frontend stands in, so no TensorFlow is needed."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from tensorforge.compiler import load_graph
from tensorforge.errors import TensorforgeError
from tensorforge.graph import Graph
from tensorforge.plugins import Frontend, hookimpl


def toy_graph(tag: str) -> Graph:
    g = Graph(tag)
    x = g.add_input("x", (2,), "float32")
    g.outputs = [g.add("relu", x)]
    return g


@pytest.fixture
def toy_frontend(plugins, monkeypatch):
    """A frontend `toy` reading `.toy` files, directories holding `toy.marker`, and objects
    whose class comes from a module `toyframework...`; load records what it was given."""
    mod = types.ModuleType("toy_frontend_mod")
    seen: list = []

    def load(model, input_shapes=None):
        seen.append((model, input_shapes))
        return toy_graph("toy")

    mod.load = load
    monkeypatch.setitem(sys.modules, mod.__name__, mod)

    class Plugin:
        @hookimpl
        def register_frontends(self, register):
            register(Frontend("toy", (".toy",), f"{mod.__name__}:load",
                              object_modules=("toyframework",),
                              directory_markers=("toy.marker",)))

    plugins.register(Plugin(), "toy")
    return seen


def toy_object() -> object:
    cls = type("Model", (), {"__module__": "toyframework.models.base"})
    sub = type("MyModel", (cls,), {"__module__": "__main__"})  # a user's subclass
    return sub()


def test_suffix_directory_and_object(toy_frontend, tmp_path: Path) -> None:
    f = tmp_path / "m.toy"
    f.write_text("x")
    d = tmp_path / "saved"
    d.mkdir()
    (d / "toy.marker").write_text("x")
    obj = toy_object()
    for model in (str(f), d, obj):
        assert load_graph(model, {"x": (2,)}).name == "toy"
    assert [m for m, _ in toy_frontend] == [str(f), str(d), obj]
    assert toy_frontend[0][1] == {"x": (2,)}


def test_model_format_names_the_frontend(toy_frontend, tmp_path: Path) -> None:
    f = tmp_path / "weights.bin"  # a suffix no frontend claims
    f.write_text("x")
    with pytest.raises(TensorforgeError, match="no frontend reads 'weights.bin'.*model-format"):
        load_graph(str(f))
    assert load_graph(str(f), model_format="toy").name == "toy"
    with pytest.raises(TensorforgeError, match="unknown model format 'caffe'.*toy"):
        load_graph(str(f), model_format="caffe")


def test_directory_without_marker_and_unknown_object(toy_frontend, tmp_path: Path) -> None:
    with pytest.raises(TensorforgeError, match="no frontend reads the directory"):
        load_graph(tmp_path)
    with pytest.raises(TensorforgeError, match="not dict"):
        load_graph({"not": "a model"})


def test_first_party_formats_say_what_to_install(plugins, tmp_path: Path) -> None:
    d = tmp_path / "sm"
    d.mkdir()
    (d / "saved_model.pb").write_bytes(b"")
    with pytest.raises(TensorforgeError, match="tensorflow frontend|frontend-tensorflow"):
        load_graph(d)
    keras_like = type("Functional", (), {"__module__": "keras.src.models.functional"})()
    with pytest.raises(TensorforgeError, match="Functional object needs the tensorflow "
                       "frontend.*frontend-tensorflow"):
        load_graph(keras_like)
    with pytest.raises(TensorforgeError, match="model format 'tensorflow' needs"):
        load_graph(d, model_format="tensorflow")
    f = tmp_path / "m.keras"
    f.write_bytes(b"x")
    with pytest.raises(TensorforgeError, match="no frontend reads 'm.keras': .*tensorflow"):
        load_graph(f)


def test_descriptor_checks() -> None:
    with pytest.raises(ValueError, match="object_modules"):
        Frontend("f", (".f",), "a:b", object_modules="keras")
    with pytest.raises(ValueError, match="directory_markers"):
        Frontend("f", (".f",), "a:b", directory_markers=("a/b",))
