"""``p4sim stf``: run p4c STF tests (PROGRAM.p4 TEST.stf pairs, or directories of X.p4 + X.stf).

Prints one line per test (``PASS name`` or ``FAIL name: reason`` followed by indented
details) and a final line exactly ``N passed, N failed``; exits 0 iff every test passed.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback

from p4sim.errors import UserError

log = logging.getLogger("p4sim.stf")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "stf", help="run p4c STF tests against p4sim",
        description="Run STF tests: PROGRAM.p4 TEST.stf [PROGRAM.p4 TEST.stf ...], or directories "
                    "holding X.p4 + X.stf pairs.")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="PROGRAM.p4 TEST.stf pairs, or directories of X.p4 + X.stf pairs")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="add DIR to the #include search path (repeatable)")
    p.add_argument("--target", choices=("p4sim", "bmv2"), default="p4sim",
                   help="p4sim (default) or bmv2: compile with p4c and run on simple_switch")
    p.add_argument("-v", "--verbose", action="store_true", help="print control-plane notes too")
    p.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")
    p.set_defaults(func=run)


def collect_pairs(paths: list[str]) -> list[tuple[str, str]]:
    """Turn the command-line paths into (program, stf) pairs; UserError on a bad argument."""
    pairs: list[tuple[str, str]] = []
    pending: str | None = None
    for path in paths:
        if os.path.isdir(path):
            if pending is not None:
                raise UserError(f"{pending}: program has no STF file after it")
            found = sorted(f for f in os.listdir(path) if f.endswith(".stf"))
            for stf in found:
                prog = os.path.join(path, stf[:-4] + ".p4")
                if os.path.isfile(prog):
                    pairs.append((prog, os.path.join(path, stf)))
                else:
                    log.warning("%s: no matching %s, skipped", os.path.join(path, stf), prog)
            if not found:
                raise UserError(f"{path}: directory holds no .stf files")
            continue
        if not os.path.isfile(path):
            raise UserError(f"{path}: no such file or directory")
        if path.endswith(".stf"):
            if pending is None:
                raise UserError(f"{path}: STF file without a program before it")
            pairs.append((pending, path))
            pending = None
        else:
            if pending is not None:
                raise UserError(f"{pending}: program has no STF file after it")
            pending = path
    if pending is not None:
        raise UserError(f"{pending}: program has no STF file after it")
    return pairs


def run(args: argparse.Namespace) -> int:
    from p4sim.stf.runner import run_stf

    pairs = collect_pairs(args.paths)
    target = getattr(args, "target", "p4sim")
    if target == "bmv2":
        from p4sim.stf.bmv2_target import find_tools

        find_tools()   # one line naming the missing tool before any test runs
    passed = failed = 0
    for prog, stf in pairs:
        name = os.path.splitext(os.path.basename(stf))[0]
        try:
            result = run_stf(prog, stf, args.include_dirs, target)
        except UserError as err:
            print(f"FAIL {name}: {err}")
            failed += 1
            continue
        except Exception as err:  # an engine bug must not stop the other tests
            print(f"FAIL {name}: internal error: {type(err).__name__}: {err}")
            if args.verbose:
                traceback.print_exc(file=sys.stdout)
            failed += 1
            continue
        if result.passed:
            print(f"PASS {name}")
            passed += 1
        else:
            print(f"FAIL {name}: {result.errors[0]}")
            for line in result.errors[1:]:
                print(f"    {line}")
            failed += 1
        if args.verbose or not result.passed:
            for note in result.notes:
                print(f"    note: {note}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1
