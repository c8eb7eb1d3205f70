"""What a new user sees from `tforge`: help that never splits a word or flag, global flags in
either position, progress per compile stage (quiet when piped), plurals, errors that say what
to do (unknown pass names, a missing input)."""

from __future__ import annotations

import io
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorforge.cli import COMMANDS, build_parser
from tensorforge.progress import StageProgress
from tensorforge.text import plural, wrap

onnx = pytest.importorskip("onnx")

SUBCOMMANDS = [add.__name__.removeprefix("add_") for add in COMMANDS]


def _flat(text: str) -> str:
    return " ".join(text.split())


# ---- wrapping ------------------------------------------------------------------------------
@pytest.mark.parametrize("columns", [50, 72, 100])
@pytest.mark.parametrize("command", [None, *SUBCOMMANDS])
def test_help_never_splits_a_word_or_flag(monkeypatch, capsys, columns, command):
    def words(cols: int) -> list[str]:
        monkeypatch.setenv("COLUMNS", str(cols))
        with pytest.raises(SystemExit):
            build_parser().parse_args([command, "--help"] if command else ["--help"])
        return capsys.readouterr().out.split()

    # the same words at any width: a split word or flag ("--input-" / "shape") would differ
    assert sorted(words(columns)) == sorted(words(1000))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab-=,+.", min_size=1, max_size=30), min_size=1, max_size=25),
       st.integers(20, 100))
def test_wrap_keeps_every_word_and_the_width(words, width):
    text = " ".join(words)
    out = wrap(text, width, "  ", "    ")
    # nothing is cut inside a word: each word comes back whole, or as pieces that end a line
    # right after one of its commas (a long comma list)
    lines = [line.split() for line in out.splitlines()]
    pieces = [(tok, k == len(line) - 1) for line in lines for k, tok in enumerate(line)]
    k = 0
    for word in text.split():
        got = ""
        while got != word:
            tok, ends_line = pieces[k]
            k += 1
            got += tok
            assert word.startswith(got), (word, got)
            assert got == word or (ends_line and tok.endswith(",")), (word, tok)
    assert k == len(pieces)
    for line in out.splitlines():
        assert len(line) <= width or len(line.split()) == 1  # only a lone long word overflows


def test_wrap_breaks_long_lists_after_commas_only():
    feats = ",".join(f"+feature{i}" for i in range(30))
    text = wrap(f"-mattr={feats}  (detected)", 40, "  ", "      ")
    for line in text.splitlines():
        assert len(line) <= 40
        assert all(re.fullmatch(r"\+feature\d+|-mattr=\+feature\d+|\(detected\)|", item)
                   for item in re.split(r"[,\s]+", line.strip()))


def test_targets_keeps_every_cpu_feature_whole(tforge):
    doc = json.loads(tforge("targets", "--json", "llvm").stdout)
    valid = set(doc["options"]["mattr"].split(","))
    out = tforge("targets", "llvm").stdout
    start = out.index("-mattr=")
    block = out[start:out.index("(default or detected)", start)].removeprefix("-mattr=")
    items = [i for i in re.split(r"[,\s]+", block) if i]
    assert items and set(items) <= valid, set(items) - valid
    assert all(len(line) <= 100 for line in out.splitlines())


def test_plural():
    assert plural(1, "kernel") == "1 kernel" and plural(0, "kernel") == "0 kernels"
    assert plural(2, "entry", "entries") == "2 entries"


# ---- global flags --------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["--debug", "targets", "llvm -mcpuu=x"],
    ["targets", "llvm -mcpuu=x", "--debug"],
    ["targets", "--debug", "llvm -mcpuu=x"],
])
def test_global_flags_before_or_after_the_subcommand(tforge, argv):
    proc = tforge(*argv)
    assert proc.returncode == 1 and "Traceback" in proc.stderr, proc.stderr


def test_flags_do_not_reset_each_other():
    args = build_parser().parse_args(["--debug", "compile", "m.onnx", "-o", "m.tfpkg", "-q"])
    assert args.debug and args.quiet and not args.verbose


# ---- tforge compile: progress, quiet, plurals, pass names ------------------------------------
def test_compile_is_quiet_when_piped_and_verbose_on_request(tforge, tmp_path, relu_onnx):
    model = relu_onnx
    out = str(tmp_path / "one.tfpkg")
    plain = tforge("compile", str(model), "-o", out)
    assert plain.returncode == 0, plain.stderr
    assert plain.stderr == ""  # piped: no progress lines
    assert ": 1 kernel, " in plain.stdout and "1 kernels" not in plain.stdout
    verbose = tforge("compile", str(model), "-o", out, "--verbose")
    stages = [line.split("  ")[0] for line in verbose.stderr.splitlines()]
    assert stages == ["tforge: import", "tforge: graph passes", "tforge: lowering 1 kernel",
                      "tforge: code generation (llvm)", "tforge: export"], verbose.stderr
    assert all(re.search(r"  \d+\.\d\d s$", line) for line in verbose.stderr.splitlines())
    assert "\r" not in verbose.stderr and "\x1b" not in verbose.stderr
    quiet = tforge("compile", str(model), "-o", out, "--quiet")
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""


def test_stage_progress_on_a_terminal_counts_up_in_place():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    p = StageProgress(stream)
    p.stage("import")
    p.stage("lowering", 3, "kernel")
    for _ in range(3):
        p.advance()
    p.finish()
    text = stream.getvalue()
    assert "\rtforge: import" in text.replace("\x1b[2K", "")
    assert "lowering 0/3 kernels ..." in text and re.search(r"lowering 3 kernels  \d", text)
    assert text.endswith(" s\n") and text.count("\n") == 2  # one line per finished stage


@pytest.mark.parametrize("var, name, valid", [
    ("TENSORFORGE_PRINT_IR_AFTER", "nosuchpass", "vectorize"),
    ("TENSORFORGE_PRINT_GRAPH_AFTER", "layout", "layout_transform"),
    ("TENSORFORGE_DISABLE_PASSES", "unrol", "unroll"),
])
def test_unknown_pass_names_are_an_error_listing_the_valid_ones(tforge, tmp_path, relu_onnx,
                                                                 var, name, valid):
    model = relu_onnx
    proc = tforge("compile", str(model), "-o", str(tmp_path / "one.tfpkg"), env={var: name})
    assert proc.returncode == 1, proc.stdout
    msg = _flat(proc.stderr)
    assert f"{var}: unknown" in msg and repr(name) in msg and valid in msg
    assert "warning" not in msg  # one error before any work, not a warning per kernel
    ok = tforge("compile", str(model), "-o", str(tmp_path / "one.tfpkg"),
                env={var: f"{valid},all" if "PRINT" in var else valid})
    assert ok.returncode == 0, ok.stderr


def test_run_without_an_input_suggests_fill_random(tforge, tmp_path, relu_onnx):
    model = relu_onnx
    pkg = str(tmp_path / "one.tfpkg")
    assert tforge("compile", str(model), "-o", pkg).returncode == 0
    proc = tforge("run", pkg)
    assert proc.returncode == 1
    msg = _flat(proc.stderr)
    assert "missing input(s) 'x' (float32[2, 8]): pass --input x=FILE.npy, or --fill random" \
        in msg
    assert tforge("run", pkg, "--fill", "random").returncode == 0
