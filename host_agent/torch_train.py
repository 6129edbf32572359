"""DDP training of a small CNN on scikit-learn's digits, gradients over DLCP or gloo.

The end-to-end check of the DDP hook (``host_agent/torch_ddp.py``) with real gradients, real layer
order and real compute, and the workload of ``benchmarks/bench_torch_ddp.py``. Runs N ranks on
loopback (``--nproc N``), or one rank of a job spread over hosts (``--rank R --world-size N
--master HOST:PORT``, or torchrun's environment), with ``--comm dlcp|gloo`` and the same seed in
both, so the two runs differ only in the transport. ``--drop-noncritical RATE`` puts a lossy relay
(host_agent/relay.py) in front of each rank's DLCP endpoint. Rank 0 prints one JSON line per epoch
(accuracy, loss, step times, what the transport gave up) and a final summary.

    python -m host_agent.torch_train --nproc 4 --comm dlcp --epochs 8
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import socket
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from host_agent.errors import HostAgentError, UserError


@dataclass
class TorchTrainConfig:
    comm: str = "dlcp"                 # dlcp | gloo
    world_size: int = 4
    epochs: int = 8
    batch_size: int = 32               # per rank
    lr: float = 0.05
    momentum: float = 0.9
    seed: int = 0
    loss_bound: float = 0.10
    drop_noncritical: float = 0.0      # injected loss of non-critical DATA (relay per rank)
    lost_elements: str = "zero"
    peer_timeout: float = 30.0
    bucket_cap_mb: float = 0.05        # several buckets even for this small model
    in_flight: int = 2                 # buckets the DLCP hook all-reduces at once
    bind_host: str | None = None
    port: int | None = None
    report_path: str | None = None     # the hook's per-step JSON lines (rank suffix added)
    steps_path: str | None = None      # one JSON line per step; "{rank}" in it becomes the rank
    max_steps: int = 0                 # stop after this many steps (0: run all epochs)


def build_cnn():
    """Conv(1->16) - Conv(16->32) - maxpool - FC(512->64) - FC(64->10): 38 k parameters."""
    import torch.nn as nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))


def _dlcp_state(ddp: Any, cfg: TorchTrainConfig, rank: int) -> tuple[Any, Any]:
    from host_agent.endpoint import Endpoint, EndpointConfig
    from host_agent.ifmtu import ETHERNET_MTU
    from host_agent.policy import BASELINE_POLICY, TagPolicy
    from host_agent.relay import LossyRelay, drop_noncritical
    from host_agent.torch_ddp import DlcpHookConfig, register_dlcp_hook
    report = f"{cfg.report_path}.rank{rank}" if cfg.report_path else None
    policy = BASELINE_POLICY if cfg.comm == "baseline" else TagPolicy(loss_bound=cfg.loss_bound)
    hook_cfg = DlcpHookConfig(policy=policy, bind_host=cfg.bind_host, port=cfg.port,
                              peer_timeout=cfg.peer_timeout, lost_elements=cfg.lost_elements, report_path=report,
                              in_flight=cfg.in_flight)
    if not cfg.drop_noncritical:
        return register_dlcp_hook(ddp, hook_cfg), None
    ep = Endpoint(EndpointConfig(worker_id=rank, give_up_after=cfg.peer_timeout,
                                 bind=(cfg.bind_host or "127.0.0.1", cfg.port or 0)))
    relay = LossyRelay(ep.address, drop_noncritical(cfg.drop_noncritical, seed=1000 * cfg.seed + rank),
                       bind=(ep.address[0], 0)).__enter__()
    from dataclasses import replace
    # the relay stands for a lossy Ethernet path: Ethernet-sized packets, not loopback's 64 KB ones
    return register_dlcp_hook(ddp, replace(hook_cfg, advertise=relay.address, mtu=ETHERNET_MTU), endpoint=ep), relay


def _step_record(cfg: TorchTrainConfig, rank: int, epoch: int, iteration: int, seconds: float, loss: float,
                 state: Any) -> dict[str, Any]:
    """One training step as a JSON line (the runner's "iteration" record, plus the hook's report)."""
    rec: dict[str, Any] = {"event": "iteration", "role": "torch-ddp", "comm": cfg.comm, "rank": rank, "epoch": epoch,
                           "iteration": iteration, "iteration_seconds": round(seconds, 6),
                           "train_loss": round(loss, 6)}
    if state is not None and state.reports:
        rep = state.reports[-1]
        rec.update(bytes_sent=rep.bytes_sent, retransmissions=rep.retransmissions,
                   elements_given_up=rep.elements_given_up, critical_given_up=rep.critical_given_up,
                   loss_by_class={c: rep.packets_given_up_by_layer_class.get(c, 0) / n   # share of packets
                                  for c, n in sorted(rep.packets_by_layer_class.items()) if n},
                   dlcp=rep.as_record())
    return rec


def train_rank(cfg: TorchTrainConfig, rank: int, emit=print) -> dict[str, Any]:
    """One rank of the job (torch.distributed must be initialised); returns rank 0's summary."""
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from host_agent.training import load_digits_split
    torch.set_num_threads(1)
    world = dist.get_world_size()
    xtr, ytr, xte, yte = load_digits_split(cfg.seed)
    xtr_t = torch.tensor(xtr, dtype=torch.float32).reshape(-1, 1, 8, 8)
    ytr_t = torch.tensor(ytr, dtype=torch.int64)
    xte_t = torch.tensor(xte, dtype=torch.float32).reshape(-1, 1, 8, 8)
    yte_t = torch.tensor(yte, dtype=torch.int64)
    torch.manual_seed(cfg.seed)
    model = build_cnn()
    ddp = DDP(model, bucket_cap_mb=cfg.bucket_cap_mb)
    state = relay = None
    if cfg.comm != "gloo":
        state, relay = _dlcp_state(ddp, cfg, rank)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum)
    n_train = len(ytr_t)
    steps_per_epoch = n_train // (cfg.batch_size * world)
    summary: dict[str, Any] = {}
    steps_out = open(cfg.steps_path.format(rank=rank), "a") if cfg.steps_path else None
    iteration = 0
    epochs = cfg.epochs if not cfg.max_steps else -(-cfg.max_steps // steps_per_epoch)
    try:
        for epoch in range(epochs):
            order = np.random.default_rng(cfg.seed * 1000 + epoch).permutation(n_train)
            mine = order[rank::world]
            times, losses, records = [], [], []
            for step in range(steps_per_epoch):
                if cfg.max_steps and iteration >= cfg.max_steps:
                    break
                idx = torch.as_tensor(mine[step * cfg.batch_size:(step + 1) * cfg.batch_size])
                t0 = time.perf_counter()
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(ddp(xtr_t[idx]), ytr_t[idx])
                loss.backward()
                opt.step()
                times.append(time.perf_counter() - t0)
                losses.append(loss.item())
                records.append(_step_record(cfg, rank, epoch, iteration, times[-1], losses[-1], state))
                iteration += 1
            with torch.no_grad():
                acc = float((model(xte_t).argmax(1) == yte_t).float().mean())
            if steps_out is not None:
                records[-1]["accuracy"] = round(acc, 4)        # the epoch's test accuracy on its last step
                steps_out.writelines(json.dumps(r) + "\n" for r in records)
                steps_out.flush()
            rec = {"event": "epoch", "comm": cfg.comm, "epoch": epoch, "rank": rank, "world_size": world,
                   "accuracy": round(acc, 4), "train_loss": round(statistics.fmean(losses), 4),
                   "steps": len(times), "step_seconds_mean": round(statistics.fmean(times), 6),
                   "step_seconds_p50": round(statistics.median(times), 6),
                   "step_seconds_max": round(max(times), 6)}
            if state is not None:
                reps = state.reports[-len(times):]
                rec["elements_given_up"] = sum(r.elements_given_up for r in reps)
                rec["retransmissions"] = sum(r.retransmissions for r in reps)
                rec["critical_given_up"] = sum(r.critical_given_up for r in reps)
            if rank == 0:
                emit(json.dumps(rec))
            summary = {**rec, "event": "done", "epochs": epochs}
    finally:
        if steps_out is not None:
            steps_out.close()
        if state is not None:
            state.close()
        if relay is not None:
            summary["relay_dropped"] = dict(relay.dropped)
            relay.stop()
    return summary


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _iface_of(ip: str) -> str | None:
    """The network interface holding IPv4 address ``ip`` (Linux SIOCGIFADDR), or None."""
    import fcntl
    import struct
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _index, name in socket.if_nameindex():
            try:
                res = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
            except OSError:
                continue
            if socket.inet_ntoa(res[20:24]) == ip:
                return name
    return None


def _rank_main(cfg: TorchTrainConfig, rank: int, master: tuple[str, int], q: Any = None) -> dict[str, Any]:
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR=master[0], MASTER_PORT=str(master[1]))
    if cfg.bind_host and "GLOO_SOCKET_IFNAME" not in os.environ:
        # gloo binds to what the host name resolves to (127.x on Mininet hosts sharing one name)
        iface = _iface_of(cfg.bind_host)
        if iface:
            os.environ["GLOO_SOCKET_IFNAME"] = iface
    dist.init_process_group("gloo", rank=rank, world_size=cfg.world_size)
    try:
        summary = train_rank(cfg, rank)
    except HostAgentError as exc:
        summary = {"event": "error", "rank": rank, "error": str(exc).splitlines()[0]}
    except RuntimeError as exc:          # DDP re-raises the hook's DlcpCommError as RuntimeError
        summary = {"event": "error", "rank": rank, "error": str(exc).splitlines()[0]}
    if q is not None:
        q.put((rank, summary))
        q.close()
        q.join_thread()
    dist.destroy_process_group()
    return summary


