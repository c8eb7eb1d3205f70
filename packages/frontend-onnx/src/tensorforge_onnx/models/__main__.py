"""`python -m tensorforge_onnx.models NAME -o NAME.onnx`: write one of the built-in models."""

from __future__ import annotations

import argparse
import sys

from . import MODELS, save


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tensorforge_onnx.models",
                                description="Write a built-in model (seeded random weights).")
    p.add_argument("name", nargs="?", choices=sorted(MODELS), help="the model")
    p.add_argument("-o", "--output", help="the .onnx file (default: NAME.onnx)")
    p.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    p.add_argument("--list", action="store_true", help="list the models and their inputs")
    args = p.parse_args(argv)
    if args.list or not args.name:
        for s in MODELS.values():
            ins = ", ".join(f"{k} {dt}{list(sh)}" for k, (sh, dt) in s.inputs.items())
            print(f"{s.name:16} {ins:32} {s.description}")
        return 0
    path = save(args.name, args.output or f"{args.name}.onnx", seed=args.seed)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
