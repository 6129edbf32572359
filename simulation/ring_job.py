"""Ring all-reduce training job for dlcp-sim (`--workload ring-train`): compiles ring_allreduce.h.

Why this exists: the ring job (reduce-scatter + all-gather per bucket, buckets in backprop order,
compute/communication overlap, as host_agent/overlap.py and collectives.py run it) must run in C++
inside ns-3 like the PS job; this module compiles its header once, after the hosts'
(simulation/switch_model), and configures one job from a workload. simulation/job.py calls it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from simulation import switch_model
from simulation.workload import PsWorkload

HEADER = Path(__file__).with_name("ring_allreduce.h")


@lru_cache(maxsize=1)
def compiled():
    """``cppyy.gbl.dlcpsim`` with ``RingJob`` compiled (ns-3 imported and the model compiled first)."""
    import cppyy

    _, sim = switch_model.ns3()
    if not hasattr(sim, "RingJob") and not cppyy.cppdef(HEADER.read_text()):
        raise RuntimeError(f"{HEADER}: cppyy could not compile the ring all-reduce job")
    return cppyy.gbl.dlcpsim


def start_ring(ranks: list[int], work: PsWorkload, dlcp: bool, loss_bound: float):
    """A started ``dlcpsim::RingJob`` over host indices ``ranks`` (ring order: rank r sends to r + 1)."""
    if len(ranks) < 2:
        raise ValueError(f"a ring all-reduce needs at least 2 ranks (got {len(ranks)})")
    job = compiled().RingJob()
    job.Configure(ranks, work.group_bytes, work.layer_class, work.forward_s, work.backward_s, work.iterations,
                  dlcp, loss_bound)
    job.Start()
    return job
