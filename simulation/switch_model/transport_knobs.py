"""Runs of the PS job / incast with the DLCP transport's knobs changed (ablations).

Why this exists: the C++ transport reads its knobs (dlcp_transport.h TransportConfig) from
per-process defaults, as ns-3 attributes do with Config::SetDefault; an ablation (receiver-driven
admission off, to show what it buys and to exercise loss recovery) sets them in a fresh process
before simulation.job.run_job builds the run. Several runs share one process so that the ns-3
import (20-60 s) is paid once.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from controller.netconfig import Policy
from simulation.topology import Topology


def set_transport_defaults(**knobs: Any) -> None:
    """Set ``dlcpsim::TransportDefaults()`` fields (e.g. ``grants=False``) for later runs here."""
    from simulation import switch_model

    _, sim = switch_model.ns3()
    sim.ResetTransportDefaults()                 # unnamed knobs: the built-in defaults
    defaults = sim.TransportDefaults()
    for name, value in knobs.items():
        if not hasattr(defaults, name):
            raise ValueError(f"unknown transport knob '{name}'")
        setattr(defaults, name, value)


def run_jobs(runs: list[tuple[dict, Topology, Policy, str, Any]]) -> list:
    """``simulation.job.run_job`` for each (knobs, topology, policy, mode, JobSpec), in order."""
    from simulation.job import run_job

    out = []
    for knobs, topo, policy, mode, spec in runs:
        set_transport_defaults(**knobs)
        out.append(run_job(topo, policy, mode, spec))
    set_transport_defaults()
    return out


def run_jobs_fresh(runs: list[tuple[dict, Topology, Policy, str, Any]]) -> list:
    """``run_jobs`` in one fresh process (ns-3 keeps state across processes' runs otherwise)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                             max_tasks_per_child=1) as pool:
        return pool.submit(run_jobs, runs).result()
