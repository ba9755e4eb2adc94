"""The ``minitvm`` command: with no arguments it runs the embedded example end to end."""

from __future__ import annotations

import argparse
import sys


def _cmd_example(args) -> int:
    from .relax.testing import run_tutorial
    from .relay.testing.example import run_example

    relay_rc = run_example(args)
    return relay_rc or run_tutorial(args)


def _cmd_passes(args) -> int:
    from .cli_passes import cmd_passes

    return cmd_passes(args)


def _cmd_reproduce(args) -> int:
    from .cli_passes import cmd_reproduce

    return cmd_reproduce(args)


def _cmd_bisect(args) -> int:
    from .cli_passes import cmd_bisect

    return cmd_bisect(args)


def _cmd_check_pass(args) -> int:
    from .testing.fuzz.check_pass import run_check_pass

    return run_check_pass(args.name, programs=args.programs, seed=args.seed,
                          imports=args.imports, round_trip=not args.no_round_trip,
                          max_ops=args.max_ops, dialect=args.dialect)


def _cmd_cache(args) -> int:
    from .cli_cache import cmd_cache

    return cmd_cache(args)


def _cmd_tune(args) -> int:
    from .cli_model import _parse_shapes, load_model
    from .tune.cli import run_tune

    mod, params, _ = load_model(args.model, _parse_shapes(args.input_shape))
    return run_tune(args, mod, params)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="minitvm", description=__doc__)
    sub = p.add_subparsers(dest="command")
    ex = sub.add_parser("example", help="run the embedded example end to end (the default)")
    ex.add_argument("--opt-level", type=int, default=3)
    ps = sub.add_parser("passes", help="list the relay.build pipeline and which passes run")
    ps.add_argument("--opt-level", type=int, default=2)
    ps.add_argument("--all", action="store_true", help="list every registered pass")
    ps.add_argument("--pipeline", default=None, metavar="TEXT",
                    help="explain this textual pipeline instead of relay.build's")
    ps.add_argument("--disabled-pass", action="append", default=[], metavar="NAME",
                    help="disable a pass, as PassContext(disabled_pass=...) (repeatable)")
    ps.add_argument("--required-pass", action="append", default=[], metavar="NAME",
                    help="force a pass, as PassContext(required_pass=...) (repeatable)")
    rp = sub.add_parser("reproduce", help="re-run a crash reproducer file")
    rp.add_argument("file")
    bi = sub.add_parser("bisect", help="find the first pass that changes a module's outputs")
    bi.add_argument("file", help="a Relay text file")
    bi.add_argument("--pipeline", default=None)
    bi.add_argument("--opt-level", type=int, default=3)
    bi.add_argument("--rtol", type=float, default=1e-5)
    bi.add_argument("--atol", type=float, default=1e-5)
    from .cli_model import add_parsers  # compile / run / bench / viz on model files

    p.set_defaults(model_handlers=add_parsers(sub))
    cp = sub.add_parser("check-pass", help="differential checks of a pass on random programs")
    cp.add_argument("name", help="a registered pass, or module:attr / file.py:attr")
    cp.add_argument("--programs", type=int, default=100)
    cp.add_argument("--seed", type=int, default=0)
    cp.add_argument("--import", dest="imports", action="append", default=[], metavar="FILE",
                    help="import this file first (it may register the pass)")
    cp.add_argument("--max-ops", type=int, default=14)
    cp.add_argument("--no-round-trip", action="store_true",
                    help="skip the print/parse round trip of the output")
    cp.add_argument("--relax", dest="dialect", action="store_const", const="relax",
                    default=None, help="random Relax programs (default for a registered "
                    "Relax pass; needed for a module:attr Relax pass)")
    from .cli_cache import add_parser as add_cache_parser

    add_cache_parser(sub)
    from .tune.cli import add_parser as add_tune_parser

    add_tune_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cmd = args.command or "example"
    if cmd == "example" and not hasattr(args, "opt_level"):
        args.opt_level = 3
    if cmd in getattr(args, "model_handlers", {}):
        from .cli_model import run_command

        return run_command(args.model_handlers[cmd], args)
    handler = {"example": _cmd_example, "passes": _cmd_passes, "reproduce": _cmd_reproduce,
               "bisect": _cmd_bisect, "check-pass": _cmd_check_pass,
               "cache": _cmd_cache, "tune": _cmd_tune}[cmd]
    return handler(args) or 0


if __name__ == "__main__":
    sys.exit(main())
