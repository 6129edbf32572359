"""The ``p4sim`` command: one dispatcher, each subcommand owned by the module that implements it.

Subcommand modules expose ``register(subparsers)``, which adds a parser and sets ``func`` to a
``run(args) -> int``. User errors (``UserError``) become one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from p4sim.errors import UserError

# (module, subcommand) — imported lazily so `p4sim stf` does not pay for gRPC imports.
SUBCOMMAND_MODULES = (
    "p4sim.backend.compile_cli",
    "p4sim.stf.cli",
    "p4sim.switch.cli",
    "p4sim.switch.ctl",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="p4sim", description="pure-Python P4_16 software switch")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name and name.startswith(err.name):
                continue  # subcommand not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=getattr(args, "log_level", "WARNING").upper(),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        return int(args.func(args) or 0)
    except UserError as err:
        print(f"p4sim: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `p4sim ctl stats | head`: the reader left; say nothing more (as cat does).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
