"""Collectives over the DLCP transport: parameter-server push/pull and ring all-reduce.

Loss semantics (docs/transport.md, "Collectives"):
- PS push: each worker's gradient tensors reach the server with at most p of their non-critical
  packets missing; missing gradient elements count as 0 in the sum (zero-filled and counted).
- PS pull: parameters go back tagged PULL; missing parameter elements keep the worker's previous
  value (so a worker may lag by one update on at most p of the non-critical packets).
- Ring reduce-scatter: each of the N-1 steps is a gradient transfer with bound p; an element whose
  packet is missing at step s loses the partial sum of s+1 ranks. All-gather: sent as parameters,
  all CRITICAL with loss bound 0 (full reliability), so every rank ends with the same values.
With no loss both equal the exact sum (bit-exact for values whose sums are exact in float32).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from host_agent import protocol as P
from host_agent.endpoint import Endpoint, RecvHandle, SendHandle
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy

PS_SERVER_ID = 0xFFFF


@dataclass
class CommStats:
    """What one collective call cost: the per-iteration JSON-lines fields."""

    seconds: float = 0.0
    bytes_sent: int = 0
    packets_sent: int = 0
    retransmitted: int = 0
    shed: int = 0                       # droppable packets left out: the receiver held senders
    packets_by_class: dict[int, int] = field(default_factory=lambda: collections.Counter())
    missing_by_class: dict[int, int] = field(default_factory=lambda: collections.Counter())
    zero_filled_elements: int = 0
    spurious_retransmissions: int = 0   # received here twice after being asked for again
    # ring all-reduce evidence (host_agent/ring.py), per step in order: seconds from the step's
    # send (its chunk packed) to its receive being complete, and from the same send to its DONE
    step_recv_s: list[float] = field(default_factory=list)
    step_ack_s: list[float] = field(default_factory=list)
    # wall-clock (time.time) instant of each step's send, the origin of the two above: Mininet hosts
    # share one clock, so the ranks' records together show who waited for whom around the ring
    step_start_unix: list[float] = field(default_factory=list)
    # the wire tensor id each step received (with several buckets in flight their steps interleave)
    step_tensor_id: list[int] = field(default_factory=list)

    def add_send(self, h: SendHandle) -> None:
        self.bytes_sent += h.stats.bytes
        self.packets_sent += h.stats.packets
        self.retransmitted += h.stats.retransmitted
        self.shed += h.stats.shed

    def add_recv(self, h: RecvHandle) -> None:
        assert h.stats is not None
        self.packets_by_class[h.layer_class] += h.stats.n_packets
        # packets never received: zero-filled (gradients) or left at the previous value (parameters)
        self.missing_by_class[h.layer_class] += h.stats.n_packets - h.stats.received
        self.zero_filled_elements += h.stats.zero_filled_elements

    def merge(self, other: CommStats) -> None:
        self.seconds += other.seconds
        self.bytes_sent += other.bytes_sent
        self.packets_sent += other.packets_sent
        self.retransmitted += other.retransmitted
        self.shed += other.shed
        self.packets_by_class.update(other.packets_by_class)
        self.missing_by_class.update(other.missing_by_class)
        self.zero_filled_elements += other.zero_filled_elements
        self.spurious_retransmissions += other.spurious_retransmissions
        self.step_recv_s += other.step_recv_s
        self.step_ack_s += other.step_ack_s
        self.step_start_unix += other.step_start_unix
        self.step_tensor_id += other.step_tensor_id

    def loss_by_class(self) -> dict[str, float]:
        """Share of received-side packets missing at completion, per layer class."""
        return {str(c): self.missing_by_class[c] / n for c, n in sorted(self.packets_by_class.items()) if n}

    def as_record(self) -> dict:
        rec = {"comm_seconds": round(self.seconds, 6), "bytes_sent": self.bytes_sent,
               "packets_sent": self.packets_sent, "retransmissions": self.retransmitted,
               "shed_packets": self.shed, "spurious_retransmissions": self.spurious_retransmissions,
               "zero_filled_elements": self.zero_filled_elements, "loss_by_class": self.loss_by_class()}
        if self.step_recv_s:
            rec["ring_step_recv_ms"] = [round(t * 1e3, 1) for t in self.step_recv_s]
            rec["ring_step_ack_ms"] = [round(t * 1e3, 1) for t in self.step_ack_s]
            rec["ring_step_start_unix"] = [round(t, 4) for t in self.step_start_unix]
            rec["ring_step_tensor_id"] = list(self.step_tensor_id)
        return rec


def _pack(t: np.ndarray, tid: int, pos: int, n: int, policy: TagPolicy, ep: Endpoint, iteration: int,
          kind: int = P.KIND_GRADIENT, mtu: int = 1500):
    return packetize(t, tensor_id=tid, policy=policy, position=pos, num_layers=n, job_id=ep.cfg.job_id,
                     worker_id=ep.cfg.worker_id, iteration=iteration, pull=kind == P.KIND_PARAMETER,
                     kind=kind, mtu=mtu)


class PSWorker:
    """A worker: pushes its gradients, pulls parameters into ``params`` (kept on loss)."""

    def __init__(self, ep: Endpoint, server: tuple[str, int], params: Sequence[np.ndarray],
                 policy: TagPolicy, mtu: int = 1500, timeout: float = 60.0) -> None:
        self.ep, self.server, self.params, self.policy, self.mtu = ep, server, list(params), policy, mtu
        self.timeout = timeout

    def step(self, iteration: int, grads: Sequence[np.ndarray]) -> CommStats:
        """Push ``grads`` for ``iteration`` and wait for the server's parameters."""
        t0 = time.perf_counter()
        stats = CommStats()
        spurious0 = self.ep.spurious_retransmissions
        n = len(grads)
        recvs = [self.ep.expect(PS_SERVER_ID, iteration, tid, p) for tid, p in enumerate(self.params)]
        sends = [self.ep.send(_pack(g, tid, tid, n, self.policy, self.ep, iteration, mtu=self.mtu), self.server)
                 for tid, g in enumerate(grads)]
        self.ep.run(sends + recvs, timeout=self.timeout)
        for h in sends:
            stats.add_send(h)
        for h in recvs:
            stats.add_recv(h)
        stats.spurious_retransmissions = self.ep.spurious_retransmissions - spurious0
        stats.seconds = time.perf_counter() - t0
        return stats


