"""Command lines of the processes an experiment runs on Mininet hosts, and their records' conversion.

Every ``dlcp-agent``, ``dlcpctl`` and background-traffic command line is built here and nowhere
else, so a change of those CLIs is one edit. ``iteration_records`` turns the agents' JSON lines into
the runner's per-iteration records (``report.py`` documents those).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from mininet_topos.topologies import HostSpec

# Every workload uses the DLCP UDP port the switches recognise (9290 is built in; the controller's
# `dlcp_udp_ports` table adds others); each host has its own address, so the port needs no sharing.
PS_PORT = 9290
ALLREDUCE_PORT = 9290


# Every emulated host's processes share the machine's 2 cores. NumPy's OpenBLAS starts a thread per
# core in each agent; on the busy machine a small product then waits for its descheduled helper
# thread: the digits test-set accuracy every worker computes per iteration (360 x 64 by 64 x 64)
# took 12 ms with 2 threads against 0.1 ms with one (measured, H10-4 of docs/experiments-history.md), in
# every mode alike. One BLAS/OpenMP thread per agent process, as a process per core would have.
AGENT_THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def agent_env() -> dict[str, str]:
    """Environment of every agent process on a Mininet host (``AGENT_THREADS`` on top of ours)."""
    return {**os.environ, **AGENT_THREADS}


def _script(name: str) -> str:
    """A console script of this venv (Mininet hosts share our filesystem, not our PATH)."""
    return str(Path(sys.executable).parent / name)


def _agent(*args: str) -> list[str]:
    return [_script("dlcp-agent"), *args]


def _common(mode: str, out: Path, loss_bound: float, seed: int, timeout: float, rate_mbps: float | None) -> list[str]:
    args = ["--mode", mode, "--out", str(out), "--loss-bound", str(loss_bound), "--seed", str(seed),
            "--timeout", str(timeout)]
    if rate_mbps:
        args += ["--rate", str(rate_mbps)]
    return args


def ps_server(host: HostSpec, workers: int, workload: str, iterations: int, mode: str, out: Path,
              loss_bound: float, seed: int, timeout: float, rate_mbps: float | None = None,
              extra: tuple[str, ...] = ()) -> list[str]:
    return _agent("ps-server", "--bind", f"{host.ip}:{PS_PORT}", "--workers", str(workers),
                  "--workload", workload, "--iterations", str(iterations),
                  *_common(mode, out, loss_bound, seed, timeout, rate_mbps), *extra)


# The workers listen on an ephemeral port, so the parameters the server pushes back are ordinary UDP
# to the switches (default queue, per-flow ECMP). Making them DLCP too (workers on port 9290) was
# measured and made the PS iteration slower (docs/experiments-history.md), so it is not the default yet.
def ps_worker(server: HostSpec, rank: int, workers: int, workload: str, iterations: int, mode: str,
              out: Path, loss_bound: float, seed: int, timeout: float, rate_mbps: float | None = None,
              extra: tuple[str, ...] = ()) -> list[str]:
    return _agent("worker", "--server", f"{server.ip}:{PS_PORT}", "--rank", str(rank), "--workers", str(workers),
                  "--workload", workload, "--iterations", str(iterations),
                  *_common(mode, out, loss_bound, seed, timeout, rate_mbps), *extra)


def allreduce_rank(peers: list[HostSpec], rank: int, workload: str, iterations: int, mode: str, out: Path,
                   loss_bound: float, seed: int, timeout: float, scale: float = 0.01,
                   rate_mbps: float | None = None, extra: tuple[str, ...] = ()) -> list[str]:
    ring = ",".join(f"{p.ip}:{ALLREDUCE_PORT}" for p in peers)
    return _agent("allreduce", "--bind", f"{peers[rank].ip}:{ALLREDUCE_PORT}", "--rank", str(rank),
                  "--peers", ring, "--workload", workload, "--scale", str(scale),
                  "--iterations", str(iterations), *_common(mode, out, loss_bound, seed, timeout, rate_mbps),
                  *extra)


TORCH_MASTER_PORT = 29500        # torch.distributed rendezvous on rank 0's host (gloo, set-up only)
TORCH_COMM = {"dlcp": "dlcp", "baseline": "baseline", "tcp": "gloo"}   # runner mode -> torch-train --comm


def torch_ddp_rank(peers: list[HostSpec], rank: int, iterations: int, mode: str, out: Path, loss_bound: float,
                   seed: int, timeout: float) -> list[str]:
    """One rank of PyTorch DDP training (digits CNN) with the DLCP hook, or gloo for mode tcp."""
    return _agent("torch-train", "--rank", str(rank), "--world-size", str(len(peers)),
                  "--master", f"{peers[0].ip}:{TORCH_MASTER_PORT}", "--comm", TORCH_COMM[mode],
                  "--bind", peers[rank].ip, "--port", str(ALLREDUCE_PORT), "--steps", str(iterations),
                  "--loss-bound", str(loss_bound), "--seed", str(seed), "--peer-timeout", str(timeout),
                  "--steps-out", str(out))


def background(dst: HostSpec, rate_mbps: float, duration: float, burst: int = 0, burst_every: float = 0.5) -> list[str]:
    return [sys.executable, "-m", "mininet_topos.background", "--dst", dst.ip, "--rate-mbps", str(rate_mbps),
            "--duration", str(duration), "--burst", str(burst), "--burst-every", str(burst_every)]


def tcp_sink(duration: float) -> list[str]:
    return [sys.executable, "-m", "mininet_topos.background", "--sink", "--duration", str(duration)]


def tcp_bulk(dst: HostSpec, duration: float, cc: str | None = None) -> list[str]:
    return [sys.executable, "-m", "mininet_topos.background", "--tcp", "--dst", dst.ip, "--duration", str(duration),
            *(["--cc", cc] if cc else [])]


def dlcpctl(config: Path, *args: str) -> list[str]:
    return [_script("dlcpctl"), "-c", str(config), *args]


def iteration_records(path: Path, mode: str, workload: str, worker: str) -> list[dict]:
    """The agent's per-iteration JSON lines as the runner's records (see ``report.py``)."""
    records = []
    if not path.exists():
        return records
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("event") != "iteration" or rec.get("role") == "ps-server":
            continue
        loss = rec.get("loss_by_class") or {}
        records.append({
            "mode": mode, "workload": workload, "worker": worker, "iteration": rec["iteration"],
            # torch-ddp: the whole DDP iteration (communication overlaps backward there)
            "comm_time_s": rec.get("comm_seconds", rec.get("iteration_seconds", 0.0)), "bytes": rec.get("bytes_sent", 0),
            "retransmissions": rec.get("retransmissions", 0),
            "lost_fraction": (sum(loss.values()) / len(loss)) if loss else 0.0,
            "loss_by_class": loss, "accuracy": rec.get("accuracy"),
        })
    return records
