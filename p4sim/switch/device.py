"""``SwitchDevice``: one p4sim switch — pipeline state, ports, traffic manager and packet loop.

This is the object the P4Runtime server shares with the packet path (device contract, "Contract 6"):
the server swaps programs with ``load_program``, writes tables while holding ``lock``, injects
packet-outs and receives packet-ins and digests through handlers.

The packet path is one thread. Each turn it waits (epoll) for any port, for injected packets or
for the next TM departure; takes a batch of frames from every ready port; runs ingress on them
and enqueues what comes out into the traffic manager; dequeues every packet the TM lets go now
and runs egress; then transmits. ``lock`` is held around the pipeline/TM work of one batch (so a
P4Runtime Write batch is atomic with respect to every packet) but not around socket I/O.

Control paths stay responsive while packets are processed: a control thread announces itself
with ``control()`` (P4Runtime, ``p4sim ctl``), and the packet thread lets go of the lock between
two packets of a batch whenever one is waiting, so a control request waits for at most one
packet (whose parser work the compiler bounds), not for a whole batch. ``stop`` waits a bounded
time for the packet thread, so SIGTERM always ends the process.

Ingress order (``ingress_priority``): ``"fifo"`` runs ingress on a turn's frames in the order the
ports' rings hold them, port after port, as BMv2 does. ``"dscp"`` emulates a line-rate parser with
per-priority ingress buffers (real switches map DSCP to ingress priority groups): the turn's frames
(up to RX_BATCH per port) go through ingress highest DSCP class selector first, stable within
a class, so one class's order (every flow's) is kept. A starved Python switch otherwise leaves a
high-priority frame in a ring behind low-priority ones before its priority queue is even chosen.

Waits are measured per port and DSCP class (``WaitHistogram``): kernel ring -> read by the loop
(``ring``) and kernel ring -> ingress starts (``ingress``); the traffic manager's sojourn per port and
queue (``tm``); and per rate-limited port the link time lost while packets waited (``link_lost``): a
link catches up at most PORT_CATCH_UP_NS after the loop woke late, so a CPU-starved switch drains its
queues slower than the link rate. All are in ``stats()`` and the final summary line.
"""

from __future__ import annotations

import collections
import logging
import os
import select
import threading
import time
from collections.abc import Callable

from p4sim.switch import gcpause
from p4sim.switch.pcap import PcapWriter
from p4sim.switch.ports import (
    AfPacketPort,
    Port,
    PortError,
    SocketPairPort,
    VirtualPortPeer,
    WaitHistogram,
    dscp_class,
)
from p4sim.switch.tm import DEFAULT_PRIORITY_QUEUES, DEFAULT_QUEUE_DEPTH, PORT_CATCH_UP_NS, TrafficManager

DROP_PORT = 511
RX_BATCH = 64          # frames taken from one port per turn (fairness between ports)
INGRESS_ORDERS = ("fifo", "dscp")
DSCP_CLASSES = 8
EGRESS_BATCH = 256     # packets dequeued per turn
RECIRC_CAPACITY = 1024  # BMv2's input buffer for resubmitted/recirculated packets
STOP_TIMEOUT = 5.0      # seconds ``stop`` waits for the packet thread


class SwitchLoggerAdapter(logging.LoggerAdapter):
    """Prefixes every record with the switch's name, e.g. ``[s1] ...``."""

    def process(self, msg, kwargs):
        return f"[{self.extra['switch']}] {msg}", kwargs


def _v1model_symbols():
    """The v1model packet-path classes (imported late: the switch runs with --no-p4 without them)."""
    from p4sim.v1model import pipeline as v1
    return v1


