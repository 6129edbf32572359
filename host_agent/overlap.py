"""Training iterations as the accelerator sees them: backprop order, per-layer compute, overlap.

The published evaluations (P3, ByteScheduler, DLCP, MLT) measure iteration time with computation
overlapping communication: the backward pass produces the LAST layer's gradients first, each is
pushed as soon as it is ready, and the next forward pass starts layer by layer as each layer's
parameters (PS) or reduced gradients (all-reduce) arrive. That is why front layers get the high
priorities. This module runs that schedule for one worker process:

- ``ComputeModel``: emulated forward/backward time per layer, proportional to the layer's
  parameter count, the total scaled to the emulated link (``ratio`` x the time the worker's own
  gradients take on one link), so compute and communication are of the same order, as on the
  papers' testbeds. Forward is 1/3, backward 2/3 of it. The accelerator is idle CPU-wise: compute
  is waiting while the transport keeps running (the endpoint is polled throughout).
- Iteration time (the primary metric): ``iter_seconds(i) = fwd_done(i+1) - fwd_done(i)``, i.e. the
  backward pass of i, the communication it could not hide, and the forward pass of i+1 (the worker
  runs one extra forward pass to close the last iteration). ``exposed_comm_seconds`` is
  ``iter_seconds - compute_seconds``; ``comm_seconds`` (secondary) runs from the first push to the
  last parameter arrival.
- ``overlap=False`` is the comparison mode: the whole backward pass, then every push and pull,
  then the forward pass.

Transports: ``dlcp``/``baseline`` over one DLCP ``Endpoint`` (a cooperative loop: compute is
"time passing while the endpoint is polled"), ``tcp`` over kernel sockets (one thread per socket
direction, like Gloo/ps-lite), with the congestion control chosen per socket (``TCP_CONGESTION``).
"""

from __future__ import annotations

import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field

import numpy as np

from host_agent import protocol as P
from host_agent.collectives import PS_SERVER_ID, CommStats, _pack
from host_agent.endpoint import Endpoint, send_by_class
from host_agent.errors import TransportError, UserError
from host_agent.policy import TagPolicy
from host_agent.ring import bucket_need_positions, finish_sends, ring_task
from host_agent.tcp_baseline import FRAME, recv_exact, send_tensor
from host_agent.workloads import Workload

POLL_S = 0.002


def wire_tid(iteration: int, tid: int) -> int:
    """Tensor id on the wire: iteration parity in the top bit, so ids of i and i+1 never collide."""
    return ((iteration & 1) << (P.TENSOR_ID_BITS - 1)) | tid


@dataclass(frozen=True)
class ComputeModel:
    """Emulated compute seconds per layer (model order) for the forward and backward passes."""

    forward: tuple[float, ...]
    backward: tuple[float, ...]

    @property
    def total(self) -> float:
        return sum(self.forward) + sum(self.backward)

    @classmethod
    def scaled(cls, layer_elements: Sequence[int], link_mbps: float, ratio: float,
               bytes_per_element: int = 4) -> ComputeModel:
        n = len(layer_elements)
        if ratio <= 0 or link_mbps <= 0 or n == 0:
            return cls((0.0,) * n, (0.0,) * n)
        total_elems = sum(layer_elements)
        total = ratio * total_elems * bytes_per_element * 8 / (link_mbps * 1e6)
        share = [e / total_elems for e in layer_elements]
        return cls(tuple(total / 3 * s for s in share), tuple(2 * total / 3 * s for s in share))


class Gpu:
    """The accelerator's own clock: layer k ends ``seconds`` after max(previous layer's end, its input's
    arrival), whatever the CPU is doing meanwhile (the transport's work does not delay the GPU).
    ``wait_until(t)`` passes real time until ``t`` (polling the transport, or sleeping)."""

    def __init__(self, wait_until: Callable[[float], None]) -> None:
        self.wait_until = wait_until
        self.t = time.perf_counter()

    def run(self, seconds: float, not_before: float = 0.0) -> float:
        self.t = max(self.t, not_before) + seconds
        self.wait_until(self.t)
        return self.t

    def idle_until(self, t: float) -> None:
        self.t = max(self.t, t)


def _sleep_until(t: float) -> None:
    if (left := t - time.perf_counter()) > 0:
        time.sleep(left)


@dataclass
class IterationRecord:
    """One worker's iteration as the JSON-lines record fields."""

    iteration: int
    iter_seconds: float
    compute_seconds: float
    comm_seconds: float
    comm: CommStats = field(default_factory=CommStats)
    # when each layer's parameters arrived, seconds after the backward pass began (PS, DLCP)
    layer_arrival_s: list[float] | None = None
    transport: dict | None = None      # the endpoint's cumulative counters (Endpoint.counters)
    # each layer's push (PS, DLCP): seconds after the backward pass began until its DONE (None: not yet
    # acknowledged when the record was written), and the PROBEs it took (repair rounds show here)
    push_done_s: list[float | None] | None = None
    push_probes: list[int] | None = None
    # wall-clock time (time.time) the iteration began: lines the record up with switch pcaps
    start_unix: float | None = None

    def as_record(self) -> dict:
        rec = self.comm.as_record()
        if self.layer_arrival_s is not None:
            rec["layer_arrival_s"] = [round(t, 4) for t in self.layer_arrival_s]
        if self.push_done_s is not None:
            rec["push_done_s"] = [None if t is None else round(t, 4) for t in self.push_done_s]
            rec["push_probes"] = self.push_probes
        if self.transport is not None:
            rec["transport"] = self.transport
        if self.start_unix is not None:
            rec["start_unix"] = round(self.start_unix, 6)
        rec.update(iter_seconds=round(self.iter_seconds, 6), compute_seconds=round(self.compute_seconds, 6),
                   exposed_comm_seconds=round(max(0.0, self.iter_seconds - self.compute_seconds), 6),
                   comm_seconds=round(self.comm_seconds, 6),
                   packets_by_class={str(k): v for k, v in sorted(self.comm.packets_by_class.items())},
                   missing_by_class={str(k): v for k, v in sorted(self.comm.missing_by_class.items())})
        return rec