def run_local(cfg: TorchTrainConfig) -> dict[int, dict[str, Any]]:
    """All ranks as forked processes on loopback; returns every rank's summary."""
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    master = ("127.0.0.1", _free_port())
    procs = [ctx.Process(target=_rank_main, args=(cfg, r, master, q)) for r in range(cfg.world_size)]
    for p in procs:
        p.start()
    results: dict[int, dict[str, Any]] = {}
    try:
        while len(results) < cfg.world_size:
            if not any(p.is_alive() for p in procs) and q.empty():
                break
            try:
                rank, summary = q.get(timeout=1.0)
            except Exception:  # noqa: BLE001 - queue.Empty: check the processes again
                continue
            results[rank] = summary
    finally:
        for p in procs:
            p.join(10)
        for p in [p for p in procs if p.is_alive()]:
            p.kill()
    return results


def parse_args(argv: list[str] | None = None) -> tuple[TorchTrainConfig, int | None, tuple[str, int] | None]:
    ap = argparse.ArgumentParser(prog="dlcp-agent torch-train", description=__doc__.split("\n\n")[0])
    ap.add_argument("--comm", choices=("dlcp", "baseline", "gloo"), default="dlcp",
                    help="dlcp: tagged, bounded loss; baseline: DLCP untagged and reliable; gloo: TCP")
    ap.add_argument("--nproc", type=int, default=4, help="ranks to start on loopback (default 4)")
    ap.add_argument("--rank", type=int, help="run only this rank (with --world-size and --master)")
    ap.add_argument("--world-size", type=int)
    ap.add_argument("--master", help="HOST:PORT of rank 0's rendezvous (gloo, set-up only)")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--loss-bound", type=float, default=0.10)
    ap.add_argument("--drop-noncritical", type=float, default=0.0,
                    help="inject this loss of non-critical DATA (a lossy relay before each rank)")
    ap.add_argument("--lost-elements", choices=("zero", "previous"), default="zero")
    ap.add_argument("--peer-timeout", type=float, default=30.0)
    ap.add_argument("--bucket-cap-mb", type=float, default=0.05)
    ap.add_argument("--in-flight", type=int, default=2, help="buckets the DLCP hook all-reduces at once (1-16)")
    ap.add_argument("--bind", help="local address for DLCP (default: the one routing to the master)")
    ap.add_argument("--port", type=int, help="DLCP UDP port (default 9290 off loopback, ephemeral on it)")
    ap.add_argument("--report", help="write the hook's per-step JSON lines to REPORT.rankN")
    ap.add_argument("--steps-out", help="append one JSON line per training step here ({rank}: the rank)")
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps (overrides --epochs)")
    a = ap.parse_args(argv)
    env_rank = os.environ.get("RANK")
    rank = a.rank if a.rank is not None else (int(env_rank) if env_rank is not None else None)
    world = a.world_size or (int(os.environ["WORLD_SIZE"]) if rank is not None and "WORLD_SIZE" in os.environ
                             else a.nproc)
    master = None
    if rank is not None:
        spec = a.master or (f"{os.environ['MASTER_ADDR']}:{os.environ.get('MASTER_PORT', '29500')}"
                            if "MASTER_ADDR" in os.environ else None)
        if spec is None or ":" not in spec:
            ap.error("--rank needs --master HOST:PORT (or MASTER_ADDR/MASTER_PORT)")
        host, _, port = spec.rpartition(":")
        if not port.isdigit():
            ap.error(f"--master {spec!r}: port must be a number")
        master = (host, int(port))
        if not 0 <= rank < world:
            ap.error(f"--rank {rank} outside 0..{world - 1}")
    if world < 1:
        ap.error(f"world size {world} must be >= 1")
    for name, v in (("--epochs", a.epochs), ("--batch-size", a.batch_size)):
        if v < 1:
            ap.error(f"{name} {v} must be >= 1")
    if not 0.0 <= a.drop_noncritical < 1.0 or not 0.0 <= a.loss_bound <= 1.0:
        ap.error("--drop-noncritical must be in [0, 1) and --loss-bound in [0, 1]")
    if a.drop_noncritical and a.comm == "gloo":
        ap.error("--drop-noncritical needs --comm dlcp or baseline (gloo's TCP cannot lose packets)")
    if a.steps < 0:
        ap.error(f"--steps {a.steps} must be >= 0")
    if not 1 <= a.in_flight <= 16:
        ap.error(f"--in-flight {a.in_flight} must be in 1..16")
    if a.steps_out and rank is None and a.nproc > 1 and "{rank}" not in a.steps_out:
        ap.error("--steps-out with --nproc needs {rank} in the file name (one file per rank)")
    cfg = TorchTrainConfig(comm=a.comm, world_size=world, epochs=a.epochs, batch_size=a.batch_size, lr=a.lr,
                           seed=a.seed, loss_bound=a.loss_bound, drop_noncritical=a.drop_noncritical,
                           lost_elements=a.lost_elements, peer_timeout=a.peer_timeout,
                           bucket_cap_mb=a.bucket_cap_mb, bind_host=a.bind, port=a.port, report_path=a.report,
                           steps_path=a.steps_out, max_steps=a.steps, in_flight=a.in_flight)
    return cfg, rank, master


def main(argv: list[str] | None = None) -> int:
    try:
        cfg, rank, master = parse_args(argv)
        if rank is not None:
            assert master is not None
            summary = _rank_main(cfg, rank, master)
            results = {rank: summary}
        else:
            results = run_local(cfg)
            if len(results) < cfg.world_size:
                missing = sorted(set(range(cfg.world_size)) - set(results))
                raise UserError(f"rank(s) {missing} exited without a result (see their stderr)")
    except UserError as exc:
        print(f"dlcp-agent: error: {exc}", file=sys.stderr)
        return 1
    errors = [r for r in results.values() if r.get("event") == "error"]
    for r in errors:
        print(f"dlcp-agent: error: rank {r['rank']}: {r['error']}", file=sys.stderr)
    if errors:
        return 1
    first = results[min(results)]
    print(json.dumps(first))
    return 0


if __name__ == "__main__":
    sys.exit(main())
