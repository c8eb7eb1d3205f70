"""`import_quietly`: native stderr output during the import is discarded, errors still raise
and stderr works afterwards."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import pytest

from tensorforge.quiet_import import import_quietly


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300)


def test_native_output_during_the_import_is_discarded(tmp_path) -> None:
    (tmp_path / "chatty.py").write_text("import os\nos.write(2, b'native chatter\\n')\nX = 1\n")
    proc = _run(f"""
        import os, sys
        sys.path.insert(0, {str(tmp_path)!r})
        from tensorforge.quiet_import import import_quietly
        assert import_quietly("chatty").X == 1
        os.write(2, b"stderr works\\n")
        try:
            import_quietly("no_such_module_here")
        except ModuleNotFoundError:
            os.write(2, b"raised\\n")
        """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "stderr works\nraised\n"


def test_an_imported_module_is_returned_as_is() -> None:
    assert import_quietly("json") is sys.modules["json"]
    with pytest.raises(ModuleNotFoundError):
        import_quietly("no_such_module_here")


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                    reason="no TensorFlow here (pip install tensorflow-cpu)")
def test_tensorflow_imports_silently() -> None:
    proc = _run("""
        from tensorforge.quiet_import import import_quietly
        tf = import_quietly("tensorflow")
        print(float(tf.constant(1.0) + 1.0))
        """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "2.0\n" and "oneDNN" not in proc.stderr and proc.stderr == ""
