"""A PyTorch DistributedDataParallel communication hook that all-reduces gradients over DLCP.

DDP hands each gradient bucket to ``dlcp_hook`` as soon as backpropagation filled it. The hook
queues the bucket for a communication thread that owns one DLCP ``Endpoint`` and runs a ring
all-reduce per bucket (reduce-scatter with the loss bound ``p`` of the tagging policy, then a fully
reliable, all-CRITICAL all-gather), and returns a ``torch.futures.Future`` that completes with the
averaged bucket. Buckets are reduced in DDP's order on every rank, overlapping the rest of the
backward pass. Tags follow the host agents' rules (docs/transport.md, "Tagging"):

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

import json
import os
import queue
import socket
import threading
import time
from collections.abc import Callable
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

    def __post_init__(self) -> None:
        if self.lost_elements not in LOST_MODES:
            raise ValueError(f"lost_elements must be one of {', '.join(LOST_MODES)}, not {self.lost_elements!r}")
        if self.peer_timeout <= 0:
            raise ValueError(f"peer_timeout must be > 0, not {self.peer_timeout}")
        if not 0 <= self.job_id <= 0xFFFF:
            raise ValueError(f"job_id {self.job_id} outside 0..65535")
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
        self._send_buffer = np.empty(0, np.uint8)
        self._recv_buffer = np.empty(0, np.float32)
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
    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if self.error is not None:
                job.future.set_exception(self.error)
                continue
            try:
                self._allreduce(job)
            except Exception as exc:  # noqa: BLE001 - every failure fails the step, never silently
                err = exc if isinstance(exc, DlcpCommError) else DlcpCommError(
                    f"rank {self.rank}: DLCP all-reduce of bucket {job.bucket_index} (iteration "
                    f"{self.iteration}) failed: {exc}")
                self.error = err
                job.future.set_exception(err)

    def _allreduce(self, job: _Job) -> None:
        if self._step_start is None:
            self._step_start = job.queued
        t0 = time.perf_counter()
        buf = job.buffer
        work = buf if buf.dtype == torch.float32 else buf.to(torch.float32)
        flat = work.detach().numpy().reshape(-1)
        if self.world > 1:
            self._ring(job, flat)       # averages: each rank divides the chunk it reduced
        if self.cfg.lost_elements == "previous":
            self._previous[(job.bucket_index, job.layout)] = flat.copy()
        if work is not buf:
            buf.copy_(work)
        rep = self._report
        rep.buckets += 1
        rep.elements += flat.size
        rep.comm_seconds += time.perf_counter() - t0
        if job.is_last:                 # the report is in place before backward() can return
            self._finish_step()
        job.future.set_result(buf)

    def _finish_step(self) -> None:
        rep = self._report
        rep.wall_seconds = time.perf_counter() - (self._step_start or time.perf_counter())
        self.reports.append(rep)
        if self._out is not None:
            self._out.write(json.dumps(rep.as_record()) + "\n")
            self._out.flush()
        if self.on_step is not None:
            self.on_step(rep)
        self.iteration += 1
        self._report = StepReport(self.rank, self.iteration)
        self._step_start = None

    def _chunk_position(self, layout: tuple[tuple[int, int, int], ...], lo: int, hi: int) -> int:
        """Model position of the front-most parameter overlapping elements [lo, hi)."""
        pos = [p for off, n, p in layout if off < hi and off + n > lo]
        return min(pos) if pos else self._n_params - 1

    def _ring(self, job: _Job, flat: np.ndarray) -> None:
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
            tmp = self._receive_buffer(chunk[recv_c].size)      # the receiver writes (or zero-fills) it all
            recv = self._transfer(job, s, base + s, chunk[send_c], position[send_c], policy, P.KIND_GRADIENT,
                                  tmp)
            if recv is not None and previous is not None and recv.stats.received < recv.stats.n_packets:
                self._fill_previous(recv, tmp, previous[bounds[recv_c]:bounds[recv_c + 1]], s + 1)
            chunk[recv_c] += tmp
        chunk[(r + 1) % n] /= n         # the chunk this rank reduced; the others arrive averaged
        for s in range(n - 1):                                       # all-gather
            send_c, recv_c = (r + 1 - s) % n, (r - s) % n
            self._transfer(job, n - 1 + s, base + n - 1 + s, chunk[send_c], position[send_c], gather,
                           P.KIND_PARAMETER, chunk[recv_c])

    def _receive_buffer(self, n: int) -> np.ndarray:
        if self._recv_buffer.size < n:
            self._recv_buffer = np.empty(n, np.float32)
        return self._recv_buffer[:n]

    def _packet_buffer(self, n_elements: int) -> np.ndarray:
        need = records_bytes(n_elements, self.mtu, zero_copy=self._zero_copy)
        if self._send_buffer.size < need:
            self._send_buffer = np.empty(need, np.uint8)
        return self._send_buffer

    def _fill_previous(self, recv: Any, tmp: np.ndarray, prev: np.ndarray, ranks: int) -> None:
        """Lost elements of a partial sum of ``ranks`` ranks: ``ranks`` x the last averaged value."""
        asm = recv.assembly
        received = getattr(asm, "received", None)
        if received is None:
            return
        lost = np.repeat(~np.asarray(received, bool), asm.epp)[: tmp.size]
        tmp[lost] = ranks * prev[lost]

    def _transfer(self, job: _Job, step: int, tid: int, send: np.ndarray, position: int, policy: TagPolicy,
                  kind: int, into: np.ndarray) -> Any:
        """Send ``send`` right and receive ``into`` from the left for one ring step; account it."""
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
                           buffer=self._packet_buffer(send.size), zero_copy=self._zero_copy)
            handles.append(ep.send(pt, self.right))
        spurious0 = ep.spurious_retransmissions
        self._run(handles, job, step)
        rep = self._report
        rep.spurious_retransmissions += ep.spurious_retransmissions - spurious0
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
        return recv

    def _run(self, handles: list[Any], job: _Job, step: int) -> None:
        """Turn the endpoint until every handle is done; fail after ``peer_timeout`` of silence."""
        ep = self.ep
        seen: tuple = ()
        last = time.monotonic()
        while True:
            pending = [h for h in handles if not h.done]
            if not pending:
                return
            for h in pending:
                if h.failed:
                    detail = getattr(getattr(h, "tx", None), "error", None) or "transfer failed"
                    raise self._fail(job, step, f"sending to rank {(self.rank + 1) % self.world} "
                                                f"{self.right[0]}:{self.right[1]}: {detail}")
            now = time.monotonic()
            heard = (ep.packets_received, tuple(getattr(getattr(h, "tx", None), "last_heard", 0.0) for h in pending))
            if heard != seen:
                seen, last = heard, now
            elif now - last > self.cfg.peer_timeout:
                left = self.peers[self.left]
                raise self._fail(job, step, f"nothing from rank {self.left} ({left[0]}:{left[1]}) or rank "
                                            f"{(self.rank + 1) % self.world} for {self.cfg.peer_timeout:.1f}s: "
                                            "a peer died or stopped")
            ep.poll(POLL)

    def _fail(self, job: _Job, step: int, what: str) -> DlcpCommError:
        phase = "reduce-scatter" if step < self.world - 1 else "all-gather"
        return DlcpCommError(f"rank {self.rank}: DLCP all-reduce of bucket {job.bucket_index} failed at "
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

