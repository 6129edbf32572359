"""A PyTorch DistributedDataParallel communication hook that all-reduces gradients over DLCP.

DDP hands each gradient bucket to ``dlcp_hook`` as soon as backpropagation filled it. The hook
queues the bucket for a communication thread that owns one DLCP ``Endpoint`` and runs a ring
all-reduce per bucket (reduce-scatter with the loss bound ``p`` of the tagging policy, then a fully
reliable, all-CRITICAL all-gather), and returns a ``torch.futures.Future`` that completes with the
averaged bucket. Buckets are started in DDP's order on every rank, overlapping the rest of the
backward pass, and up to ``in_flight`` of them are reduced at once (while one waits for its peer,
another's packets flow); on loopback DATA leaves straight from the bucket's memory (zero-copy). Tags follow the host agents' rules (docs/transport.md, "Tagging"):

- layer class per ring chunk from the model-order position of the front-most parameter the chunk
  covers (``TagPolicy.layer_class`` over the model's parameters), so the front layers the next
  forward pass needs first get the highest class whatever bucket they fall in;
- magnitude classes and the CRITICAL share from the chunk's values (``packetize``).

Rank and peer addresses come from DDP's own process group: one ``all_gather_object`` (gloo) at
set-up. After that torch.distributed is never used for gradients; there is no fallback. A failure
(a peer that stops answering for ``peer_timeout`` seconds, a transport error) fails the bucket's
future, so ``loss.backward()`` raises a ``DlcpCommError`` naming the rank, peer, bucket and step,
and every later step fails at once with the same error.

Lost elements (non-critical reduce-scatter packets given up under the bound) are zero-filled
(``lost_elements="zero"``, the transport's gradient semantics) or replaced by the previous step's
averaged gradient (``"previous"``, scaled to the partial sum they stand for). Each step yields a
``StepReport`` (bytes, packets, retransmissions, elements given up per layer class, time), kept in
``state.reports``, passed to ``on_step`` and written as JSON lines to ``report_path``.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import IO, Any

import numpy as np
import torch
import torch.distributed as dist

from host_agent import protocol as P
from host_agent.endpoint import Endpoint, EndpointConfig
from host_agent.errors import HostAgentError
from host_agent.ifmtu import MAX_IPV4_MTU, interface_mtu
from host_agent.packetizer import packetize, records_bytes
from host_agent.policy import TagPolicy

__all__ = ["DlcpCommError", "DlcpCommState", "DlcpHookConfig", "StepReport", "dlcp_hook",
           "register_dlcp_hook"]

LOST_MODES = ("zero", "previous")
MIN_MTU = 576                   # the smallest MTU every IPv4 path carries
POLL = 0.02                     # s, longest wait in the event loop between failure checks
# payload bytes per packet from which DATA is sent straight from the gradient's memory (sendmsg of
# header + payload, no copy into packet records): 64 KB loopback datagrams, not 1500-byte ones,
# whose per-packet cost is the Python work, not the copy
ZERO_COPY_MIN_PAYLOAD = 8192


class DlcpCommError(HostAgentError, RuntimeError):
    """The DLCP all-reduce of a bucket failed; the training step cannot complete."""


@dataclass(frozen=True)
class DlcpHookConfig:
    """How the hook talks DLCP. ``bind_host`` None: the local address that routes to
    MASTER_ADDR (127.0.0.1 without it); ``port`` None: 9290 (what DLCP switches parse) off
    loopback, an ephemeral port on loopback (several ranks per host); ``mtu`` None: the MTU of
    the interface the endpoint is bound to (64 KB datagrams on loopback, 1500 bytes on Ethernet
    and Mininet veths; set it where a relay or tunnel in the path carries less)."""

    policy: TagPolicy = field(default_factory=TagPolicy)
    job_id: int = 0
    bind_host: str | None = None
    port: int | None = None
    advertise: tuple[str, int] | None = None   # address peers send to (e.g. a relay in front)
    peer_timeout: float = 30.0                 # s of silence from a peer before the step fails
    lost_elements: str = "zero"                # zero | previous
    mtu: int | None = None                     # IP packet size; None: the bound interface's MTU
    offload: str = "auto"
    report_path: str | None = None             # JSON lines, one per step
    linger: float = 0.5                        # s of answering late PROBEs at close()
    in_flight: int = 2                         # buckets all-reduced at once (pipelining)

    def __post_init__(self) -> None:
        if self.lost_elements not in LOST_MODES:
            raise ValueError(f"lost_elements must be one of {', '.join(LOST_MODES)}, not {self.lost_elements!r}")
        if self.peer_timeout <= 0:
            raise ValueError(f"peer_timeout must be > 0, not {self.peer_timeout}")
        if not 0 <= self.job_id <= 0xFFFF:
            raise ValueError(f"job_id {self.job_id} outside 0..65535")
        if not 1 <= self.in_flight <= 16:
            raise ValueError(f"in_flight must be 1..16, not {self.in_flight}")
        if self.mtu is not None and not MIN_MTU <= self.mtu <= MAX_IPV4_MTU:
            raise ValueError(f"mtu {self.mtu} outside {MIN_MTU}..{MAX_IPV4_MTU}")


@dataclass
class StepReport:
    """What the DLCP all-reduce of one training step cost (one JSON line)."""

    rank: int
    iteration: int
    buckets: int = 0
    elements: int = 0
    bytes_sent: int = 0
    packets_sent: int = 0
    retransmissions: int = 0
    spurious_retransmissions: int = 0
    packets_received: int = 0
    packets_given_up: int = 0
    elements_given_up: int = 0
    given_up_by_layer_class: dict[str, int] = field(default_factory=dict)   # elements
    packets_given_up_by_layer_class: dict[str, int] = field(default_factory=dict)
    packets_by_layer_class: dict[str, int] = field(default_factory=dict)    # received-side packets
    critical_given_up: int = 0                  # always 0: critical packets are always repaired
    comm_seconds: float = 0.0                   # ring time summed over buckets
    wall_seconds: float = 0.0                   # first bucket queued -> last bucket done

    def as_record(self) -> dict[str, Any]:
        rec = asdict(self)
        rec["event"] = "dlcp_step"
        rec["comm_seconds"] = round(self.comm_seconds, 6)
        rec["wall_seconds"] = round(self.wall_seconds, 6)
        return rec


def _local_host() -> str:
    """The local address that routes to MASTER_ADDR (127.0.0.1 when unset or on loopback)."""
    master = os.environ.get("MASTER_ADDR")
    if not master:
        return "127.0.0.1"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((socket.gethostbyname(master), int(os.environ.get("MASTER_PORT", "29500"))))
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"


@dataclass
class _Job:
    bucket_index: int
    is_last: bool
    buffer: torch.Tensor
    layout: tuple[tuple[int, int, int], ...]      # (offset, numel, model position) per parameter
    future: torch.futures.Future
    queued: float


@dataclass
class _Flight:
    """A bucket being all-reduced: its ring steps and the handles the current one waits for."""

    job: _Job
    work: torch.Tensor                            # float32 (the bucket itself, or a converted copy)
    flat: np.ndarray                              # work's memory
    steps: Iterator[list[Any]]
    handles: list[Any]
    t0: float
    slot: int                                     # which reusable buffers it uses
    step: int = -1                                # ring step under way


class DlcpCommState:
    """The hook's state: endpoint, peers, communication thread, reports. See module docstring."""

    def __init__(self, model: torch.nn.Module, config: DlcpHookConfig | None = None,
                 process_group: Any = None, endpoint: Endpoint | None = None,
                 on_step: Callable[[StepReport], None] | None = None) -> None:
        if not dist.is_initialized():
            raise DlcpCommError("torch.distributed is not initialised: call init_process_group first")
        self.cfg = config or DlcpHookConfig()
        self.group = process_group
        self.rank = dist.get_rank(process_group)
        self.world = dist.get_world_size(process_group)
        if self.world > 0xFFFE:
            raise DlcpCommError(f"world size {self.world} exceeds DLCP's 16-bit worker id")
        params = [p for p in getattr(model, "module", model).parameters() if p.requires_grad]
        self._position = {id(p): i for i, p in enumerate(params)}
        self._n_params = max(1, len(params))
        if endpoint is None:
            host = self.cfg.bind_host or _local_host()
            port = self.cfg.port
            if port is None:
                port = 0 if host.startswith("127.") else P.DLCP_UDP_PORT
            endpoint = Endpoint(EndpointConfig(job_id=self.cfg.job_id, worker_id=self.rank, bind=(host, port),
                                               give_up_after=self.cfg.peer_timeout, offload=self.cfg.offload))
        self.ep = endpoint
        # reused across ring steps (one transfer each way at a time): packet records being sent,
        # and the partial sums being received; mapped once, so no page faults per step
        self._send_buffers = [np.empty(0, np.uint8) for _ in range(self.cfg.in_flight)]
        self._recv_buffers = [np.empty(0, np.float32) for _ in range(self.cfg.in_flight)]
        self._iteration_closed = False        # the iteration's last bucket has started
        self.peak_in_flight = 0               # most buckets ever all-reduced at once
        self._spurious0 = 0
        self._heard: tuple = ()
        self._heard_at = time.monotonic()
        # packets as large as the local link allows: 64 KB on loopback, 1500 bytes on Ethernet
        self.mtu = self.cfg.mtu or interface_mtu(self.ep.address[0])
        self._zero_copy = (P.max_elements_per_packet(self.mtu, P.DTYPE_FLOAT32) * 4 >= ZERO_COPY_MIN_PAYLOAD)
        mine = self.cfg.advertise or self.ep.address
        addrs: list[Any] = [None] * self.world
        dist.all_gather_object(addrs, (mine[0], int(mine[1])), group=process_group)   # once, over gloo
        self.peers = [tuple(a) for a in addrs]
        self.right = self.peers[(self.rank + 1) % self.world]
        self.left = (self.rank - 1) % self.world
        self.on_step = on_step
        self.reports: list[StepReport] = []
        self.error: DlcpCommError | None = None
        self.iteration = 0
        self._report = StepReport(self.rank, 0)
        self._step_start: float | None = None
        self._previous: dict[tuple, np.ndarray] = {}      # (bucket index, layout) -> last average
        self._layouts: dict[tuple, tuple[tuple[int, int, int], ...]] = {}
        self._out: IO[str] | None = open(self.cfg.report_path, "a") if self.cfg.report_path else None
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name=f"dlcp-ddp-{self.rank}", daemon=True)
        self._thread.start()

    # -- hook side (autograd thread) ---------------------------------------------------------
    def submit(self, bucket: dist.GradBucket) -> torch.futures.Future:
        fut: torch.futures.Future = torch.futures.Future()
        if self.error is not None:
            fut.set_exception(self.error)
            return fut
        buf = bucket.buffer()
        if buf.device.type != "cpu":
            self.error = DlcpCommError(f"rank {self.rank}: bucket {bucket.index()} is on {buf.device}; "
                                       "the DLCP hook reduces CPU tensors only")
            fut.set_exception(self.error)
            return fut
        self._jobs.put(_Job(bucket.index(), bucket.is_last(), buf, self._layout(bucket, buf), fut,
                            time.perf_counter()))
        return fut

    def allreduce(self, tensor: torch.Tensor) -> torch.futures.Future:
        """Average a flat CPU tensor over all ranks in place, outside DDP (counts as one step).

        Every rank must make the same calls in the same order; the future's value is ``tensor``.
        """
        fut: torch.futures.Future = torch.futures.Future()
        if self.error is not None:
            fut.set_exception(self.error)
            return fut
        flat = tensor.reshape(-1)
        if flat.data_ptr() != tensor.data_ptr() or not tensor.is_contiguous():
            raise ValueError("allreduce(): the tensor must be contiguous")
        self._jobs.put(_Job(0, True, flat, ((0, flat.numel(), 0),), fut, time.perf_counter()))
        return fut.then(_value)

    def allreduce_buckets(self, tensors: list[torch.Tensor]) -> list[torch.futures.Future]:
        """Average several flat CPU tensors in place as one step's buckets (up to ``in_flight`` at
        once, as DDP's buckets are); one future per tensor. Same calls in the same order on every rank."""
        futs: list[torch.futures.Future] = []
        flats = []
        for t in tensors:
            flat = t.reshape(-1)
            if flat.data_ptr() != t.data_ptr() or not t.is_contiguous():
                raise ValueError("allreduce_buckets(): every tensor must be contiguous")
            flats.append(flat)
        for i, flat in enumerate(flats):
            fut: torch.futures.Future = torch.futures.Future()
            if self.error is not None:
                fut.set_exception(self.error)
            else:
                self._jobs.put(_Job(i, i == len(flats) - 1, flat, ((0, flat.numel(), 0),), fut, time.perf_counter()))
            futs.append(fut.then(_value))
        return futs

    def _layout(self, bucket: dist.GradBucket, buf: torch.Tensor) -> tuple[tuple[int, int, int], ...]:
        """(offset, numel, model position) of each parameter in the bucket's flat buffer."""
        params = bucket.parameters()
        key = (bucket.index(), buf.numel(), tuple(id(p) for p in params))
        got = self._layouts.get(key)
        if got is None:
            base, esize = buf.data_ptr(), buf.element_size()
            got = tuple(sorted(((g.data_ptr() - base) // esize, g.numel(), self._position.get(id(p), 0))
                               for g, p in zip(bucket.gradients(), params, strict=True)))
            self._layouts[key] = got
        return got

    # -- communication thread ------------------------------------------------------------------
    # Up to ``in_flight`` buckets of one iteration are reduced at once, each a generator of ring
    # steps (``_ring``) that yields the handles its step waits for: while one bucket waits for its
    # peer (a DONE, a descheduled process), another one's packets flow and its sums are computed.
    def _serve(self) -> None:
        active: list[_Flight] = []
        waiting: collections.deque[_Job] = collections.deque()
        closing = False
        while True:
            block = not active and not waiting and not closing
            try:
                while True:
                    item = self._jobs.get() if block else self._jobs.get_nowait()
                    block = False
                    if item is None:
                        closing = True
                        break
                    waiting.append(item)
            except queue.Empty:
                pass
            if closing and not active and not waiting:
                return
            try:
                self._start_jobs(waiting, active)
                self._advance(active)
                if active:
                    self._watch(active)
                    self.ep.poll(POLL)
            except Exception as exc:  # noqa: BLE001 - every failure fails the step, never silently
                job = active[0].job if active else None
                err = exc if isinstance(exc, DlcpCommError) else DlcpCommError(
                    f"rank {self.rank}: DLCP all-reduce of bucket {job.bucket_index if job else '?'} "
                    f"(iteration {self.iteration}) failed: {exc}")
                self.error = err
                for fl in active:
                    if not fl.job.future.done():
                        fl.job.future.set_exception(err)
                active.clear()
                self._iteration_closed = False

    def _start_jobs(self, waiting: collections.deque[_Job], active: list[_Flight]) -> None:
        """Start queued buckets while slots are free and they belong to the running iteration."""
        while waiting and len(active) < self.cfg.in_flight and not self._iteration_closed:
            job = waiting.popleft()
            if self.error is not None:
                job.future.set_exception(self.error)
                continue
            if self._step_start is None:
                self._step_start = job.queued
                self._spurious0 = self.ep.spurious_retransmissions
            self._iteration_closed = job.is_last     # later jobs are the next iteration's
            self._heard_at = time.monotonic()
            work = job.buffer if job.buffer.dtype == torch.float32 else job.buffer.to(torch.float32)
            flat = work.detach().numpy().reshape(-1)
            slot = min(set(range(self.cfg.in_flight)) - {f.slot for f in active})
            fl = _Flight(job, work, flat, self._ring(job, flat, slot) if self.world > 1 else iter(()), [],
                         time.perf_counter(), slot)
            active.append(fl)
            self.peak_in_flight = max(self.peak_in_flight, len(active))

    def _advance(self, active: list[_Flight]) -> None:
        """Move every bucket whose step is done on to its next step; finish the completed ones."""
        progress = True
        while progress:
            progress = False
            for fl in list(active):
                if any(not h.done for h in fl.handles):
                    continue
                fl.step += 1
                self._heard_at = time.monotonic()
                try:
                    fl.handles = next(fl.steps)
                except StopIteration:
                    active.remove(fl)
                    self._end(fl, last=self._iteration_closed and not active)
                progress = True

    def _end(self, fl: _Flight, last: bool) -> None:
        job, flat = fl.job, fl.flat
        if self.cfg.lost_elements == "previous":
            self._previous[(job.bucket_index, job.layout)] = flat.copy()
        if fl.work is not job.buffer:
            job.buffer.copy_(fl.work)
        rep = self._report
        rep.buckets += 1
        rep.elements += flat.size
        rep.comm_seconds += time.perf_counter() - fl.t0
        if last:                        # the report is in place before backward() can return
            self._finish_step()
        job.future.set_result(job.buffer)

    def _finish_step(self) -> None:
        rep = self._report
        rep.wall_seconds = time.perf_counter() - (self._step_start or time.perf_counter())
        rep.spurious_retransmissions = self.ep.spurious_retransmissions - self._spurious0
        self.reports.append(rep)
        if self._out is not None:
            self._out.write(json.dumps(rep.as_record()) + "\n")
            self._out.flush()
        if self.on_step is not None:
            self.on_step(rep)
        self.iteration += 1
        self._report = StepReport(self.rank, self.iteration)
        self._step_start = None
        self._iteration_closed = False

    def _chunk_position(self, layout: tuple[tuple[int, int, int], ...], lo: int, hi: int) -> int:
        """Model position of the front-most parameter overlapping elements [lo, hi)."""
        pos = [p for off, n, p in layout if off < hi and off + n > lo]
        return min(pos) if pos else self._n_params - 1

    def _ring(self, job: _Job, flat: np.ndarray, slot: int) -> Iterator[list[Any]]:
        """The ring all-reduce of one bucket, one yield (the step's handles) per ring step."""
        n, r = self.world, self.rank
        steps = 2 * (n - 1)
        base = job.bucket_index * steps
        if base + steps > 0xFFFF:
            raise DlcpCommError(f"bucket {job.bucket_index}: tensor ids exceed 16 bits (use fewer buckets)")
        bounds = np.linspace(0, flat.size, n + 1).astype(np.int64)
        chunk = [flat[bounds[i]:bounds[i + 1]] for i in range(n)]
        position = [self._chunk_position(job.layout, int(bounds[i]), int(bounds[i + 1])) for i in range(n)]
        policy = self.cfg.policy
        gather = replace(policy, loss_bound=0.0, pull_critical=True)   # all CRITICAL, fully reliable
        # keyed by layout too: DDP rebuilds its buckets after the first step
        previous = self._previous.get((job.bucket_index, job.layout)) if self.cfg.lost_elements == "previous" else None
        for s in range(n - 1):                                       # reduce-scatter
            send_c, recv_c = (r - s) % n, (r - s - 1) % n
            tmp = self._receive_buffer(slot, chunk[recv_c].size)   # the receiver writes (or zero-fills) it all
            handles, recv = self._transfer(job, s, base + s, chunk[send_c], position[send_c], policy,
                                           P.KIND_GRADIENT, tmp, slot)
            yield handles
            self._account(handles, recv, P.KIND_GRADIENT)
            if recv is not None and previous is not None and recv.stats.received < recv.stats.n_packets:
                self._fill_previous(recv, tmp, previous[bounds[recv_c]:bounds[recv_c + 1]], s + 1)
            chunk[recv_c] += tmp
        chunk[(r + 1) % n] /= n         # the chunk this rank reduced; the others arrive averaged
        for s in range(n - 1):                                       # all-gather
            send_c, recv_c = (r + 1 - s) % n, (r - s) % n
            handles, recv = self._transfer(job, n - 1 + s, base + n - 1 + s, chunk[send_c], position[send_c],
                                           gather, P.KIND_PARAMETER, chunk[recv_c], slot)
            yield handles
            self._account(handles, recv, P.KIND_PARAMETER)

    def _receive_buffer(self, slot: int, n: int) -> np.ndarray:
        if self._recv_buffers[slot].size < n:
            self._recv_buffers[slot] = np.empty(n, np.float32)
        return self._recv_buffers[slot][:n]

    def _packet_buffer(self, slot: int, n_elements: int) -> np.ndarray:
        need = records_bytes(n_elements, self.mtu, zero_copy=self._zero_copy)
        if self._send_buffers[slot].size < need:
            self._send_buffers[slot] = np.empty(need, np.uint8)
        return self._send_buffers[slot]

    def _fill_previous(self, recv: Any, tmp: np.ndarray, prev: np.ndarray, ranks: int) -> None:
        """Lost elements of a partial sum of ``ranks`` ranks: ``ranks`` x the last averaged value."""
        asm = recv.assembly
        received = getattr(asm, "received", None)
        if received is None:
            return
        lost = np.repeat(~np.asarray(received, bool), asm.epp)[: tmp.size]
        tmp[lost] = ranks * prev[lost]

    def _transfer(self, job: _Job, step: int, tid: int, send: np.ndarray, position: int, policy: TagPolicy,
                  kind: int, into: np.ndarray, slot: int) -> tuple[list[Any], Any]:
        """Start sending ``send`` right and receiving ``into`` from the left for one ring step."""
        ep, it = self.ep, self.iteration
        handles: list[Any] = []
        recv = None
        if into.size:
            recv = ep.expect(self.left, it, tid, into)
            handles.append(recv)
        if send.size:
            pt = packetize(send, tensor_id=tid, policy=policy, position=position, num_layers=self._n_params,
                           job_id=ep.cfg.job_id, worker_id=ep.cfg.worker_id, iteration=it,
                           pull=kind == P.KIND_PARAMETER, kind=kind, mtu=self.mtu,
                           buffer=self._packet_buffer(slot, send.size), zero_copy=self._zero_copy)
            handles.append(ep.send(pt, self.right))
        return handles, recv

    def _account(self, handles: list[Any], recv: Any, kind: int) -> None:
        """Add a finished ring step's counts to the iteration's report."""
        rep = self._report
        for h in handles:
            if h is recv:
                st = h.stats
                cls = str(h.layer_class)
                rep.packets_received += st.received
                rep.packets_by_layer_class[cls] = rep.packets_by_layer_class.get(cls, 0) + st.n_packets
                lost = st.n_packets - st.received
                if lost:
                    elems = st.zero_filled_elements if kind == P.KIND_GRADIENT else lost * int(h.assembly.epp)
                    rep.packets_given_up += lost
                    rep.elements_given_up += elems
                    rep.given_up_by_layer_class[cls] = rep.given_up_by_layer_class.get(cls, 0) + elems
                    pg = rep.packets_given_up_by_layer_class
                    pg[cls] = pg.get(cls, 0) + lost
                rep.critical_given_up += st.missing_critical
            else:
                rep.bytes_sent += h.stats.bytes
                rep.packets_sent += h.stats.packets
                rep.retransmissions += h.stats.retransmitted

    def _watch(self, active: list[_Flight]) -> None:
        """Fail the step on a failed send or after ``peer_timeout`` of silence from both peers."""
        pending = [(h, (fl.job.bucket_index, fl.step)) for fl in active for h in fl.handles if not h.done]
        for h, where in pending:
            if h.failed:
                detail = getattr(getattr(h, "tx", None), "error", None) or "transfer failed"
                raise self._fail(where, f"sending to rank {(self.rank + 1) % self.world} "
                                              f"{self.right[0]}:{self.right[1]}: {detail}")
        now = time.monotonic()
        heard = (self.ep.packets_received,
                 tuple(getattr(getattr(h, "tx", None), "last_heard", 0.0) for h, _ in pending))
        if heard != self._heard:
            self._heard, self._heard_at = heard, now
        elif now - self._heard_at > self.cfg.peer_timeout and pending:
            left = self.peers[self.left]
            raise self._fail(pending[0][1],
                             f"nothing from rank {self.left} ({left[0]}:{left[1]}) or rank "
                             f"{(self.rank + 1) % self.world} for {self.cfg.peer_timeout:.1f}s: a peer died or stopped")

    def _fail(self, where: tuple[int, int], what: str) -> DlcpCommError:
        bucket, step = where
        phase = "reduce-scatter" if step < self.world - 1 else "all-gather"
        return DlcpCommError(f"rank {self.rank}: DLCP all-reduce of bucket {bucket} failed at "
                             f"iteration {self.iteration}, {phase} step {step}: {what}")

    # -- lifetime ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the thread, answer late PROBEs for ``linger`` s, close the socket and the report."""
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join()
        if self.ep.sock.fileno() >= 0:
            self.ep.close(linger=0.0 if self.error is not None else self.cfg.linger)
        if self._out is not None:
            self._out.close()
            self._out = None

    def __enter__(self) -> DlcpCommState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _value(fut: torch.futures.Future) -> torch.Tensor:
    try:
        return fut.wait()
    except DlcpCommError as exc:          # set by the communication thread; without its traceback
        raise DlcpCommError(str(exc)) from None


def dlcp_hook(state: DlcpCommState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: the bucket's average over all ranks, all-reduced over DLCP."""
    # DDP reads the future's value in C++, where a Python exception set on it would only show as
    # "Unable to cast ... to Tensor"; an error raised in a then() callback reaches backward() intact.
    return state.submit(bucket).then(_value)


# DDP checks the hook's annotations as objects; ``from __future__ import annotations`` left strings.
dlcp_hook.__annotations__.update(bucket=dist.GradBucket, state=DlcpCommState)
dlcp_hook.__annotations__["return"] = torch.futures.Future[torch.Tensor]


def register_dlcp_hook(ddp_model: torch.nn.parallel.DistributedDataParallel,
                       config: DlcpHookConfig | None = None, **kw: Any) -> DlcpCommState:
    """Make ``ddp_model`` all-reduce its gradients over DLCP; returns the state (reports, close())."""
    state = DlcpCommState(ddp_model, config, process_group=ddp_model.process_group, **kw)
    ddp_model.register_comm_hook(state, dlcp_hook)
    return state

