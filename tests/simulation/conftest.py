"""Shared fixtures for the simulator tests: ns-3 with the DLCP switch model, or a skip with the reason.

Why this exists: importing ns-3 takes 20-60 s and compiling the switch model a few more; one
session-wide import serves every test. Where the `ns3` wheel is not installed the tests skip and
say so (`make test` installs it); a compile error in the model FAILS them.
"""

from __future__ import annotations

import importlib.util

import pytest


@pytest.fixture(scope="session")
def ns3_model():
    """``(ns, dlcpsim)`` from simulation.switch_model.ns3()."""
    if importlib.util.find_spec("ns") is None:
        pytest.skip("ns-3 is not installed (pip install ns3==3.44.post0; make test installs it)")
    from simulation import switch_model

    return switch_model.ns3()


@pytest.fixture(scope="session")
def ns3_installed() -> None:
    """Skip unless the `ns3` wheel is installed (for tests that run ns-3 in child processes only)."""
    if importlib.util.find_spec("ns") is None:
        pytest.skip("ns-3 is not installed (pip install ns3==3.44.post0; make test installs it)")
