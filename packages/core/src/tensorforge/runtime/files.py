"""Writing output files safely: whole or not at all, and never over an input.

`atomic_output(path)` gives a temporary name in the destination's folder; the file is moved
over `path` (`os.replace`, atomic on POSIX) only when the block succeeds and removed when it
fails, so an interrupted or failed write leaves no partial file and the old file intact.
`refuse_overwrite(output, inputs)` refuses an output that is one of the inputs, under any
name: the same path, a symbolic link to it or a hard link (the same inode).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator

from tensorforge.errors import TensorforgeError

__all__ = ["atomic_output", "refuse_overwrite", "same_file"]


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether `a` and `b` name the same file (path, symlink or hard link)."""
    a, b = os.fspath(a), os.fspath(b)
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def refuse_overwrite(output: str | os.PathLike[str], inputs: Iterable[object],
                     what: str = "output") -> None:
    """A `TensorforgeError` if `output` is the same file as one of `inputs` (None skipped)."""
    for inp in inputs:
        if inp is not None and isinstance(inp, (str, os.PathLike)) and same_file(output, inp):
            raise TensorforgeError(
                f"the {what} {os.fspath(output)!r} is the input {os.fspath(inp)!r}"
                f"{'' if os.fspath(output) == os.fspath(inp) else ' (the same file)'}; writing "
                "it would destroy the input: choose another output path")


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[str]:
    """A temporary path next to `path`; moved over `path` when the block succeeds, deleted
    when it raises."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise TensorforgeError(f"cannot write {path!r}: the folder {folder!r} does not exist")
    if os.path.isdir(path):
        raise TensorforgeError(f"cannot write {path!r}: it is a directory")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                                   dir=folder)
    except OSError as e:
        raise TensorforgeError(f"cannot write {path!r}: {e.strerror or e}") from None
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600; a new file would not be
        yield tmp
        try:
            os.replace(tmp, path)
        except OSError as e:
            raise TensorforgeError(f"cannot write {path!r}: {e.strerror or e}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def _umask() -> int:
    """The process's umask, read without changing it where the OS allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
