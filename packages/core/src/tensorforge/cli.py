"""The ``tforge`` command.

``tforge plugins`` and ``tforge targets`` exist today; compile, run, tune, bench and inspect
arrive with their issues: each is a function ``add_<name>(subparsers)`` that sets ``func``.
Errors print one paragraph and exit 1 (2 for usage errors); ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import traceback
import warnings
from collections.abc import Sequence
from typing import Any

from tensorforge._version import __version__
from tensorforge.errors import TensorforgeError

__all__ = ["main"]


def _registry():
    from tensorforge.plugins import get_registry

    return get_registry()


# -- tforge plugins -----------------------------------------------------------------------------
def add_plugins(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plugins", help="list installed plugins, what they register, load errors",
                       description="List every plugin found through the `tensorforge` entry "
                       "points, with its distribution, version, what it registers and any error.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--strict", action="store_true", help="exit 1 if any plugin failed to load")
    p.set_defaults(func=run_plugins)


def run_plugins(args: argparse.Namespace) -> int:
    from tensorforge.plugins.loader import ENV_DISABLE, ENV_SELECT
    from tensorforge.plugins.registry import PluginLoadWarning

    with warnings.catch_warnings():  # failures are part of this report
        warnings.simplefilter("ignore", PluginLoadWarning)
        plugins = _registry().plugins
    env = {k: os.environ[k] for k in (ENV_SELECT, ENV_DISABLE) if k in os.environ}
    failed = [p for p in plugins if p.status == "failed"]
    if args.json:
        doc = {"tensorforge": __version__, "environment": env,
               "plugins": [p.to_dict() for p in plugins]}
        print(json.dumps(doc, indent=2))
    else:
        counts = {s: sum(p.status == s for p in plugins) for s in ("loaded", "failed", "disabled")}
        print(f"tensorforge {__version__}: {len(plugins)} plugin(s), "
              + ", ".join(f"{n} {s}" for s, n in counts.items()))
        for key, value in env.items():
            print(f"  {key}={value!r}")
        for p in sorted(plugins, key=lambda p: p.name):
            dist = f"{p.distribution} {p.version or ''}".strip() if p.distribution else "-"
            status = p.status.upper() if p.status == "failed" else p.status
            print(f"\n{p.name:<12} {dist:<40} {status}")
            for table, names in p.registered.items():
                print(_wrap(f"{table.replace('_', ' ')}: {', '.join(names)}"))
            lazy = [h for h in p.hooks if h in ("register_strategies", "register_intrinsics",
                                                "register_passes")]
            if lazy:
                print(_wrap(f"per-target hooks: {', '.join(lazy)}"))
            if p.error:
                print(_wrap(("error: " if p.status == "failed" else "note: ") + p.error))
            for w in p.warnings:
                print(_wrap("warning: " + w))
        if not plugins:
            print("\nNo plugins found. Install some, e.g.: pip install 'tensorforge[llvm,onnx]'")
    return 1 if (args.strict and failed) else 0


# -- tforge targets -----------------------------------------------------------------------------
def add_targets(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("targets", help="list target kinds and tags, or resolve one target",
                       description="List installed target kinds (with their options) and tags. "
                       "Given TARGET (e.g. 'llvm' or 'amd/zen3 -num-threads=4'), show all of "
                       "its options as resolved on this machine.")
    p.add_argument("target", nargs="?", help="a target string or tag to resolve")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_targets)


def run_targets(args: argparse.Namespace) -> int:
    from tensorforge.target import Target

    registry = _registry()
    if args.target:
        t = Target.parse(args.target)
        if args.json:
            print(json.dumps(t.to_dict(), indent=2))
        else:
            print(f"{t}\n  kind: {t.kind.name} ({t.device_type}, from {t.kind.distribution})")
            for k, v in t.options.items():
                origin = "given" if k in t.explicit else "default or detected"
                print(textwrap.fill(f"-{k}={v}  ({origin})", width=100, initial_indent="  ",
                                    subsequent_indent="      ", break_on_hyphens=False))
        return 0
    if args.json:
        doc: dict[str, Any] = {
            "targets": [{"name": k.name, "device_type": k.device_type, "keys": list(k.keys),
                         "distribution": k.distribution, "description": k.description,
                         "options": {n: {"type": o.type.__name__, "default": o.default,
                                         "help": o.help} for n, o in k.options.items()}}
                        for k in registry.targets.values()],
            "tags": [{"name": t.name, "config": t.config, "description": t.description,
                      "distribution": t.distribution} for t in registry.target_tags.values()],
        }
        print(json.dumps(doc, indent=2))
        return 0
    print("Target kinds:")
    for k in sorted(registry.targets.values(), key=lambda k: k.name):
        print(f"  {k.name:<10} {k.device_type:<8} {k.distribution:<28} {k.description}")
        for n, o in k.options.items():
            opt = f"      -{n}=<{o.type.__name__}>"
            print(f"{opt:<40} {o.help} (default {o.default!r})")
    if not registry.targets:
        print("  (none; pip install 'tensorforge[llvm]')")
    print("\nTags:")
    for t in sorted(registry.target_tags.values(), key=lambda t: t.name):
        print(f"  {t.name:<22} {t.config:<52} {t.description}")
    if not registry.target_tags:
        print("  (none)")
    return 0


COMMANDS = (add_plugins, add_targets)


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=100, initial_indent="    ", subsequent_indent="      ")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tforge", description="tensorforge: a deep-learning compiler.",
        epilog="Environment: TENSORFORGE_PLUGINS=a,b loads only those plugins ('none': none); "
        "TENSORFORGE_DISABLE_PLUGINS=a,b skips those.")
    parser.add_argument("--version", action="version", version=f"tensorforge {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in COMMANDS:
        add(sub)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"tforge: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    warnings.showwarning = _show_warning
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # `tforge ... | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("tforge: interrupted", file=sys.stderr)
        return 130
    except TensorforgeError as exc:
        if args.debug:
            traceback.print_exc()
        print(textwrap.fill(f"tforge: error: {exc}", width=100), file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: say so, briefly
        if args.debug:
            traceback.print_exc()
        else:
            print(f"tforge: internal error: {type(exc).__name__}: {exc}\n"
                  "Run again with --debug for the traceback.", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