# -- the cooperative loop over one DLCP endpoint --------------------------------------------------
class EventLoop:
    """Polls ``ep`` while emulated compute passes and while communication tasks (generators) run.

    A task yields a list of handles (resumed when all are done) or a callable (resumed when it
    returns True). ``done_at`` records when each watched handle was first seen complete.
    """

    def __init__(self, ep: Endpoint, timeout: float) -> None:
        self.ep, self.timeout = ep, timeout
        self.tasks: list[list] = []
        self.done_at: dict[int, float] = {}
        self._watched: list = []

    def watch(self, handles: Sequence) -> None:
        self._watched.extend(handles)

    def spawn(self, task: Generator) -> None:
        self.tasks.append([task, None])
        self._advance()

    def _ready(self, waiting) -> bool:
        if waiting is None:
            return True
        if callable(waiting):
            return bool(waiting())
        for h in waiting:
            if getattr(h, "failed", False):
                raise TransportError(self.ep._failure(h))
        return all(h.done for h in waiting)

    def _advance(self) -> None:
        watched = self._watched
        for h in watched:               # the list is rebuilt only when a handle finished
            if h.done:
                now = time.perf_counter()
                still = []
                for w in watched:
                    if w.done:
                        self.done_at[id(w)] = now
                    else:
                        still.append(w)
                self._watched = still
                break
        if not self.tasks:
            return
        for task in list(self.tasks):
            while self._ready(task[1]):
                try:
                    task[1] = next(task[0])
                except StopIteration:
                    self.tasks.remove(task)
                    break

    def wait(self, cond: Callable[[], bool], what: str) -> None:
        end = time.monotonic() + self.timeout
        self._advance()
        while not cond():
            if time.monotonic() > end:
                raise TransportError(f"timed out after {self.timeout:.0f}s waiting for {what}")
            self.ep.poll(POLL_S)
            self._advance()

    def wait_handles(self, handles: Sequence, what: str) -> None:
        pending = list(handles)

        def done() -> bool:             # as _ready(handles), shrinking the list as handles finish
            for h in pending:           # before the shrink: a delivery can fail as its handle is done
                if getattr(h, "failed", False):
                    raise TransportError(self.ep._failure(h))
            pending[:] = [h for h in pending if not h.done]
            return not pending

        self.wait(done, what)

    def spin_until(self, end: float) -> None:
        """Emulated compute until ``end`` (perf_counter) while the transport keeps working."""
        self._advance()
        while (left := end - time.perf_counter()) > 0:
            self.ep.poll(min(left, POLL_S))
            self._advance()


def _finish_comm(loop: EventLoop, sends: list, recvs: list, start: float | None) -> tuple[CommStats, float]:
    stats = CommStats()
    for h in sends:
        stats.add_send(h)
    for h in recvs:
        stats.add_recv(h)
    end = max((loop.done_at.get(id(h), time.perf_counter()) for h in recvs), default=time.perf_counter())
    return stats, (end - start) if start is not None else 0.0


# -- parameter server over DLCP / reliable UDP ----------------------------------------------------
# The DLCP parameter server moves a layer in slices of at most this many packets (P3-style: each
# slice is its own tensor, summed and sent back as soon as every worker's copy of it is in), so the
# parameter fan-out of a big layer overlaps the rest of its gradient stream instead of waiting for
# the whole layer (store-and-forward: digits-wide's hidden layer, 442 packets, is 0.29 s at a
# worker's 20 Mbit/s port after its last gradient packet; measured in tcp-bulk at load 7, 0.53-0.59 s
# from the last gradient DONE to the parameters). 0 = whole layers. The environment variable
# DLCP_PS_SLICE_PACKETS overrides it (every agent of a job must agree; measurements only).
# Measured (H10a, session 6, docs/experiments-history.md): see PS_SEND_BY_CLASS.
PS_SLICE_PACKETS = 128
# The PS agents' endpoints serve the highest layer class first (endpoint.send_by_class): a worker's
# front layer, pushed last by backprop, overtakes the rest of the big hidden layer's slices, and the
# server returns it first. The environment variable DLCP_SEND_BY_CLASS overrides it. Measured in
# tcp-bulk, dlcp only, 2 seeds x 8 iterations per variant and round, rounds interleaved (load 7):
# job median whole layers 2.20 / 1.88 s, slices 2.05 / 1.82 s, slices + class order 1.87 / 1.77 s.
PS_SEND_BY_CLASS = True
# The last slices of a sliced layer taper: ..., 4t, 2t, t packets (t = this), the rest of the layer in
# about equal slices of at most PS_SLICE_PACKETS. A worker sends a layer's slices in order and the
# server sums a slice once every worker's copy of it is in, then sends the whole sum through each
# worker's port: the slice that completes last is then t packets (the iteration waits for its
# store-and-forward), and each earlier tapered slice, completing at least the later ones' packets
# before the end, is back by then too. digits-wide's hidden layer: 110, 110, 110, 64, 32, 16 packets
# instead of 110, 111, 110, 111 (the same loss budget, 40 packets per worker). tcp-bulk's bound
# (docs/results/tcp-bulk-bound.md, at frame level) 1.277 -> 1.222 s; streaming per-packet aggregation
# would give 1.214 s. Layers of at most PS_SLICE_PACKETS packets (every layer of the digits MLP of the
# accuracy check) are not cut. Both parameter servers (DLCP and TCP) use the plan. 0 = no taper. The
# environment variable DLCP_PS_TAPER_PACKETS overrides it (every agent of a job must agree;
# measurements only). Measured in tcp-bulk (H14a, session 14, 9 seeds x 7 it., interleaved with the
# code before; docs/results/ps-tail-ab/report.md): DLCP's pull of the hidden layer 86 -> 34 ms, its
# mean -36 ms (0.973x [0.943, 1.001]), median 0.972x [0.938, 1.011], p99 0.949x [0.887, 1.054]
# (not significant); TCP cubic's mean -157 ms (0.93x [0.85, 1.02], n.s.).
PS_TAPER_PACKETS = 16


