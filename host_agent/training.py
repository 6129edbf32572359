"""A real data-parallel training job: a NumPy MLP on scikit-learn's digits, over the PS collectives.

Loss tolerance is judged on real accuracy, not assumed: N workers each compute gradients on their
shard, push them through the chosen transport (dlcp | baseline | tcp) to a parameter server that
averages them and applies SGD, and pull the parameters back. Loss is injected with a real lossy UDP
relay in front of the server. Every iteration yields one JSON-lines record (communication time,
bytes, loss fraction per layer class, retransmissions, test accuracy).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from host_agent.collectives import PSServer, PSWorker
from host_agent.endpoint import Endpoint, EndpointConfig
from host_agent.errors import UserError
from host_agent.policy import BASELINE_POLICY, TagPolicy
from host_agent.relay import LossyRelay, drop_noncritical
from host_agent.tcp_baseline import TcpPSServer, TcpPSWorker

log = logging.getLogger(__name__)
MODES = ("dlcp", "baseline", "tcp")


def load_digits_split(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's digits (shipped inside the package), scaled to [0, 1], 80/20 split."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise UserError("the digits training job needs scikit-learn (pip install scikit-learn)") from None
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    cut = int(0.8 * len(y))
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


class MLP:
    """ReLU/softmax MLP, 64-64-10 by default; parameters are a list of float32 arrays [W1, b1, W2, b2, ...].

    ``hidden`` widens or deepens it: ``hidden=(400, 400)`` (workload ``digits-wide``, 190k parameters)
    makes one worker's gradients about 530 packets, the size the published evaluations move.
    """

    def __init__(self, n_in: int = 64, hidden: int | tuple[int, ...] = 64, n_out: int = 10, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        widths = [n_in, *((hidden,) if isinstance(hidden, int) else hidden), n_out]
        self.params: list[np.ndarray] = []
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
            gain = 1 / a if i == len(widths) - 2 else 2 / a      # He for ReLU layers, 1/fan_in for the output
            self.params += [(rng.standard_normal((a, b)) * np.sqrt(gain)).astype(np.float32), np.zeros(b, np.float32)]

    @staticmethod
    def _forward(params: list[np.ndarray], x: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        acts = [x]
        for i in range(0, len(params) - 2, 2):
            acts.append(np.maximum(acts[-1] @ params[i] + params[i + 1], 0))
        return acts, acts[-1] @ params[-2] + params[-1]

    @staticmethod
    def gradients(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> tuple[list[np.ndarray], float]:
        acts, z = MLP._forward(params, x)
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        loss = float(-np.log(p[np.arange(len(y)), y] + 1e-12).mean())
        d = p
        d[np.arange(len(y)), y] -= 1
        d /= len(y)
        grads: list[np.ndarray] = [np.empty(0)] * len(params)
        for i in range(len(params) - 2, -1, -2):           # backpropagation: last layer first
            grads[i], grads[i + 1] = acts[i // 2].T @ d, d.sum(0)
            if i:
                d = (d @ params[i].T) * (acts[i // 2] > 0)
        return [g.astype(np.float32) for g in grads], loss

    @staticmethod
    def accuracy(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> float:
        return float((MLP._forward(params, x)[1].argmax(1) == y).mean())


@dataclass
class TrainConfig:
    workers: int = 4
    epochs: int = 8
    batch: int = 32            # per worker
    lr: float = 0.5
    mode: str = "dlcp"         # dlcp | baseline | tcp
    loss_rate: float = 0.0     # random loss of non-critical gradient packets (relay)
    loss_bound: float = 0.10
    critical_share: float = 0.05
    seed: int = 0
    mtu: int = 1500


def train(cfg: TrainConfig, record: Callable[[dict], None] | None = None) -> float:
    """Run the job in this process (server and workers as threads); returns final test accuracy."""
    if cfg.mode not in MODES:
        raise UserError(f"mode {cfg.mode!r} not one of {', '.join(MODES)}")
    xtr, ytr, xte, yte = load_digits_split(cfg.seed)
    model = MLP(seed=cfg.seed)
    shapes = [p.shape for p in model.params]
    server_params = [p.copy() for p in model.params]
    n = cfg.workers

    def update(tid: int, grad_sum: np.ndarray) -> np.ndarray:
        server_params[tid] -= cfg.lr * grad_sum / n
        return server_params[tid]

    policy = BASELINE_POLICY if cfg.mode == "baseline" else TagPolicy(
        loss_bound=cfg.loss_bound, critical_share=cfg.critical_share)
    shards = np.array_split(np.random.default_rng(cfg.seed + 1).permutation(len(ytr)), n)
    iters_per_epoch = min(len(s) for s in shards) // cfg.batch
    total_iters = cfg.epochs * iters_per_epoch
    relays: list[LossyRelay] = []
    endpoints: list[Endpoint] = []
    if cfg.mode == "tcp":
        server = TcpPSServer(("127.0.0.1", 0), shapes, n, update)
        server_addr = server.address
    else:
        sep = Endpoint(EndpointConfig(job_id=1, worker_id=0xFFFF))
        endpoints.append(sep)
        server = PSServer(sep, shapes, n, policy, update, mtu=cfg.mtu)
        server_addr = sep.address
    errors: list[BaseException] = []
    server_stats: list = []

    def run_server() -> None:
        try:
            for it in range(total_iters):
                server_stats.append(server.step(it))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    worker_params = [[p.copy() for p in model.params] for _ in range(n)]
    workers = []
    for r in range(n):
        if cfg.mode == "tcp":
            workers.append(None)
            continue
        target = server_addr
        if cfg.loss_rate:
            relay = LossyRelay(server_addr, drop_noncritical(cfg.loss_rate, seed=cfg.seed * 100 + r)).__enter__()
            relays.append(relay)
            target = relay.address
        ep = Endpoint(EndpointConfig(job_id=1, worker_id=r))
        endpoints.append(ep)
        workers.append(PSWorker(ep, target, worker_params[r], policy, mtu=cfg.mtu))
    st = threading.Thread(target=run_server, daemon=True)
    st.start()
    if cfg.mode == "tcp":
        workers = [TcpPSWorker(server_addr, r, worker_params[r]) for r in range(n)]
    worker_stats: list[list] = [[] for _ in range(n)]
    barrier = threading.Barrier(n)
    losses = np.zeros(n)

    def run_worker(r: int) -> None:
        try:
            rng = np.random.default_rng(cfg.seed * 1000 + r)
            for it in range(total_iters):
                if it % iters_per_epoch == 0:
                    order = rng.permutation(shards[r])
                b = order[(it % iters_per_epoch) * cfg.batch:(it % iters_per_epoch + 1) * cfg.batch]
                grads, losses[r] = MLP.gradients(worker_params[r], xtr[b], ytr[b])
                worker_stats[r].append(workers[r].step(it, grads))
                barrier.wait(timeout=60)
                if r == 0:
                    _emit(it)
                barrier.wait(timeout=60)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            barrier.abort()

    pending: list[dict] = []

    def _emit(it: int) -> None:
        rec = {"iteration": it, "epoch": it // iters_per_epoch, "mode": cfg.mode,
               "train_loss": round(float(losses.mean()), 5),
               "accuracy": MLP.accuracy(worker_params[0], xte, yte)}
        rec["comm_seconds"] = round(max(w[it].seconds for w in worker_stats), 6)
        rec["bytes_sent"] = sum(w[it].bytes_sent for w in worker_stats)
        rec["retransmissions"] = sum(w[it].retransmitted for w in worker_stats)
        rec["spurious_retransmissions"] = sum(getattr(w[it], "spurious_retransmissions", 0) for w in worker_stats)
        pending.append(rec)

    threads = [threading.Thread(target=run_worker, args=(r,), daemon=True) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    st.join(60)
    for relay in relays:
        relay.stop()
    for ep in endpoints:
        ep.sock.close()
    for w in workers:
        if isinstance(w, TcpPSWorker):
            w.close()
    if isinstance(server, TcpPSServer):
        server.close()
    if errors:
        raise errors[0]
    for rec, srv in zip(pending, server_stats, strict=False):
        rec["bytes_sent"] += srv.bytes_sent
        rec["retransmissions"] += srv.retransmitted
        rec["spurious_retransmissions"] += getattr(srv, "spurious_retransmissions", 0)
        rec["zero_filled_elements"] = srv.zero_filled_elements
        rec["loss_by_class"] = srv.loss_by_class()
        if record is not None:
            record(rec)
    return MLP.accuracy(worker_params[0], xte, yte)


def write_jsonl(path: str | None) -> Callable[[dict], None]:
    """A record sink: JSON lines to ``path`` (or stdout when None/"-")."""
    if path in (None, "-"):
        return lambda rec: print(json.dumps(rec), flush=True)
    fh = open(path, "a")  # noqa: SIM115 - closed at exit by the CLI process

    def sink(rec: dict) -> None:
        fh.write(json.dumps(rec) + "\n")
        fh.flush()
    return sink