class SwitchDevice:
    """One p4sim switch: its pipeline state, ports and traffic manager; shared by the packet path
    and the P4Runtime server."""

    def __init__(self, device_id: int = 0, cpu_port: int | None = None,
                 priority_queues: int = DEFAULT_PRIORITY_QUEUES, queue_depth: int = DEFAULT_QUEUE_DEPTH,
                 name: str | None = None, pcap_dir: str | None = None, drop_port: int = DROP_PORT,
                 ingress_priority: str = "fifo") -> None:
        if ingress_priority not in INGRESS_ORDERS:
            raise ValueError(f"ingress priority {ingress_priority!r}: one of {', '.join(INGRESS_ORDERS)}")
        self.ingress_priority = ingress_priority
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.name = name or f"p4sim{device_id}"
        self.log = SwitchLoggerAdapter(logging.getLogger("p4sim.switch"), {"switch": self.name})
        self.lock = threading.RLock()
        self._control_waiting = 0        # control threads queued for ``lock`` (see ``control``)
        self._control_count_lock = threading.Lock()
        self.control_lock = _ControlLock(self)     # reusable ``with`` guard for control threads
        self.program = None
        self.pipeline = None
        self.path = None
        self.tm = TrafficManager(priority_queues, queue_depth)
        self.ports: dict[int, Port] = {}
        self.pcap_dir = pcap_dir
        self._pcaps: dict[tuple[int, str], PcapWriter] = {}
        self.counters: collections.Counter[str] = collections.Counter()
        self._packet_in_handler: Callable[[bytes], None] | None = None
        self._digest_handler: Callable[[str, tuple[int, ...]], None] | None = None
        self._injected: collections.deque[tuple[int, bytes]] = collections.deque()
        self._recirc: collections.deque = collections.deque()    # Recirculate outputs
        self._wake_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._epoll = select.epoll()
        self._epoll.register(self._wake_fd, select.EPOLLIN)
        self._fd_ports: dict[int, Port] = {}
        # per port: (ring waits, ingress waits), each a histogram per DSCP class selector
        self._rx_waits: dict[int, tuple[list[WaitHistogram], list[WaitHistogram]]] = {}
        self._tm_waits: dict[tuple[int, int], WaitHistogram] = {}     # (port, qid) -> TM sojourn
        self._link_lost_ns: collections.Counter[int] = collections.Counter()   # port -> link time lost
        self.nanomsg = None            # NanomsgPortGroup: every port PTF adds over --packet-in
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.packet_cpu_s = 0.0        # CPU seconds the packet thread used (set when it ends)
        self.packet_wait_s = None      # seconds it was runnable but waited for a CPU (Linux schedstat)
        self._gc = gcpause.pauses()     # Python GC collections and their CPU, for the final log line
        self._forwarding = False        # a packet met a loaded program (GC pauses from then on count apart)
        self._closed = False
        self._start_ns = time.monotonic_ns()
        self._v1 = None

    def control(self, timeout: float | None = None) -> _ControlLock:
        """``with device.control():`` holds ``lock`` for a control-plane operation; the packet
        thread yields to it between packets. With ``timeout``, entering raises TimeoutError when
        the lock was not obtained in time."""
        return _ControlLock(self, timeout)

    def _yield_to_control(self) -> None:
        """Packet thread, holding ``lock`` once: let waiting control threads in, then take it back."""
        self.lock.release()
        try:
            deadline = time.monotonic() + 0.05
            while self._control_waiting and time.monotonic() < deadline:
                time.sleep(0.0005)
        finally:
            self.lock.acquire()

    # ---- pipeline ---------------------------------------------------------------------------------

    def load_program(self, program) -> None:
        """Instantiate ``program`` and swap it in atomically; queued packets are dropped."""
        v1 = _v1model_symbols()
        pipeline = program.instantiate()
        pipeline.digest_sink = self._on_digest
        pipeline.log = self._on_log_msg
        if getattr(program, "arch", "v1model") in ("tna", "t2na"):     # Tofino programs (p4sim/tna)
            from p4sim.tna.pipeline import TnaPath
            path = TnaPath(pipeline, cpu_port=self.cpu_port, drop_port=self.drop_port)
        else:
            path = v1.V1ModelPath(pipeline, cpu_port=self.cpu_port, drop_port=self.drop_port)
        with self.lock:
            self._v1 = v1
            self.program, self.pipeline, self.path = program, pipeline, path
            self.tm.clear()
            self._recirc.clear()
        self.log.info("loaded program %s", getattr(program, "name", "?"))

    def _on_digest(self, name: str, values: tuple[int, ...]) -> None:
        handler = self._digest_handler
        if handler is not None:
            try:
                handler(name, values)
            except Exception:
                self.counters["digest_errors"] += 1
                self.log.exception("digest handler failed")
        else:
            self.counters["digests_dropped"] += 1

    def _on_log_msg(self, text: str) -> None:
        self.log.info("log_msg: %s", text)

    def set_packet_in_handler(self, fn: Callable[[bytes], None] | None) -> None:
        """``fn(bytes)`` gets every frame egressing on the CPU port (called on the packet thread)."""
        self._packet_in_handler = fn

    def set_digest_handler(self, fn: Callable[[str, tuple[int, ...]], None] | None) -> None:
        self._digest_handler = fn

    def inject_packet_out(self, data: bytes) -> None:
        """Feed ``data`` into ingress as if received on the CPU port (controller header included)."""
        if self.cpu_port is None:
            self.counters["packet_out_no_cpu_port"] += 1
            self.log.warning("packet-out dropped: the switch has no --cpu-port")
            return
        self.inject(self.cpu_port, data)

    def inject(self, port: int, data: bytes) -> None:
        """Queue ``data`` for ingress on ``port`` (packet-out, nanomsg, recirculation)."""
        self._injected.append((port, bytes(data)))
        os.eventfd_write(self._wake_fd, 1)

    # ---- ports ---------------------------------------------------------------------------------

    def add_port(self, port: Port) -> Port:
        """Attach any ``Port``; allowed before or after ``start``."""
        if port.port_no in self.ports:
            port.close()
            raise PortError(f"port {port.port_no} is already attached ({self.ports[port.port_no].name})")
        if self.cpu_port is not None and port.port_no == self.cpu_port:
            port.close()
            raise PortError(f"port {port.port_no} is the CPU port")
        self.ports[port.port_no] = port
        self._rx_waits[port.port_no] = ([WaitHistogram() for _ in range(DSCP_CLASSES)],
                                        [WaitHistogram() for _ in range(DSCP_CLASSES)])
        with self.lock:
            self.tm.add_port(port.port_no)      # its queues show in ``p4sim ctl show_queues`` at once
        fd = port.fileno()
        if fd >= 0:
            self._fd_ports[fd] = port
            self._epoll.register(fd, select.EPOLLIN)
        self.log.info("port %d: %s", port.port_no, port.name)
        return port

    def add_interface(self, port_no: int, ifname: str) -> AfPacketPort:
        """Attach a Linux interface through AF_PACKET (``-i PORT@IFACE``)."""
        return self.add_port(AfPacketPort(port_no, ifname))

    def add_nanomsg(self, address: str):
        """Serve BMv2's nanomsg packet interface (PTF ``nn`` platform) at ``address``."""
        from p4sim.switch.nanomsg import NanomsgPortGroup

        if self.nanomsg is not None:
            raise PortError(f"--packet-in {address}: already serving {self.nanomsg.address}")
        group = NanomsgPortGroup(address)
        self.nanomsg = group
        self._epoll.register(group.fileno(), select.EPOLLIN)
        self.log.info("nanomsg packet interface at %s", address)
        return group

    def add_virtual_port(self, port: int) -> VirtualPortPeer:
        """In-process port for tests; returns the test's end (``.send(bytes)``, ``.recv(timeout)``)."""
        return self.add_port(SocketPairPort(port)).peer

    # ---- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=f"{self.name}-packets", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the packet thread, close every port and pcap file; idempotent."""
        if self._closed:
            return
        self._stopping = True
        os.eventfd_write(self._wake_fd, 1)
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT)
            if self._thread.is_alive():   # a packet still in the pipeline: leave the daemon thread be
                self.log.warning("packet thread still busy after %.0f s; stopping without it", STOP_TIMEOUT)
                self._closed = True
                return
            self._thread = None
        self.log.info("%s", self._final_summary())
        for port in self.ports.values():
            port.close()
        if self.nanomsg is not None:
            self.nanomsg.close()
        for pcap in self._pcaps.values():
            pcap.close()
        self._epoll.close()
        os.close(self._wake_fd)
        self._closed = True
        self.log.info("stopped")

    def __enter__(self) -> SwitchDevice:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def now_us(self) -> int:
        return (time.monotonic_ns() - self._start_ns) // 1000

    # ---- packet loop ----------------------------------------------------------------------------

    def _pcap(self, port: int, direction: str) -> PcapWriter:
        key = (port, direction)
        w = self._pcaps.get(key)
        if w is None:
            p = self.ports.get(port)
            name = p.name if p is not None else f"port{port}"
            w = self._pcaps[key] = PcapWriter(os.path.join(self.pcap_dir, f"{name}_{direction}.pcap"))
        return w

    def _run(self) -> None:
        try:
            while not self._stopping:
                self._turn()
        except Exception:   # a bug in the loop must be loud, not a silent dead switch
            self.log.exception("packet loop crashed")
            raise
        finally:
            self.packet_cpu_s = time.thread_time()
            self.packet_wait_s = _runqueue_wait_s(threading.get_native_id())

    def _final_summary(self) -> str:
        """One log line at stop: what the switch received, sent and lost where, and the CPU its
        packet thread used -- losses outside the P4 program's counters (kernel receive ring, full
        send buffer, TM tail drops) and how busy the switch was, for after-the-fact analysis."""
        for p in self.ports.values():
            p.read_kernel_stats()
        c = self.counters
        port_drops = {no: (p.rx_dropped, p.kernel_drops, p.tx_dropped) for no, p in sorted(self.ports.items())
                      if p.rx_dropped or p.kernel_drops or p.tx_dropped}
        tm_tail = {f"{no}/q{qid}": q.tail_drops for no, tp in sorted(self.tm.ports.items())
                   for qid, q in enumerate(tp.queues) if q.tail_drops}
        cpu = os.times()
        wait = "?" if self.packet_wait_s is None else f"{self.packet_wait_s:.2f}"
        rx_waits = {key: f"n {w['ring']['n']} ring {_ms3(w['ring'])} ingress {_ms3(w['ingress'])}"
                    for key, w in self.ingress_waits().items()}
        tm_waits = {key: f"n {w['n']} {_ms3(w)}" for key, w in self.tm_waits().items()}
        lost = {no: round(ns / 1e6, 1) for no, ns in sorted(self._link_lost_ns.items())}
        return (f"final: rx {c['rx']} tx {c['tx']} tm_drops {c['tm_drops']} tail drops {tm_tail} "
                f"port drops (rx, kernel, tx) {port_drops} packet thread CPU {self.packet_cpu_s:.2f} s "
                f"waited for a CPU {wait} s process CPU {cpu.user + cpu.system:.2f} s; "
                f"Python GC {self._gc.summary()}; ingress order {self.ingress_priority}; "
                f"rx waits ms mean/p99/max {rx_waits}; tm waits ms mean/p99/max {tm_waits}; "
                f"link time lost ms {lost}")

    def ingress_waits(self) -> dict[str, dict[str, dict]]:
        """``{"PORT/csN": {"ring": ..., "ingress": ...}}`` for every port and DSCP class that saw a
        kernel-stamped frame: waits from the kernel's ring to the loop's read and to ingress."""
        out = {}
        for no, (ring, ingress) in sorted(self._rx_waits.items()):
            for cls in range(DSCP_CLASSES):
                if ring[cls].n:
                    out[f"{no}/cs{cls}"] = {"ring": ring[cls].summary(), "ingress": ingress[cls].summary()}
        return out

    def tm_waits(self) -> dict[str, dict]:
        """``{"PORT/qN": ...}``: each queue's sojourn in the traffic manager (packets cut through are not counted)."""
        return {f"{no}/q{qid}": h.summary() for (no, qid), h in sorted(self._tm_waits.items()) if h.n}

    def _turn(self) -> None:
        tm = self.tm
        with self.lock:       # p4sim ctl may add ports to the TM meanwhile
            next_ns = tm.next_event_ns()
        if next_ns is None:
            timeout = 0.5
        else:
            timeout = max(0.0, (next_ns - time.monotonic_ns()) / 1e9)
        events = self._epoll.poll(timeout) if timeout > 0 else self._epoll.poll(0)
        rx: list[tuple[int, bytes, int, int]] = []     # (port, frame, kernel stamp ns or 0, DSCP class)
        for fd, ev in events:
            if fd == self._wake_fd:
                try:
                    os.eventfd_read(self._wake_fd)
                except BlockingIOError:
                    pass
                continue
            port = self._fd_ports.get(fd)
            if port is None:
                if self.nanomsg is not None and fd == self.nanomsg.fileno():
                    rx.extend((no, data, 0, dscp_class(data)) for no, data in self.nanomsg.recv_pairs(RX_BATCH))
                continue
            if ev & (select.EPOLLERR | select.EPOLLHUP):
                self._port_error(fd, port, ev)
            no = port.port_no
            frames = port.recv_batch(RX_BATCH)
            if not frames:
                continue
            stamps = port.rx_stamps
            if len(stamps) == len(frames):
                ring = self._rx_waits[no][0]
                read_ns = time.time_ns()
                for data, stamp in zip(frames, stamps, strict=True):
                    cls = dscp_class(data)
                    ring[cls].add(read_ns - stamp)
                    rx.append((no, data, stamp, cls))
            else:
                rx.extend((no, data, 0, dscp_class(data)) for data in frames)
        injected = self._injected
        while injected:
            no, data = injected.popleft()
            rx.append((no, data, 0, dscp_class(data)))
        if not rx and not tm.size and not self._recirc:
            return
        if self.ingress_priority == "dscp" and len(rx) > 1:
            rx.sort(key=_by_class, reverse=True)     # stable: each class keeps its arrival order
        self._process(rx)

    def _port_error(self, fd: int, port: Port, events: int) -> None:
        """A link went down (or away): clear the error so epoll does not spin on it; stop polling
        a port whose socket keeps failing (its interface was deleted)."""
        err = port.clear_error()
        self.counters["port_errors"] += 1
        if err:
            self.log.warning("port %d (%s): %s", port.port_no, port.name, os.strerror(err))
        if events & select.EPOLLHUP or (not err and events & select.EPOLLERR):
            self.log.warning("port %d (%s): interface gone, no longer polled", port.port_no, port.name)
            self._epoll.unregister(fd)
            del self._fd_ports[fd]

    def _process(self, rx: list[tuple[int, bytes, int, int]]) -> None:
        tx: list[tuple[int, bytes]] = []
        counters = self.counters
        if self.pcap_dir is not None:
            wall = time.time()
            for port, data, _stamp, _cls in rx:
                self._pcap(port, "in").write(data, wall)
        counters["rx"] += len(rx)
        with self.lock:
            path = self.path
            now_ns = time.monotonic_ns()
            now_us = (now_ns - self._start_ns) // 1000
            tm = self.tm
            if path is None:
                counters["drop_no_pipeline"] += len(rx)
                self._recirc.clear()
            else:
                if not self._forwarding:
                    self._forwarding = True
                    self._gc.mark_forwarding()
                if tm.size:
                    self._count_link_lost(now_ns)
                ingress = path.ingress
                # egress runs after every ingress packet, as BMv2's concurrent egress threads
                # would: a packet that may leave at once does so before the next one is queued
                cut_through = tm.cut_through
                drop_port = self.drop_port
                qmeta_now = None
                rx_waits = self._rx_waits
                for port, data, stamp, cls in rx:
                    if self._control_waiting:
                        self._yield_to_control()
                        if self._stopping:
                            break
                        if self.path is not path:    # a new program came in meanwhile
                            counters["drop_pipeline_changed"] += 1
                            continue
                        now_ns = time.monotonic_ns()
                        now_us = (now_ns - self._start_ns) // 1000
                    if stamp:
                        rx_waits[port][1][cls].add(time.time_ns() - stamp)
                    try:
                        queued = ingress(data, port, now_us)
                    except Exception:
                        self._pipeline_error("ingress", port)
                        continue
                    for qp in queued:
                        if qp.egress_port != drop_port and cut_through(qp.egress_port, qp.priority, qp.length,
                                                                       now_ns):
                            if qmeta_now is None or qmeta_now.qid != qp.priority:
                                qmeta_now = self._v1.QueueMetadata(now_us, 0, 0, 0, qp.priority)
                            self._egress_one(path, qp, qmeta_now, now_ns, now_us, tx)
                        else:
                            self._enqueue(qp, now_ns)
                    if tm.size:
                        self._egress(path, now_ns, now_us, tx)
                if tm.size:
                    self._egress(path, now_ns, now_us, tx)
                recirc = self._recirc
                while recirc:
                    rec = recirc.popleft()
                    try:
                        queued = path.recirculate(rec, now_us)
                    except Exception:
                        self._pipeline_error("recirculation", getattr(rec, "port", -1))
                        continue
                    for qp in queued:
                        self._enqueue(qp, now_ns)
                if tm.size:
                    self._egress(path, now_ns, now_us, tx)
        if tx:
            self._transmit(tx)

    def _count_link_lost(self, now_ns: int) -> None:
        """Link time lost on every rate-limited port whose packets waited while the loop did not
        run: the TM lets a link catch up only PORT_CATCH_UP_NS, the rest of the gap is gone."""
        lost = self._link_lost_ns
        horizon = now_ns - PORT_CATCH_UP_NS
        for no, p in self.tm.ports.items():
            if p.size and p.rate_bps and p.free_at_ns < horizon:
                lost[no] += horizon - p.free_at_ns

    def _enqueue(self, qp, now_ns: int) -> None:
        port = qp.egress_port
        if port == self.drop_port:
            self.counters["drop_port"] += 1
            return
        if not self.tm.enqueue(port, qp.priority, qp, now_ns):
            self.counters["tm_drops"] += 1

    def _egress(self, path, now_ns: int, now_us: int, tx: list[tuple[int, bytes]]) -> None:
        tm = self.tm
        v1 = self._v1
        start_us = self._start_ns // 1000
        own_queue = path.QDEPTH_OF_OWN_QUEUE     # TNA: the packet's queue; v1model: the whole port
        tm_waits = self._tm_waits
        queue_metadata = v1.QueueMetadata
        egress_one = self._egress_one
        for _round in range(4):   # egress-to-egress clones may be due at once
            ready = tm.dequeue_ready(now_ns, EGRESS_BATCH)
            if not ready:
                return
            for port, qid, packet, enq_ts, enq_qdepth, deq_qdepth, deq_td, q_enq_qdepth, q_deq_qdepth in ready:
                h = tm_waits.get((port, qid))
                if h is None:
                    h = tm_waits[(port, qid)] = WaitHistogram()
                h.add(deq_td * 1000)
                if own_queue:
                    enq_qdepth, deq_qdepth = q_enq_qdepth, q_deq_qdepth
                # positional: enq_timestamp, enq_qdepth, deq_qdepth, deq_timedelta, qid
                egress_one(path, packet, queue_metadata(enq_ts - start_us, enq_qdepth, deq_qdepth, deq_td, qid),
                           now_ns, now_us, tx)
            if not tm.size:
                return

    def _egress_one(self, path, qp, qmeta, now_ns: int, now_us: int, tx: list[tuple[int, bytes]]) -> None:
        try:
            outs = path.egress(qp, qmeta, now_us)
        except Exception:
            self._pipeline_error("egress", qp.egress_port)
            return
        charged = qp.egress_port
        for out in outs:
            kind = type(out).__name__
            if kind == "Transmit":
                data = out.data
                tx.append((out.port, data))
                if out.port == charged:         # the link is busy for the bytes really sent
                    delta = len(data) - qp.length
                    if delta:                   # (most packets leave as long as they came)
                        self.tm.recharge(charged, delta)
                    charged = None
            elif kind == "Enqueue":
                self._enqueue(out.packet, now_ns)
            elif kind == "Recirculate":
                self._recirculate(out)
            else:
                self.log.error("unknown egress output %r", out)
        if charged is not None:                 # dropped in egress: it never took the wire
            self.tm.recharge(charged, -qp.length)

    def _pipeline_error(self, stage: str, port: int) -> None:
        """A bug in the program's generated code must cost one packet, not the switch."""
        self.counters[f"{stage}_errors"] += 1
        if self.counters[f"{stage}_errors"] <= 10:
            self.log.exception("%s failed on a packet from port %d; packet dropped", stage, port)

    def _recirculate(self, out) -> None:
        """Feed a recirculated packet back into ingress on the next turn (BMv2's recirc queue:
        1024 packets, dropped when full)."""
        if len(self._recirc) >= RECIRC_CAPACITY:
            self.counters["recirc_drops"] += 1
            return
        self._recirc.append(out)
        os.eventfd_write(self._wake_fd, 1)

    def _transmit(self, tx: list[tuple[int, bytes]]) -> None:
        """Hand a turn's frames to their ports (or the packet-in handler), in order.

        Each frame is counted in ``tx`` before its port gets it: the receiver may run (and read
        ``stats()``) the moment a frame is in its socket, before this thread runs another line, so a
        frame counted after its send could be seen before it is counted (session 14's tx 5 of 6)."""
        ports = self.ports
        cpu = self.cpu_port
        counters = self.counters
        pcap = self.pcap_dir is not None
        wall = time.time() if pcap else 0.0
        for port, data in tx:
            if port == cpu:
                handler = self._packet_in_handler
                if handler is not None:
                    try:
                        handler(data)
                    except Exception:
                        self.counters["packet_in_errors"] += 1
                        self.log.exception("packet-in handler failed")
                else:
                    self.counters["packet_in_dropped"] += 1
                continue
            p = ports.get(port)
            if p is None:
                nn = self.nanomsg
                if nn is None or not nn.has_port(port):
                    self.counters["drop_no_such_port"] += 1
                    continue
                p = _NanomsgTx(nn, port)
            if pcap:
                self._pcap(port, "out").write(data, wall)
            counters["tx"] += 1
            p.send(data)
        if pcap:
            for w in self._pcaps.values():
                w.flush()

    # ---- introspection (p4sim ctl) -----------------------------------------------------------

    def stats(self) -> dict:
        """Counters, ports and the TM snapshot, JSON-ready."""
        with self.lock:
            for p in self.ports.values():
                p.read_kernel_stats()
            return {
                "device_id": self.device_id,
                "name": self.name,
                "program": getattr(self.program, "name", None),
                "counters": dict(self.counters),
                "ports": {str(no): {"name": p.name, "rx_dropped": p.rx_dropped, "tx_dropped": p.tx_dropped,
                                    "kernel_drops": p.kernel_drops, "ring_holes": getattr(p, "ring_holes", 0)}
                          for no, p in sorted(self.ports.items())},
                "path_drops": dict(getattr(self.path, "drops", {}) or {}),
                "tm": self.tm.snapshot(),
                "ingress_priority": self.ingress_priority,
                "rx_waits": self.ingress_waits(),
                "tm_waits": self.tm_waits(),
                "link_lost_ms": {str(no): round(ns / 1e6, 3) for no, ns in sorted(self._link_lost_ns.items())},
            }