class PSServer:
    """The server: sums gradients of ``n_workers``, applies ``update`` and pushes parameters back.

    ``update(tensor_id, grad_sum) -> params`` defaults to returning the sum itself (the PS then
    behaves as an all-reduce, which is what the correctness tests check).
    """

    def __init__(self, ep: Endpoint, shapes: Sequence[tuple[int, ...]], n_workers: int, policy: TagPolicy,
                 update: Callable[[int, np.ndarray], np.ndarray] | None = None, mtu: int = 1500,
                 timeout: float = 60.0) -> None:
        self.ep, self.shapes, self.n_workers, self.policy, self.mtu = ep, list(shapes), n_workers, policy, mtu
        self.update = update or (lambda tid, s: s)
        self.timeout = timeout
        self._pending: dict[int, list[tuple[RecvHandle, np.ndarray]]] = {}
        self.last_sum: list[np.ndarray] = []

    def _expect(self, iteration: int) -> list[tuple[RecvHandle, np.ndarray]]:
        if iteration not in self._pending:
            bufs = []
            for w in range(self.n_workers):
                for tid, shape in enumerate(self.shapes):
                    out = np.zeros(shape, np.float32)
                    bufs.append((self.ep.expect(w, iteration, tid, out), out))
            self._pending[iteration] = bufs
        return self._pending[iteration]

    def step(self, iteration: int) -> CommStats:
        t0 = time.perf_counter()
        stats = CommStats()
        spurious0 = self.ep.spurious_retransmissions
        got = self._expect(iteration)
        self.ep.run([h for h, _ in got], timeout=self.timeout)
        self._expect(iteration + 1)                 # ready before workers can push again
        sums = [np.zeros(s, np.float32) for s in self.shapes]
        peers: dict[int, tuple[str, int]] = {}
        for h, out in got:
            sums[h.tensor_id] += out
            stats.add_recv(h)
            assert h.peer is not None
            peers[h.worker_id] = h.peer
        self.last_sum = sums
        params = [np.ascontiguousarray(self.update(tid, s), np.float32) for tid, s in enumerate(sums)]
        n = len(params)
        sends = []
        for _w, addr in sorted(peers.items()):
            for tid, p in enumerate(params):
                pt = _pack(p, tid, tid, n, self.policy, self.ep, iteration, P.KIND_PARAMETER, self.mtu)
                sends.append(self.ep.send(pt, addr))
        self.ep.run(sends, timeout=self.timeout)
        for h in sends:
            stats.add_send(h)
        del self._pending[iteration]
        stats.spurious_retransmissions = self.ep.spurious_retransmissions - spurious0
        stats.seconds = time.perf_counter() - t0
        return stats


def ring_allreduce(ep: Endpoint, rank: int, addrs: Sequence[tuple[str, int]], data: np.ndarray,
                   iteration: int, policy: TagPolicy, mtu: int = 1500, timeout: float = 60.0) -> CommStats:
    """In-place ring all-reduce (sum) of the flat float32 array ``data`` among len(addrs) ranks.

    Rank r sends to ``addrs[(r + 1) % N]`` (its right neighbour) and receives from its left one.
    Message tensor ids are the step numbers 0..2N-3; reduce-scatter first, then all-gather. Each
    step waits only for the receive the next one needs (``host_agent/ring.py``); the sends are
    acknowledged before this returns, so the stats count their retransmissions.
    """
    from host_agent.ring import finish_sends, ring_task  # ring.py builds on this module's _pack

    t0 = time.perf_counter()
    stats = CommStats()
    spurious0 = ep.spurious_retransmissions
    sends: list[SendHandle] = []
    for handles in ring_task(ep, rank, addrs, data.reshape(-1), iteration, policy, stats, sends, mtu=mtu):
        ep.run(handles, timeout=timeout)
    ep.run(list(sends), timeout=timeout)
    finish_sends(sends, stats)
    stats.spurious_retransmissions = ep.spurious_retransmissions - spurious0
    stats.seconds = time.perf_counter() - t0
    return stats
