"""A study warms each seed's workload caches before the run's agents start (mininet_topos.study.warm_workloads).

Why this exists: host_agent's ProfileWorkload (the ring's resnet50 profile) builds its gradient pool from a small
torch CNN's gradients, cached per seed in ~/.cache/dlcp/torch-grads-<seed>.npz. On the first run of a seed new to
the machine each of the four ring agents imported torch and ran the CNN before its first iteration, seconds late
on the busy 2-core machine: in ecmp-collision the ring then began after the PS job had ended (8 of 16 runs of
session 15's record, 14 of 48 of session 16's), and the comparison it made was not the scenario's. Real
processes: an agent's workload built in a fresh interpreter imports torch when the cache is cold and not once the
runner has warmed it. Budget: ~10-20 s (two fresh interpreters, one torch import in this process).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mininet_topos.scenarios import SCENARIOS
from mininet_topos.study import warm_workloads

pytest.importorskip("torch")
AGENT = ("import sys; from host_agent.workloads import ProfileWorkload; ProfileWorkload('resnet50', 0.005, {seed}); "
         "print('torch' in sys.modules)")


def _agent_imports_torch(cache: Path, seed: int) -> bool:
    """Build the ring agent's workload (as ``dlcp-agent allreduce --seed SEED`` does) in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", AGENT.format(seed=seed)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "XDG_CACHE_HOME": str(cache)}, check=True).stdout.split()
    return out[-1] == "True"


def test_a_cold_seed_makes_the_agent_import_torch_and_a_warmed_one_does_not(tmp_path: Path, monkeypatch) -> None:
    cold, warm = tmp_path / "cold", tmp_path / "warm"
    assert _agent_imports_torch(cold, 7)                       # what every ring agent did on a new seed
    monkeypatch.setenv("XDG_CACHE_HOME", str(warm))
    assert warm_workloads(SCENARIOS["ecmp-collision"], 7) == ["ring"]
    assert (warm / "dlcp" / "torch-grads-7.npz").is_file()
    assert not _agent_imports_torch(warm, 7)                   # after the runner warmed it


def test_numpy_only_scenarios_have_nothing_to_warm(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert warm_workloads(SCENARIOS["tcp-bulk"], 3) == [] and warm_workloads(SCENARIOS["incast"], 3) == []
    assert not (tmp_path / "dlcp").exists()