def _by_class(item: tuple[int, bytes, int, int]) -> int:
    return item[3]


def _ms3(w: dict) -> str:
    return f"{w['mean_ms']}/{w['p99_ms']}/{w['max_ms']}"


def _runqueue_wait_s(tid: int) -> float | None:
    """Seconds thread ``tid`` of this process spent runnable but waiting for a CPU (the second
    field of Linux's /proc/<pid>/task/<tid>/schedstat); None where the kernel does not tell."""
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


class _ControlLock:
    """Reusable context manager: take the device lock as a control thread (see ``control``)."""

    __slots__ = ("device", "timeout")

    def __init__(self, device: SwitchDevice, timeout: float | None = None) -> None:
        self.device, self.timeout = device, timeout

    def __enter__(self) -> SwitchDevice:
        dev = self.device
        with dev._control_count_lock:
            dev._control_waiting += 1
        try:
            got = dev.lock.acquire(timeout=-1 if self.timeout is None else self.timeout)
        finally:
            with dev._control_count_lock:
                dev._control_waiting -= 1
        if not got:
            raise TimeoutError(f"switch {dev.name}: device busy for {self.timeout} s")
        return dev

    def __exit__(self, *exc) -> None:
        self.device.lock.release()


class _NanomsgTx:
    """Adapter so ``_transmit`` sends to a nanomsg port like to any other."""

    __slots__ = ("group", "port")

    def __init__(self, group, port: int) -> None:
        self.group, self.port = group, port

    def send(self, data: bytes) -> None:
        self.group.send(self.port, data)