def _env_packets(name: str, default: int, zero: str) -> int:
    """A packet count from the environment variable ``name`` (``default`` when unset); UserError unless
    it is a whole number >= 0 (``zero``: what 0 means)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UserError(f"{name}={raw!r}: not a whole number of packets") from None
    if value < 0:
        raise UserError(f"{name}={raw!r}: must be >= 0 (0 = {zero})")
    return value


def ps_slice_packets() -> int:
    """The slice size in packets the PS job uses (``PS_SLICE_PACKETS`` or its environment override)."""
    return _env_packets("DLCP_PS_SLICE_PACKETS", PS_SLICE_PACKETS, "whole layers")


def ps_taper_packets() -> int:
    """The smallest tapered slice the PS job uses (``PS_TAPER_PACKETS`` or its environment override)."""
    return _env_packets("DLCP_PS_TAPER_PACKETS", PS_TAPER_PACKETS, "no taper")


def slice_sizes(packets: int, slice_packets: int, taper_packets: int = 0) -> list[int]:
    """Packets per slice of a layer of ``packets`` packets, in order: ``ceil(packets / slice_packets)``
    slices of about equal size (0: one slice); with ``taper_packets`` (> 0, < ``slice_packets``) a layer
    of more than ``slice_packets`` packets ends in slices of ..., 4t, 2t, t packets (each below
    ``slice_packets``) and the rest goes before them in about equal slices of at most ``slice_packets``."""
    if slice_packets <= 0 or packets <= 0:
        return [packets]
    tail: list[int] = []
    if 0 < taper_packets < slice_packets < packets:
        t = taper_packets
        while t < slice_packets and sum(tail) + t <= packets:
            tail.insert(0, t)
            t *= 2
    rest = packets - sum(tail)
    k = -(-rest // slice_packets)
    return [rest * (j + 1) // k - rest * j // k for j in range(k)] + tail


def ps_slices(shapes: Sequence[tuple[int, ...]], mtu: int, slice_packets: int,
              taper_packets: int = 0) -> list[tuple[int, int, int]]:
    """(layer, first element, end element) of every slice in model order: each layer cut into runs of
    whole packets (``slice_sizes``: about equal, at most ``slice_packets``, the last ones tapered down to
    ``taper_packets``; 0: whole layers)."""
    epp = P.max_elements_per_packet(mtu, P.DTYPE_FLOAT32)
    out = []
    for layer, shape in enumerate(shapes):
        n = int(np.prod(shape))
        bounds, end = [0], 0
        for size in slice_sizes(-(-n // epp), slice_packets, taper_packets):
            end += size
            bounds.append(min(n, end * epp))
        out.extend((layer, a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a)
    return out


def slice_updater(update: Callable[[int, np.ndarray], np.ndarray], shapes: Sequence[tuple[int, ...]],
                  slices: Sequence[tuple[int, int, int]]) -> Callable[[int, np.ndarray], np.ndarray]:
    """The server's update of one slice (flat float32): the workload's update of its layer with the other
    elements' gradients zero, so the update rule must be elementwise with a zero gradient changing
    nothing (SGD, the identity). Both parameter servers (DLCP and TCP) apply it alike."""
    def updated(s: int, total: np.ndarray) -> np.ndarray:
        layer, a, b = slices[s]
        if b - a == int(np.prod(shapes[layer])):
            return np.ascontiguousarray(update(layer, total.reshape(shapes[layer])), np.float32).reshape(-1)
        full = np.zeros(shapes[layer], np.float32)
        full.reshape(-1)[a:b] = total
        return np.ascontiguousarray(np.asarray(update(layer, full), np.float32).reshape(-1)[a:b])
    return updated


# Small tensors cost the DLCP PS per tensor, not per byte: each one is an OPEN, a DONE, the receiver's
# OPEN_ACK and GRANT, a partial last packet, a send() and its state on both sides. The PS therefore
# moves consecutive slices (model order) that together fit in this many packets as one tensor (PS_MERGE,
# as DDP's gradient buckets do): the digits MLP's b1, W2 and b2 (1 + 2 + 1 packets) go as one tensor of
# 2 packets, so a worker moves 2 tensors each way per iteration instead of 4. Only tensors this small
# merge (digits-wide's layers and slices stay as they are). 0 = no merging. The environment variable
# DLCP_PS_MERGE_PACKETS overrides it (every agent of a job must agree; measurements only). Measured in
# `accuracy`: H10b session 8, docs/experiments-history.md.
PS_MERGE_PACKETS = 4


def ps_merge_packets() -> int:
    """The merge size in packets the PS job uses (``PS_MERGE_PACKETS`` or its environment override)."""
    return _env_packets("DLCP_PS_MERGE_PACKETS", PS_MERGE_PACKETS, "no merging")


@dataclass(frozen=True)
class PsPlan:
    """The tensors a PS job moves each iteration, over the model's parameters concatenated in model order.

    ``tensors[s] = (first layer, start, end)``: elements [start, end) of the flat parameters; the first
    (front-most) layer gives the tensor its layer class, and backprop completes the tensor when it
    reaches that layer. A tensor is a slice of one layer (``ps_slices``: at most ``PS_SLICE_PACKETS``, a
    big layer's last slices tapered down to ``PS_TAPER_PACKETS``) or several consecutive small slices
    merged (``PS_MERGE_PACKETS``). Workers keep their parameters in one flat buffer (the layers
    are views of it), so every tensor is received in place.
    """

    shapes: tuple[tuple[int, ...], ...]
    offsets: tuple[int, ...]                      # layer l is flat[offsets[l]:offsets[l + 1]]
    tensors: tuple[tuple[int, int, int], ...]

    @classmethod
    def build(cls, shapes: Sequence[tuple[int, ...]], mtu: int, slice_packets: int | None = None,
              merge_packets: int | None = None, taper_packets: int | None = None) -> PsPlan:
        slice_packets = ps_slice_packets() if slice_packets is None else slice_packets
        merge_packets = ps_merge_packets() if merge_packets is None else merge_packets
        taper_packets = ps_taper_packets() if taper_packets is None else taper_packets
        epp = P.max_elements_per_packet(mtu, P.DTYPE_FLOAT32)
        sizes = [int(np.prod(s)) for s in shapes]
        offsets = tuple(int(x) for x in np.concatenate([[0], np.cumsum(sizes)]))
        # never merge past the slice size either (slices of a big layer stay apart)
        limit = min(merge_packets, slice_packets) if slice_packets > 0 else merge_packets
        out: list[list[int]] = []
        for layer, a, b in ps_slices(shapes, mtu, slice_packets, taper_packets):
            start, end = offsets[layer] + a, offsets[layer] + b
            if out and out[-1][2] == start and -(-(end - out[-1][1]) // epp) <= limit:
                out[-1][2] = end
            else:
                out.append([layer, start, end])
        return cls(tuple(tuple(int(x) for x in s) for s in shapes), offsets,
                   tuple((lay, a, b) for lay, a, b in out))

    def of_layer(self) -> list[list[int]]:
        """The tensors holding part of each layer (the forward pass of a layer waits for all of them)."""
        return [[s for s, (_f, a, b) in enumerate(self.tensors) if a < self.offsets[lay + 1] and b > self.offsets[lay]]
                for lay in range(len(self.shapes))]

    def pushed_at(self) -> list[list[int]]:
        """The tensors backprop completes at each layer (those whose first layer it is)."""
        return [[s for s, (first, _a, _b) in enumerate(self.tensors) if first == lay] for lay in range(len(self.shapes))]

    def bind(self, params: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """One flat float32 buffer holding ``params`` and the layers as views of it."""
        flat = np.concatenate([np.asarray(p, np.float32).reshape(-1) for p in params]) if params else \
            np.zeros(0, np.float32)
        return flat, [flat[self.offsets[i]:self.offsets[i + 1]].reshape(s) for i, s in enumerate(self.shapes)]

    def flatten(self, arrays: Sequence[np.ndarray]) -> np.ndarray:
        """The layers' arrays (gradients) concatenated in model order, as float32."""
        return np.concatenate([np.asarray(a, np.float32).reshape(-1) for a in arrays])

    def updater(self, update: Callable[[int, np.ndarray], np.ndarray]) -> Callable[[int, np.ndarray], np.ndarray]:
        """The server's update of tensor ``s`` from its summed gradients: ``slice_updater`` on every layer
        part of it (the same rule: elementwise, a zero gradient changes nothing)."""
        parts: list[list[tuple[int, int, int]]] = []   # per tensor: (its layer slice, start, end in it)
        layer_slices: list[tuple[int, int, int]] = []
        for _first, a, b in self.tensors:
            mine = []
            for lay in range(len(self.shapes)):
                lo, hi = max(a, self.offsets[lay]), min(b, self.offsets[lay + 1])
                if lo < hi:
                    mine.append((len(layer_slices), lo - a, hi - a))
                    layer_slices.append((lay, lo - self.offsets[lay], hi - self.offsets[lay]))
            parts.append(mine)
        per_layer = slice_updater(update, self.shapes, layer_slices)

        def updated(s: int, total: np.ndarray) -> np.ndarray:
            mine = parts[s]
            if len(mine) == 1:
                return per_layer(mine[0][0], total)
            return np.concatenate([per_layer(k, total[ta:tb]) for k, ta, tb in mine])
        return updated


def ps_worker_udp(ep: Endpoint, server: tuple[str, int], wl: Workload, rank: int, iterations: int,
                  compute: ComputeModel, overlap: bool, policy: TagPolicy, mtu: int, timeout: float,
                  emit: Callable[[IterationRecord, list[np.ndarray]], None],
                  slice_packets: int | None = None, merge_packets: int | None = None) -> list[np.ndarray]:
    plan = PsPlan.build(wl.shapes, mtu, slice_packets, merge_packets)
    flat, params = plan.bind(wl.initial_params())     # each tensor is received in place into ``flat``
    n = len(params)
    slices = plan.tensors
    ep.send_by_class = send_by_class(PS_SEND_BY_CLASS)
    of_layer, pushed_at = plan.of_layer(), plan.pushed_at()
    loop = EventLoop(ep, timeout)
    gpu = Gpu(loop.spin_until)
    recvs: list | None = None
    sends: dict[int, object] = {}          # slice -> its push
    older_sends: list = []
    prev_done = comm_start = 0.0
    spurious0 = ep.spurious_retransmissions

    def per_layer(times: list[float | None]) -> list[float | None]:   # a layer is done with its last slice
        return [None if any(times[s] is None for s in ss) else max(times[s] for s in ss) for ss in of_layer]

    for it in range(iterations + 1):
        for layer in range(n):
            arrival = 0.0
            if recvs is not None:
                mine = [recvs[s] for s in of_layer[layer]]
                loop.wait_handles(mine, f"parameters of layer {layer}, iteration {it - 1}")
                arrival = max(loop.done_at.get(id(h), time.perf_counter()) for h in mine)
            gpu.run(compute.forward[layer], arrival)
        fwd_done = gpu.t
        if recvs is not None:
            pushes = [sends[s] for s in range(len(slices))]
            stats, comm_s = _finish_comm(loop, pushes, recvs, comm_start)
            stats.spurious_retransmissions = ep.spurious_retransmissions - spurious0
            spurious0 = ep.spurious_retransmissions
            arrivals = per_layer([loop.done_at.get(id(h), fwd_done) - prev_done for h in recvs])
            pushed = per_layer([None if (t := loop.done_at.get(id(h))) is None else t - prev_done for h in pushes])
            probes = [sum(pushes[s].stats.probes for s in ss) for ss in of_layer]
            emit(IterationRecord(it - 1, fwd_done - prev_done, compute.total, comm_s, stats, arrivals,
                                 ep.counters(), pushed, probes,
                                 time.time() - (time.perf_counter() - prev_done)), params)
        if it == iterations:
            break
        prev_done = fwd_done
        grads = plan.flatten(wl.gradients(rank, it, params))
        recvs = [ep.expect(PS_SERVER_ID, it, wire_tid(it, s), flat[a:b]) for s, (_lay, a, b) in enumerate(slices)]
        loop.watch(recvs)
        loop.wait_handles(older_sends, f"acknowledgement of iteration {it - 2}'s gradients")  # wire ids repeat
        older_sends, sends = list(sends.values()), {}

        def push(layer: int, it: int = it, g: np.ndarray = grads, sends: dict = sends) -> None:
            for s in pushed_at[layer]:         # the tensors backprop has just completed
                first, a, b = slices[s]
                sends[s] = ep.send(_pack(g[a:b], wire_tid(it, s), first, n, policy, ep, it, mtu=mtu), server)
                loop.watch([sends[s]])

        for layer in reversed(range(n)):
            gpu.run(compute.backward[layer])
            if overlap:
                comm_start = comm_start if sends else gpu.t
                push(layer)
        if not overlap:
            comm_start = gpu.t
            for layer in reversed(range(n)):
                push(layer)
            loop.wait_handles(recvs, f"iteration {it}'s push and pull")
            gpu.idle_until(max(loop.done_at.get(id(h), time.perf_counter()) for h in recvs))  # all, then forward
    loop.wait_handles(list(sends.values()) + older_sends, "acknowledgement of the last gradients")
    return params


def ps_server_udp(ep: Endpoint, wl: Workload, n_workers: int, iterations: int, policy: TagPolicy, mtu: int,
                  timeout: float, emit: Callable[[int, CommStats], None], slice_packets: int | None = None,
                  merge_packets: int | None = None) -> None:
    """Sums each tensor of the plan (``PsPlan``) as soon as every worker's gradients of it arrived and
    pushes it back at once (``PsPlan.updater``)."""
    plan = PsPlan.build(wl.shapes, mtu, slice_packets, merge_packets)
    n = len(plan.shapes)
    slices = plan.tensors
    ep.send_by_class = send_by_class(PS_SEND_BY_CLASS)
    updated = plan.updater(wl.server_update(n_workers))
    loop = EventLoop(ep, timeout)

    def expect(it: int) -> dict:
        return {(w, s): (ep.expect(w, it, wire_tid(it, s), buf), buf)
                for w in range(n_workers) for s, buf in ((s, np.zeros(b - a, np.float32))
                                                         for s, (_lay, a, b) in enumerate(slices))}

    pending = {0: expect(0)}
    sends_of: dict[int, list] = {}
    done_stats: dict[int, CommStats] = {}
    for it in range(iterations):
        t0 = time.perf_counter()
        spurious0 = ep.spurious_retransmissions
        if it + 1 < iterations:
            pending[it + 1] = expect(it + 1)
        if it - 2 in sends_of:                  # wire ids repeat every two iterations
            _finish_push(loop, it - 2, sends_of.pop(it - 2), done_stats.pop(it - 2), emit)
        got = pending.pop(it)
        # each slice's receive handles, and the slices not summed yet (model order): the wait below
        # looks at these after every turn of the loop, so it touches no dict and builds no list
        of_slice = [tuple(got[(w, s)][0] for w in range(n_workers)) for s in range(len(slices))]
        waiting = list(range(len(slices)))
        sends = []
        stats = CommStats()

        def ready(s: int, of_slice: list = of_slice) -> bool:
            for h in of_slice[s]:
                if not h.done:
                    return False
            return True

        while waiting:
            loop.wait(lambda: any(ready(s) for s in waiting),  # noqa: B023
                      f"gradients of iteration {it}")
            for k, s in enumerate([s for s in waiting if ready(s)]):     # front layers first when several are ready
                if k:
                    # the fan-out just started leaves before the next tensor is summed and packed (the
                    # most urgent one first: the endpoint serves the highest class first)
                    ep.poll(0.0)
                waiting.remove(s)
                total = np.zeros(slices[s][2] - slices[s][1], np.float32)
                for w in range(n_workers):
                    h, buf = got[(w, s)]
                    total += buf
                    stats.add_recv(h)
                p = updated(s, total)
                # the same packets to every worker: packetized once, each send its own copy of the headers
                pt = _pack(p, wire_tid(it, s), slices[s][0], n, policy, ep, it, P.KIND_PARAMETER, mtu)
                copies = [pt] + [pt.copy() for _ in range(n_workers - 1)]
                for w in range(n_workers):
                    peer = got[(w, s)][0].peer
                    assert peer is not None
                    sends.append(ep.send(copies[w], peer))
        sends_of[it] = sends
        done_stats[it] = stats
        stats.spurious_retransmissions = ep.spurious_retransmissions - spurious0
        stats.seconds = time.perf_counter() - t0
    for it in sorted(sends_of):
        _finish_push(loop, it, sends_of[it], done_stats[it], emit)


def _finish_push(loop: EventLoop, it: int, sends: list, stats: CommStats, emit: Callable[[int, CommStats], None]) -> None:
    """Once the parameters of ``it`` are acknowledged, its record is complete (incl. retransmissions)."""
    loop.wait_handles(sends, f"parameters of iteration {it}")
    for h in sends:
        stats.add_send(h)
    emit(it, stats)


# -- ring all-reduce over DLCP / reliable UDP, bucketed in backprop order -------------------------
def buckets_of(layer_elements: Sequence[int], count: int) -> list[list[int]]:
    """Contiguous groups of layers (model order) of about equal size, like DDP's gradient buckets."""
    total = sum(layer_elements)
    count = max(1, min(count, len(layer_elements)))
    out: list[list[int]] = [[]]
    acc = 0
    for i, e in enumerate(layer_elements):
        if out[-1] and acc >= total * len(out) / count and len(out) < count:
            out.append([])
        out[-1].append(i)
        acc += e
    return out


def ring_steps(ep: Endpoint, rank: int, addrs: Sequence[tuple[str, int]], flat: np.ndarray, iteration: int,
               policy: TagPolicy, mtu: int, base_tid: int, position: int, num_layers: int,
               stats: CommStats, sends: list) -> Generator:
    """The ring all-reduce of ``flat`` as a task (host_agent/ring.py): each step waits only for its
    receive; the send handles go to ``sends``, acknowledged before the iteration's record."""
    yield from ring_task(ep, rank, addrs, flat, iteration, policy, stats, sends, mtu=mtu,
                         tensor_id=lambda step: wire_tid(iteration, base_tid + step),
                         position=position, num_layers=num_layers)


def allreduce_worker_udp(ep: Endpoint, rank: int, addrs: Sequence[tuple[str, int]], wl: Workload,
                         iterations: int, compute: ComputeModel, overlap: bool, policy: TagPolicy, mtu: int,
                         timeout: float, n_buckets: int, emit: Callable[[IterationRecord, np.ndarray], None],
                         in_flight: int = 1) -> None:
    """The ring all-reduce worker over DLCP: buckets reduced as backprop completes them, ``in_flight``
    of them at once (the k-th bucket to be ready goes to slot k mod in_flight, as in
    ``allreduce_worker_tcp``: each slot reduces its buckets one after the other)."""
    elems = [int(np.prod(s)) for s in wl.shapes]
    n = len(elems)
    groups = buckets_of(elems, n_buckets)
    bucket_of = {layer: b for b, g in enumerate(groups) for layer in g}
    need = bucket_need_positions(elems, groups, in_flight)   # each bucket's layer class: when the forward pass needs it
    steps = 2 * (len(addrs) - 1)
    loop = EventLoop(ep, timeout)
    gpu = Gpu(loop.spin_until)
    done_at: list[float | None] = []
    flats: list[np.ndarray] = []
    prev_done = comm_start = 0.0
    stats = CommStats()
    sends: list = []                   # the ring's send handles of the iteration being recorded
    spurious0 = ep.spurious_retransmissions
    for it in range(iterations + 1):
        for layer in range(n):
            arrival = 0.0
            if done_at:
                b = bucket_of[layer]
                loop.wait(lambda b=b, done_at=done_at: done_at[b] is not None, f"reduced bucket {b}, iteration {it - 1}")
                arrival = done_at[b] or 0.0
            gpu.run(compute.forward[layer], arrival)
        fwd_done = gpu.t
        if done_at:
            loop.wait_handles(sends, f"iteration {it - 1}'s ring sends to be acknowledged")
            finish_sends(sends, stats)
            stats.spurious_retransmissions = ep.spurious_retransmissions - spurious0
            spurious0 = ep.spurious_retransmissions
            comm_s = max(d for d in done_at if d is not None) - comm_start
            emit(IterationRecord(it - 1, fwd_done - prev_done, compute.total, comm_s, stats,
                                 transport=ep.counters()), np.concatenate(flats))
        if it == iterations:
            break
        prev_done = fwd_done
        grads = wl.gradients(rank, it, [])
        flats = [np.concatenate([grads[i].reshape(-1) for i in g]) for g in groups]
        done_at = [None] * len(groups)
        ready: list[int] = []
        stats = CommStats()
        sends = []

        def comm(slot: int, it: int = it, ready: list[int] = ready, done_at: list = done_at,
                 stats: CommStats = stats, flats: list = flats, sends: list = sends) -> Generator:
            for k in range(slot, len(groups), in_flight):
                yield lambda k=k: len(ready) > k
                b = ready[k]
                # layer class from when the next forward pass needs the bucket (front = high), not the step
                yield from ring_steps(ep, rank, addrs, flats[b], it, policy, mtu, b * steps, *need[b], stats, sends)
                done_at[b] = time.perf_counter()

        for slot in range(min(in_flight, len(groups))):
            loop.spawn(comm(slot))
        for layer in reversed(range(n)):
            gpu.run(compute.backward[layer])
            if overlap and layer == groups[bucket_of[layer]][0]:   # the bucket is complete in backprop order
                comm_start = comm_start if ready else gpu.t
                ready.append(bucket_of[layer])
        if not overlap:
            comm_start = gpu.t
            ready.extend(reversed(range(len(groups))))
            loop.wait(lambda done_at=done_at: all(d is not None for d in done_at), f"iteration {it}'s all-reduce")
            gpu.idle_until(max(d for d in done_at if d is not None))


# -- TCP (kernel reliability, the congestion control users pick) ----------------------------------
def set_congestion_control(sock: socket.socket, cc: str | None) -> None:
    if cc:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        except OSError as exc:
            raise TransportError(f"TCP congestion control {cc!r} not available: {exc.strerror}") from None


def connect_retry(addr: tuple[str, int], cc: str | None, start_timeout: float) -> socket.socket:
    """Connect, retrying for ``start_timeout`` s (the peer may still be starting on a loaded machine)."""
    end = time.monotonic() + start_timeout
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        set_congestion_control(sock, cc)
        sock.settimeout(max(1.0, start_timeout))
        try:
            sock.connect(addr)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(None)
            return sock
        except (ConnectionRefusedError, TimeoutError, OSError) as exc:
            sock.close()
            if time.monotonic() > end:
                raise TransportError(f"{addr[0]}:{addr[1]} did not accept a TCP connection within "
                                     f"{start_timeout:.0f}s ({exc})") from None
            time.sleep(0.1)


class _Sender(threading.Thread):
    """Writes queued (tensor id, array) frames to one socket in order; errors are kept for the owner."""

    def __init__(self, sock: socket.socket, wid: int) -> None:
        super().__init__(daemon=True)
        self.sock, self.wid = sock, wid
        self.q: queue.Queue = queue.Queue()
        self.bytes = 0
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        while (item := self.q.get()) is not None:
            try:
                self.bytes += send_tensor(self.sock, item[0], self.wid, item[1])
            except BaseException as exc:  # noqa: BLE001 - reported by the owner
                self.error = exc
                return

    def put(self, tid: int, arr: np.ndarray) -> None:
        if self.error:
            raise TransportError(f"TCP send failed: {self.error}")
        self.q.put((tid, arr))

    def close(self) -> None:
        self.q.put(None)
        self.join(30)


class _Arrivals:
    """Counts frames per tensor id as they arrive (``count[t]`` = iterations of t received)."""

    def __init__(self, n: int) -> None:
        self.cond = threading.Condition()
        self.count = [0] * n
        self.at: dict[tuple[int, int], float] = {}
        self.error: BaseException | None = None

    def arrived(self, tid: int) -> None:
        with self.cond:
            self.at[(self.count[tid], tid)] = time.perf_counter()
            self.count[tid] += 1
            self.cond.notify_all()

    def wait(self, tid: int, at_least: int, timeout: float) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: self.count[tid] >= at_least or self.error is not None, timeout):
                raise TransportError(f"timed out after {timeout:.0f}s waiting for tensor {tid}")
            if self.error is not None and self.count[tid] < at_least:
                raise TransportError(f"TCP receive failed: {self.error}")


