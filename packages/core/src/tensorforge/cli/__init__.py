"""The ``tforge`` command.

``tforge plugins``, ``targets``, ``compile``, ``run``, ``inspect``, ``bench`` and ``tune``: each
is a function ``add_<name>(subparsers)`` that sets ``func``, in the module of its group:
``plugins_targets``, ``compile_run``, ``inspect_model``, ``bench_tune`` (shared options in
``common``). This module holds the parser, the global flags and ``main``.
Errors print one paragraph and exit 1 (2 for usage errors); ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import Any

from tensorforge._version import __version__
from tensorforge.cli.bench_tune import add_bench, add_tune
from tensorforge.cli.bench_tune import run_bench as run_bench
from tensorforge.cli.bench_tune import run_tune as run_tune
from tensorforge.cli.common import MODEL_HELP as MODEL_HELP
from tensorforge.cli.common import add_model_format as add_model_format
from tensorforge.cli.compile_run import add_compile, add_run
from tensorforge.cli.compile_run import run_compile as run_compile
from tensorforge.cli.compile_run import run_run as run_run
from tensorforge.cli.inspect_model import add_inspect
from tensorforge.cli.inspect_model import inspect_report as inspect_report
from tensorforge.cli.inspect_model import run_inspect as run_inspect
from tensorforge.cli.plugins_targets import add_plugins, add_targets
from tensorforge.cli.plugins_targets import run_plugins as run_plugins
from tensorforge.cli.plugins_targets import run_targets as run_targets
from tensorforge.errors import TensorforgeError
from tensorforge.text import HelpFormatter, wrap

__all__ = ["main"]

COMMANDS = (add_plugins, add_targets, add_compile, add_run, add_inspect, add_bench, add_tune)


def _global_flags(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """--debug, --quiet, --verbose: on the main parser (with defaults) and on every
    subcommand (defaults suppressed, so `tforge compile --debug` and `tforge --debug compile`
    both work and neither position resets the other)."""
    default = {"default": argparse.SUPPRESS} if suppress else {}
    g = parser.add_argument_group("global options")
    g.add_argument("--debug", action="store_true", help="show tracebacks of errors", **default)
    g.add_argument("-q", "--quiet", action="store_true", help="print only results and errors",
                   **default)
    g.add_argument("-v", "--verbose", action="store_true",
                   help="show progress and timing of each stage even when not on a terminal",
                   **default)


class _SubParser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        _global_flags(self, suppress=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tforge", description="tensorforge: a deep-learning compiler.",
        formatter_class=HelpFormatter,
        epilog="Environment: TENSORFORGE_PLUGINS=a,b loads only those plugins ('none': none); "
        "TENSORFORGE_DISABLE_PLUGINS=a,b skips those.")
    parser.add_argument("--version", action="version", version=f"tensorforge {__version__}")
    _global_flags(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=_SubParser)
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
        print(wrap(f"tforge: error: {exc}"), file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: say so, briefly
        if args.debug:
            traceback.print_exc()
        else:
            print(f"tforge: internal error: {type(exc).__name__}: {exc}\n"
                  "Run again with --debug for the traceback.", file=sys.stderr)
        return 1
