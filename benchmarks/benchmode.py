"""Quick mode, shared by every benchmark under ``benchmarks/``.

``make bench`` runs each benchmark in full and records nothing automatically; figures go into
docs/performance.md by hand. A benchmark nobody runs rots (one imported a deleted test helper for
weeks), so ``make test`` also runs every benchmark, in quick mode: the same code paths with tiny
sizes and short trials, seconds each, figures printed but meaningless and never asserted
(``tests/test_benchmarks_smoke.py``). An import error or a crash then fails CI.

Quick mode is ``--quick`` on the command line or ``DLCP_BENCH_QUICK=1`` in the environment. A new
benchmark must call ``add_quick_flag`` and keep its quick run to a few seconds.
"""

from __future__ import annotations

import argparse
import os

QUICK_ENV = "DLCP_BENCH_QUICK"


def quick_from_env() -> bool:
    """True when ``DLCP_BENCH_QUICK`` asks for quick mode (any value but empty or ``0``)."""
    return os.environ.get(QUICK_ENV, "") not in ("", "0")


def add_quick_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--quick`` (default: from ``DLCP_BENCH_QUICK``) to a benchmark's argument parser."""
    parser.add_argument("--quick", action="store_true", default=quick_from_env(),
                        help=f"smoke run: tiny sizes, seconds, figures not meaningful (or {QUICK_ENV}=1)")


def announce(quick: bool) -> None:
    """Say so when the figures that follow come from a quick run."""
    if quick:
        print("quick mode: smoke run, the figures below are not meaningful")


def add_with_ns3_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--with-ns3`` to an ns-3 benchmark: its quick mode then runs the ns-3 part too (tiny)."""
    parser.add_argument("--with-ns3", action="store_true", help="with --quick: run the ns-3 part too (tiny)")


def ns3_measures(name: str, quick: bool, with_ns3: bool) -> bool:
    """Whether an ns-3 benchmark goes on to measure; if not, say why. Quick mode stops before the
    ns-3 import unless ``--with-ns3`` (the smoke run has 150 s per benchmark; importing ns-3 and
    compiling the model alone took 20-60 s idle and over 220 s at load average 19), and nothing is
    measured where ns-3 is not installed."""
    import importlib.util

    if quick and not with_ns3:
        print(f"{name}: quick mode stops before the ns-3 import (minutes on a loaded machine); "
              "--quick --with-ns3 runs the same code paths at a tiny size")
        return False
    if importlib.util.find_spec("ns") is None:
        print(f"{name}: ns-3 is not installed (pip install ns3==3.44.post0); nothing measured")
        return False
    return True