def ps_worker_tcp(server: tuple[str, int], cc: str | None, wl: Workload, rank: int, iterations: int,
                  compute: ComputeModel, overlap: bool, timeout: float, start_timeout: float,
                  emit: Callable[[IterationRecord, list[np.ndarray]], None], mtu: int = 1500,
                  slice_packets: int | None = None, merge_packets: int | None = None) -> list[np.ndarray]:
    """The TCP worker moves the same tensors as the DLCP one (``PsPlan``: one frame per tensor, the
    frame's tensor id is the tensor's index), so both parameter servers overlap a big layer's fan-out
    with its gradient stream alike and the comparison is of transports, not of PS designs."""
    plan = PsPlan.build(wl.shapes, mtu, slice_packets, merge_packets)
    flat, params = plan.bind(wl.initial_params())
    n = len(params)
    slices = plan.tensors
    of_layer, pushed_at = plan.of_layer(), plan.pushed_at()
    views = [flat[a:b] for _lay, a, b in slices]     # where each tensor's frame lands
    sock = connect_retry(server, cc, start_timeout)
    sender = _Sender(sock, rank)
    arrivals = _Arrivals(len(slices))

    def receive() -> None:
        head = bytearray(FRAME.size)
        try:
            while True:
                recv_exact(sock, memoryview(head))
                tid, _wid, nbytes = FRAME.unpack(head)
                if tid >= len(slices) or nbytes != views[tid].nbytes:
                    raise TransportError(f"TCP frame for unknown tensor {tid} ({nbytes} bytes)")
                recv_exact(sock, memoryview(views[tid]).cast("B"))
                arrivals.arrived(tid)
        except BaseException as exc:  # noqa: BLE001 - seen by the waiting compute loop
            with arrivals.cond:
                arrivals.error = exc
                arrivals.cond.notify_all()

    threading.Thread(target=receive, daemon=True).start()
    gpu = Gpu(_sleep_until)
    prev_done = comm_start = 0.0
    bytes0 = 0
    for it in range(iterations + 1):
        for layer in range(n):
            arrival = 0.0
            if it:
                for s in of_layer[layer]:
                    arrivals.wait(s, it, timeout)
                arrival = max(arrivals.at[(it - 1, s)] for s in of_layer[layer])
            gpu.run(compute.forward[layer], arrival)
        fwd_done = gpu.t
        if it:
            end = max(arrivals.at[(it - 1, s)] for s in range(len(slices)))
            stats = CommStats(bytes_sent=sender.bytes - bytes0)
            bytes0 = sender.bytes
            emit(IterationRecord(it - 1, fwd_done - prev_done, compute.total, end - comm_start, stats), params)
        if it == iterations:
            break
        prev_done = fwd_done
        grads = plan.flatten(wl.gradients(rank, it, params))
        first = True

        def push(layer: int, g: np.ndarray = grads) -> None:
            for s in pushed_at[layer]:
                _first, a, b = slices[s]
                sender.put(s, g[a:b])

        for layer in reversed(range(n)):
            gpu.run(compute.backward[layer])
            if overlap:
                if first and pushed_at[layer]:       # communication starts with the first push
                    comm_start, first = gpu.t, False
                push(layer)
        if not overlap:
            comm_start = gpu.t
            for layer in reversed(range(n)):
                push(layer)
            for s in range(len(slices)):
                arrivals.wait(s, it + 1, timeout)
            gpu.idle_until(max(arrivals.at[(it, s)] for s in range(len(slices))))
    sender.close()
    sock.close()
    return params


