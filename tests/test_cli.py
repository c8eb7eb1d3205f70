"""The tforge command: readable output, --json, errors without tracebacks."""

import json

import tensorforge
from tensorforge.cli import main


def test_version(tforge):
    proc = tforge("--version")
    assert proc.returncode == 0 and tensorforge.__version__ in proc.stdout


def test_targets_lists_kinds_and_tags(tforge):
    proc = tforge("targets")
    assert proc.returncode == 0, proc.stderr
    assert "Target kinds:" in proc.stdout and "Tags:" in proc.stdout
    assert "-num-threads=<int>" in proc.stdout and "nvidia/h200" in proc.stdout
    doc = json.loads(tforge("targets", "--json").stdout)
    kinds = {k["name"]: k for k in doc["targets"]}
    assert kinds["llvm"]["options"]["num-threads"]["type"] == "int"
    assert {"name": "amd/zen3", "config": "llvm -mcpu=znver3 -mtriple=x86_64-unknown-linux-gnu",
            "description": "AMD Zen 3 (EPYC 7003, Ryzen 5000)",
            "distribution": "tensorforge-target-llvm"} in doc["tags"]


def test_targets_resolves_one(tforge):
    doc = json.loads(tforge("targets", "--json", "llvm -num-threads=3").stdout)
    assert doc["kind"] == "llvm" and doc["options"]["num-threads"] == 3
    assert doc["options"]["mcpu"]  # detected for this host
    assert doc["target"] == "llvm -num-threads=3"


def test_errors_are_one_paragraph_exit_1(tforge):
    proc = tforge("targets", "llvm -mcpuu=x")
    assert proc.returncode == 1
    assert proc.stderr.startswith("tforge: error: unknown option -mcpuu")
    assert "Did you mean -mcpu" in proc.stderr and "Traceback" not in proc.stderr
    debug = tforge("--debug", "targets", "llvm -mcpuu=x")
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_unknown_target_lists_installed(tforge):
    proc = tforge("targets", "rocm")
    assert proc.returncode == 1 and "Installed target kinds: cuda, llvm" in proc.stderr


def test_usage_errors_exit_2(tforge):
    assert tforge("frobnicate").returncode == 2
    assert tforge().returncode == 2


def test_main_in_process(plugins, capsys):
    plugins.register("tensorforge_vdla.plugin", "vdla", distribution="tensorforge-target-vdla")
    assert main(["targets", "vdla/default"]) == 0
    out = capsys.readouterr().out
    assert "vdla -batch=1 -block-in=16 -block-out=16" in out and "-acc-dtype=int32" in out
    assert main(["plugins"]) == 0
    assert "vdla" in capsys.readouterr().out
