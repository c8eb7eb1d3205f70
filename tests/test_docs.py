"""Every code block of the README, docs/*.md and packages/*/README.md runs as written.

A fenced block's info string says what it is; anything else is refused, so a block can no
longer drift from the code unnoticed:

* ``python``: run as a script (a fresh interpreter);
* ``bash`` / ``sh``: run with ``bash -euo pipefail``;
* ``text``: shown, not run (program output, a file tree, a syntax sketch); never a command
  line or Python code, which would escape this test (`test_no_command_or_code_is_shown_as_text`);
* ``toml``: parsed.

Blocks of one file run in order in one fresh temporary directory, so a later block may use
what an earlier one made (a model file, a tuning database). Words after the language:

* ``repo``: run from the repository root (the README's quick start: "from a clone");
* ``install``: ``pip install`` commands; checked, not run: every requirements file and
  package folder they name exists and CI installs it (``.ci/run`` installs
  requirements-dev.txt, which includes the rest), every ``tensorforge[extra]`` is an extra of
  core and every ``tensorforge-*`` distribution a package of the repository; what follows a
  line's ``&&`` (``pip install ... && python3 run.py``: set up, then run) runs as written;
* ``long``: commands too long for CI (a 40-minute benchmark); checked, not run: each is
  started with ``--help`` (pytest: ``--collect-only``) and must succeed;
* ``ci``: ``bash .ci/run`` itself (this test runs inside it).

``python``, ``python3``, ``tforge`` and ``pytest`` resolve to the interpreter running the
tests. A file whose blocks import an optional framework (TensorFlow / Keras, PyTorch) is
skipped, with the reason, where that framework is not installed (CI installs them, so they run
there).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
               *(ROOT / "packages").glob("*/README.md")])
RUN = {"python", "bash", "sh"}
LANGUAGES = RUN | {"text", "toml"}
FLAGS = {"repo", "install", "long", "ci"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
#: frameworks a doc may use that a machine may lack (the module a block imports -> what it is)
OPTIONAL = {"keras": "TensorFlow / Keras", "tensorflow": "TensorFlow", "torch": "PyTorch"}
#: a command line: VAR=value words, then python / python3 / pytest (any path to them)
COMMAND = re.compile(r"^(?:[A-Za-z_]\w*=\S*\s+)*(?:\S*/)?(?:python3?|pytest)(?:\s|$)")
IMPORT = re.compile(r"\b(?:import|from)\s+(" + "|".join(OPTIONAL) + r")\b")


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    flags: set[str]
    code: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    out, lines, i = [], path.read_text(encoding="utf-8").splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.groups()
        words = info.split()
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        out.append(Block(path, i + 1, words[0] if words else "", set(words[1:]),
                         "\n".join(body) + "\n"))
        i = j + 1
    return out


def _env(bin_dir: Path) -> dict[str, str]:
    # (an xdist worker's variables would make a nested pytest think it is a worker too)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TENSORFORGE_", "PYTEST_XDIST"))}
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["COLUMNS"] = "100"
    return env


def _shims(where: Path) -> Path:
    """`python`, `python3`, `tforge` and `pytest` of this interpreter, first on PATH."""
    where.mkdir(exist_ok=True)
    for name, cmd in (("python", ""), ("python3", ""), ("tforge", " -m tensorforge"),
                      ("pytest", " -m pytest")):
        shim = where / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}"{cmd} "$@"\n')
        shim.chmod(0o755)
    return where


def _requirement_files(path: Path) -> set[Path]:
    """A requirements file and every file it includes with -r."""
    found = {path.resolve()}
    for line in path.read_text().splitlines():
        m = re.match(r"\s*-r\s+(\S+)", line)
        if m:
            found |= _requirement_files(path.parent / m.group(1))
    return found


def check_install(block: Block) -> None:
    installed = _requirement_files(ROOT / "requirements-dev.txt")  # what .ci/run installs
    core = tomllib.loads((ROOT / "packages" / "core" / "pyproject.toml").read_text())
    extras = set(core["project"]["optional-dependencies"])
    dists = {tomllib.loads(p.read_text())["project"]["name"]
             for p in (ROOT / "packages").glob("*/pyproject.toml")}
    for line in filter(None, (x.split("&&")[0].strip() for x in block.code.splitlines())):
        words = shlex.split(line, comments=True)
        assert words[-2:] != ["pip", "install"] and "install" in words and any(
            "pip" in w for w in words), f"{block.where}: not a pip install: {line}"
        args = words[words.index("install") + 1:]
        for flag, arg in zip(["", *args], args):
            if flag == "-r":
                assert (ROOT / arg).resolve() in installed, f"{block.where}: CI does not " \
                    f"install {arg}"
            elif flag == "-e":
                assert (ROOT / arg / "pyproject.toml").is_file(), f"{block.where}: no {arg}"
            elif not arg.startswith("-"):
                name, _, extra = arg.partition("[")
                assert name in dists, f"{block.where}: {name} is not a package of this repository"
                unknown = set(filter(None, extra.rstrip("]").split(","))) - extras
                assert not unknown, f"{block.where}: core has no extra {sorted(unknown)}"


def check_long(block: Block, cwd: Path, env: dict[str, str]) -> None:
    for line in filter(None, (x.split("#")[0].strip() for x in block.code.splitlines())):
        probe = "--collect-only -q" if "pytest" in line else "--help"
        proc = subprocess.run(f"{line} {probe}", shell=True, cwd=cwd, env=env, text=True,
                              capture_output=True, timeout=300, executable="/bin/bash")
        assert proc.returncode == 0, f"{block.where}: `{line} {probe}` failed:\n" \
            f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}"


def missing_frameworks(block: Block) -> list[str]:
    """The optional frameworks `block` imports that are not installed here."""
    import importlib.util

    return sorted({OPTIONAL[m] for m in IMPORT.findall(block.code)
                   if importlib.util.find_spec(m) is None})


def run_block(block: Block, tmp: Path, env: dict[str, str]) -> None:
    cwd = ROOT if "repo" in block.flags else tmp
    if block.lang == "python":
        script = tmp / f"block_{block.line}.py"
        script.write_text(block.code)
        cmd = [sys.executable, str(script)]
    else:
        cmd = ["bash", "-euo", "pipefail", "-c", block.code]
    proc = subprocess.run(cmd, cwd=cwd, env=env, text=True, capture_output=True, timeout=900)
    assert proc.returncode == 0, (
        f"{block.where}: the {block.lang} block failed (exit {proc.returncode}):\n{block.code}"
        f"\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}")


# ---- the tests ---------------------------------------------------------------------------------
def test_every_block_says_what_it_is():
    bad = [f"{b.where}: ```{b.lang} {' '.join(sorted(b.flags))}".rstrip()
           for path in DOCS for b in blocks(path)
           if b.lang not in LANGUAGES or not b.flags <= FLAGS
           or (b.flags & {"install", "long", "ci"} and b.lang not in {"bash", "sh"})]
    assert not bad, ("code blocks must be ```python, ```bash, ```text (output or a sketch) or "
                     "```toml, optionally followed by " + ", ".join(sorted(FLAGS)) + ":\n"
                     + "\n".join(bad))


def hidden_in_text(block: Block) -> str | None:
    """Why the ``text`` block ``block`` is really a command or code (run or checked if marked
    so), or None: a line that runs python / pytest, or Python that assigns or calls."""
    if block.lang != "text":
        return None
    for line in block.code.splitlines():
        if COMMAND.match(line.strip()):
            return f"a command: {line.strip()}"
    try:
        tree = ast.parse(block.code)
    except SyntaxError:
        return None
    if any(isinstance(node, ast.Assign | ast.Call) for node in ast.walk(tree)):
        return "Python code"
    return None


def test_no_command_or_code_is_shown_as_text():
    bad = [f"{b.where}: {why}" for path in DOCS for b in blocks(path)
           if (why := hidden_in_text(b))]
    assert not bad, ("these ```text blocks are commands or code: mark them ```bash (```bash "
                     "long for a command too long for CI) or ```python so they are run or "
                     "checked:\n" + "\n".join(bad))


@pytest.mark.parametrize("code, why", [
    ("python benchmarks/x.py --rounds 9\n", "a command: python benchmarks/x.py --rounds 9"),
    ("TENSORFORGE_X=1 pytest tests/fuzz   # note\n", "a command: TENSORFORGE_X=1 pytest"),
    ("/opt/env/bin/python3 run.py\n", "a command: /opt/env/bin/python3 run.py"),
    ("m = tensorforge.compile(g)\n", "Python code"),
    ("tforge compile MODEL [--input-shape x=1,3]\n", None),  # a syntax sketch
    ("packages/core   the core\npythonic\n", None),
    ("graph ──pass──▶ groups\n", None),
])
def test_commands_and_code_in_text_blocks_are_found(code, why):
    found = hidden_in_text(Block(ROOT / "README.md", 1, "text", set(), code))
    assert found == why or (why and found and found.startswith(why)), found


def test_the_block_parser(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("intro\n```bash repo\necho hi\n```\n\n- item:\n  ```\n  x = 1\n  ```\n"
                   "~~~~python\nprint('```')\n~~~~\n")
    found = [(b.line, b.lang, b.flags, b.code) for b in blocks(doc)]
    assert found == [(2, "bash", {"repo"}, "echo hi\n"), (7, "", set(), "x = 1\n"),
                     (10, "python", set(), "print('```')\n")]


def test_blocks_needing_a_missing_framework_are_found(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "keras" else real(name, *a))
    block = Block(ROOT / "README.md", 1, "bash", set(),
                  'python -c "import keras, numpy"\nfrom torchvision import x\n')
    assert missing_frameworks(block) == ["TensorFlow / Keras"]
    assert missing_frameworks(Block(ROOT / "README.md", 1, "python", set(), "import numpy\n")) \
        == []


@pytest.mark.slow
@pytest.mark.parametrize("doc", [d for d in DOCS if any(b.lang != "text" for b in blocks(d))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_blocks_run_as_written(doc, tmp_path):
    env = _env(_shims(tmp_path / ".bin"))
    work = tmp_path / "work"
    work.mkdir()
    for block in blocks(doc):
        if block.lang == "toml":
            tomllib.loads(block.code)
        elif "ci" in block.flags:
            assert block.code.strip() == "bash .ci/run", f"{block.where}: a ci block is " \
                "`bash .ci/run` itself"
            assert (ROOT / ".ci" / "run").is_file()
        elif "install" in block.flags:
            check_install(block)
            then = "\n".join(x.split("&&", 1)[1].strip() for x in block.code.splitlines()
                              if "&&" in x)
            if then:  # the command the install sets up for
                run_block(Block(block.path, block.line, block.lang, block.flags, then), work,
                          env)
        elif "long" in block.flags:
            check_long(block, ROOT if "repo" in block.flags else work, env)
        elif block.lang in RUN:
            missing = missing_frameworks(block)
            if missing:
                pytest.skip(f"{block.where} needs {', '.join(missing)}, not installed here")
            run_block(block, work, env)