def ps_server_tcp(bind: tuple[str, int], cc: str | None, wl: Workload, n_workers: int, iterations: int,
                  timeout: float, emit: Callable[[int, CommStats], None],
                  on_listening: Callable[[tuple[str, int]], None] | None = None, start_timeout: float = 30.0,
                  mtu: int = 1500, slice_packets: int | None = None, merge_packets: int | None = None) -> None:
    """Accepts the workers; per tensor (the DLCP server's ``PsPlan``), sums once all workers' frames
    of it arrived and sends it to each.

    Workers may start late on a loaded machine (each retries for its own ``start_timeout``), so the
    server waits ``timeout + start_timeout`` for all of them to connect."""
    plan = PsPlan.build(wl.shapes, mtu, slice_packets, merge_packets)
    slices = plan.tensors
    n = len(slices)
    updated = plan.updater(wl.server_update(n_workers))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    set_congestion_control(listener, cc)
    listener.bind(bind)
    listener.listen(n_workers)
    if on_listening:
        on_listening(listener.getsockname())
    listener.settimeout(timeout + start_timeout)
    conns = []
    try:
        while len(conns) < n_workers:
            conn, _ = listener.accept()
            set_congestion_control(conn, cc)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.settimeout(None)
            conns.append(conn)
    except TimeoutError:
        raise TransportError(f"only {len(conns)} of {n_workers} workers connected within "
                             f"{timeout + start_timeout:.0f}s") from None
    senders = [_Sender(c, 0xFFFF) for c in conns]
    lock = threading.Condition()
    sums: dict[tuple[int, int], np.ndarray] = {}
    counts: dict[tuple[int, int], int] = {}
    seen = [[0] * n for _ in conns]
    slices_done = [0] * max(iterations, 1)
    errors: list[BaseException] = []

    def reader(ci: int) -> None:
        head = bytearray(FRAME.size)
        buf = [np.empty(b - a, np.float32) for _lay, a, b in slices]
        try:
            for _ in range(iterations * n):
                recv_exact(conns[ci], memoryview(head))
                tid, _wid, nbytes = FRAME.unpack(head)
                if tid >= n or nbytes != buf[tid].nbytes:
                    raise TransportError(f"TCP frame for unknown tensor {tid} ({nbytes} bytes)")
                recv_exact(conns[ci], memoryview(buf[tid].reshape(-1)).cast("B"))
                with lock:
                    key = (seen[ci][tid], tid)
                    seen[ci][tid] += 1
                    if key in sums:
                        sums[key] += buf[tid]
                    else:
                        sums[key] = buf[tid].copy()
                    counts[key] = counts.get(key, 0) + 1
                    if counts[key] == n_workers:
                        p = updated(tid, sums.pop(key)).copy()
                        for s in senders:
                            s.put(tid, p)
                        slices_done[key[0]] += 1
                        lock.notify_all()
        except BaseException as exc:  # noqa: BLE001
            with lock:
                errors.append(exc)
                lock.notify_all()

    for ci in range(len(conns)):
        threading.Thread(target=reader, args=(ci,), daemon=True).start()
    for it in range(iterations):
        t0 = time.perf_counter()
        with lock:
            if not lock.wait_for(lambda: slices_done[it] == n or errors, timeout):  # noqa: B023
                raise TransportError(f"timed out after {timeout:.0f}s in iteration {it}")
            if errors:
                raise TransportError(f"TCP parameter server: {errors[0]}")
        emit(it, CommStats(seconds=time.perf_counter() - t0))
    for s in senders:
        s.close()
    for c in conns:
        c.close()
    listener.close()


def allreduce_worker_tcp(rank: int, addrs: Sequence[tuple[str, int]], cc: str | None, wl: Workload,
                         iterations: int, compute: ComputeModel, overlap: bool, timeout: float,
                         start_timeout: float, n_buckets: int,
                         emit: Callable[[IterationRecord, np.ndarray], None], in_flight: int = 1) -> None:
    """The ring all-reduce worker over TCP, Gloo-like: ``in_flight`` buckets at once, each slot with its
    own connections and thread, as gloo's worker threads run one collective each; the k-th bucket to
    be ready goes to slot k mod in_flight (as in ``allreduce_worker_udp``)."""
    from host_agent.tcp_baseline import open_rings
    rings = open_rings(rank, addrs, in_flight, timeout=start_timeout, congestion_control=cc)
    elems = [int(np.prod(s)) for s in wl.shapes]
    n = len(elems)
    groups = buckets_of(elems, n_buckets)
    bucket_of = {layer: b for b, g in enumerate(groups) for layer in g}
    works: list[queue.Queue] = [queue.Queue() for _ in rings]
    done = threading.Condition()
    done_at: dict[tuple[int, int], float] = {}
    errors: list[BaseException] = []
    sent = [0] * len(rings)
    queued = [0]                       # buckets handed to the slots so far

    def put(item: tuple) -> None:
        works[queued[0] % len(works)].put(item)
        queued[0] += 1

    def comm(slot: int) -> None:
        try:
            while (item := works[slot].get()) is not None:
                it, b, flat = item
                sent[slot] += rings[slot].allreduce(flat).bytes_sent
                with done:
                    done_at[(it, b)] = time.perf_counter()
                    done.notify_all()
        except BaseException as exc:  # noqa: BLE001
            with done:
                errors.append(exc)
                done.notify_all()

    for slot in range(len(rings)):
        threading.Thread(target=comm, args=(slot,), daemon=True).start()

    def wait_bucket(it: int, b: int) -> None:
        with done:
            if not done.wait_for(lambda: (it, b) in done_at or errors, timeout):
                raise TransportError(f"timed out after {timeout:.0f}s waiting for bucket {b}")
            if errors:
                raise TransportError(f"TCP ring: {errors[0]}")

    gpu = Gpu(_sleep_until)
    prev_done = comm_start = 0.0
    flats: list[np.ndarray] = []
    sent0 = 0
    for it in range(iterations + 1):
        for layer in range(n):
            arrival = 0.0
            if it:
                wait_bucket(it - 1, bucket_of[layer])
                arrival = done_at[(it - 1, bucket_of[layer])]
            gpu.run(compute.forward[layer], arrival)
        fwd_done = gpu.t
        if it:
            end = max(done_at[(it - 1, b)] for b in range(len(groups)))
            stats = CommStats(bytes_sent=sum(sent) - sent0)
            sent0 = sum(sent)
            emit(IterationRecord(it - 1, fwd_done - prev_done, compute.total, end - comm_start, stats),
                 np.concatenate(flats))
        if it == iterations:
            break
        prev_done = fwd_done
        grads = wl.gradients(rank, it, [])
        flats = [np.concatenate([grads[i].reshape(-1) for i in g]) for g in groups]
        first = True
        for layer in reversed(range(n)):
            gpu.run(compute.backward[layer])
            b = bucket_of[layer]
            if overlap and layer == groups[b][0]:
                comm_start, first = (gpu.t if first else comm_start), False
                put((it, b, flats[b]))
        if not overlap:
            comm_start = gpu.t
            for b in reversed(range(len(groups))):
                put((it, b, flats[b]))
            for b in range(len(groups)):
                wait_bucket(it, b)
            gpu.idle_until(max(done_at[(it, b)] for b in range(len(groups))))
    for w in works:
        w.put(None)
    for ring in rings:
        ring.close()
