"""Small tensors behind a strict-priority queue, with real sockets: no needless PROBE rounds.

In the `accuracy` study (digits MLP, docs/experiments-history.md H10-4) a worker's 1- and 2-packet
tensors of the low layer classes waited 80-140 ms in their switch queue behind the front layers'
DATA of six workers. Their PROBE timer (20 ms, doubling, never adapted: a DONE gave no round-trip
sample) fired 2-3 times per tensor, and each PROBE drew a DONE: about 40 % of the packets at the
PS server's port were PROBEs and repeated DONEs. ``ClassDelayRelay`` emulates that queue: DATA and
PROBE of one layer class reach the receiver ``delay`` s late (in order, as in one FIFO class
queue); every other packet and every reply goes straight through.
"""

from __future__ import annotations

import collections
import select
import socket
import threading
import time

import numpy as np
from cpu_wait import SO_TIMESTAMPNS, CpuWait, kernel_time
from host_helpers import run_both

from host_agent import protocol as P
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy

LOW_CLASS = 1
DELAY = 0.1                   # s a low-class packet waits (the measured 80-140 ms)
TENSORS = 10
CALM = 0.005                  # s of CPU wait (CpuWait) below which a tensor's push counts as undisturbed


class ClassDelayRelay:
    """Relay: DATA/PROBE of ``layer_class`` upstream ``delay`` s late; ``drop_once`` drops the
    first DATA of that tensor id (a tail drop); counts PROBEs and DONEs by tensor id and keeps the
    kernel's arrival time (SO_TIMESTAMPNS) of each tensor's first DATA and of its PROBEs."""

    def __init__(self, target: tuple[str, int], layer_class: int, delay: float,
                 drop_once: int | None = None) -> None:
        self.target, self.layer_class, self.delay = target, layer_class, delay
        self.drop_once = drop_once
        self.dropped = 0
        self.probes: collections.Counter[int] = collections.Counter()
        self.dones: collections.Counter[int] = collections.Counter()
        self.data_at: dict[int, float] = {}                                     # tensor id -> first DATA
        self.probe_at: collections.defaultdict[int, list[float]] = collections.defaultdict(list)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.address = self.sock.getsockname()
        self.upstream = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)   # one sender: one socket
        self.upstream.bind(("127.0.0.1", 0))
        self.client: tuple[str, int] | None = None
        self.queue: collections.deque = collections.deque()   # (due, bytes)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> ClassDelayRelay:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()
        self.upstream.close()

    def _arrive(self, data: bytes, when: float) -> None:
        h = P.DlcpHeader.unpack(data)
        tid = h.tensor_id
        if h.msg_type == P.MSG_PROBE:
            self.probes[tid] += 1
            self.probe_at[tid].append(when)
        elif h.msg_type == P.MSG_DATA:
            self.data_at.setdefault(tid, when)
        if h.msg_type == P.MSG_DATA and tid == self.drop_once and not h.flags & P.FLAG_RETX:
            self.drop_once = None
            self.dropped += 1
            return
        if h.msg_type in (P.MSG_DATA, P.MSG_PROBE) and h.layer_class == self.layer_class:
            self.queue.append((time.monotonic() + self.delay, data))
        else:
            self.upstream.sendto(data, self.target)

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            while self.queue and self.queue[0][0] <= now:
                self.upstream.sendto(self.queue.popleft()[1], self.target)
            wait = min(0.005, max(0.0, self.queue[0][0] - now)) if self.queue else 0.005
            for s in select.select([self.sock, self.upstream], [], [], wait)[0]:
                data, anc, _flags, addr = s.recvmsg(65536, socket.CMSG_SPACE(16))
                if s is self.sock:
                    self.client = addr
                    stamp = kernel_time(anc)
                    self._arrive(data, time.time() if stamp is None else stamp)
                elif self.client is not None:
                    if len(data) >= P.DLCP_HEADER_LEN and data[0] & 0xF == P.MSG_DONE:
                        self.dones[P.DlcpHeader.unpack(data).tensor_id] += 1
                    self.sock.sendto(data, self.client)


def _tiny(tid: int, n_elements: int = 10, layer_class: int = LOW_CLASS):
    """A 1-packet gradient tensor of ``layer_class`` (a bias), as the PS worker pushes it."""
    policy = TagPolicy(layer_classes={tid: layer_class})
    return packetize(np.arange(n_elements, dtype=np.float32) + tid, policy=policy, tensor_id=tid)


def _push_one_after_another(endpoints, drop_once: int | None = None):
    """Returns (relay, sender, each tensor's completion time, the CPU wait during each push)."""
    rx = endpoints()
    tx = endpoints()
    finished: list[float] = []
    waited: list[float] = []
    with ClassDelayRelay(rx.address, LOW_CLASS, DELAY, drop_once=drop_once) as relay:
        for tid in range(TENSORS):
            out = np.zeros(10, np.float32)
            rh = rx.expect(0, 0, tid, out)
            with CpuWait() as wait:
                t0 = time.monotonic()
                sh = tx.send(_tiny(tid), relay.address)
                run_both(tx, [sh], rx, [rh], timeout=10)
                finished.append(time.monotonic() - t0)
                waited.append(wait.seconds())
            assert np.array_equal(out, np.arange(10, dtype=np.float32) + tid)
    return relay, tx, finished, waited


def test_one_packet_tensors_behind_a_slow_class_need_no_probe_rounds(endpoints):
    """Ten 1-packet tensors, each waiting 100 ms in its class queue, pushed one after another.

    Old code: every tensor sent its PROBE at once and again at 20 and 60 ms (the RTO never learnt
    the class's 100 ms), 3 PROBEs and 3 DONEs each (30 and 30+). Now: no PROBE right after a tensor
    whose every packet is needed, and the class's RTO learns the DONE round trip, so after the
    first tensor no PROBE leaves at all, and each tensor still finishes in about one class delay.

    On a loaded machine a DONE can come later than the learnt RTO (the threads that carry it wait for
    a CPU), and then a PROBE is right: the counts and times below leave out (or take off) the time the
    test's threads waited for a CPU (CpuWait). What a loaded machine cannot change: that RTO has learnt
    the class's delay (every DONE round trip is longer), and a PROBE leaves no earlier than it after the
    tensor's DATA (relay timestamps; the timer runs from just before the DATA's send, so a CPU wait in
    between may bring the PROBE that much closer to it).
    """
    relay, tx, finished, waited = _push_one_after_another(endpoints)
    assert tx.rto_for_class(relay.address, LOW_CLASS) >= DELAY
    early = {t: [round(p - relay.data_at[t], 4) for p in relay.probe_at[t] if p - relay.data_at[t] < DELAY / 2 - waited[t]]
             for t in range(2, TENSORS)}
    assert not any(early.values()), f"PROBEs less than {DELAY / 2}s after the DATA: {early}"
    calm = [t for t in range(TENSORS) if waited[t] < CALM]
    later = sum(relay.probes[t] for t in calm if t >= 2)
    assert later == 0, f"PROBEs of tensors 2..9: {dict(relay.probes)}; CPU waits {[round(w, 4) for w in waited]}"
    assert sum(relay.probes[t] for t in calm) <= 3, dict(relay.probes)
    assert sum(relay.dones[t] for t in calm) <= len(calm) + 3, dict(relay.dones)
    assert max(f - w for f, w in zip(finished[2:], waited[2:], strict=True)) < DELAY + 0.15, (finished, waited)
    assert tx.probes_sent == sum(relay.probes.values())


def test_a_lost_probe_free_tensor_is_still_repaired(endpoints):
    """The same, with tensor 5's only DATA packet dropped: its PROBE leaves when the DONE is later
    than the class's RTO, the BITMAP asks for the packet, and the tensor completes exactly."""
    relay, _tx, finished, waited = _push_one_after_another(endpoints, drop_once=5)
    assert relay.dropped == 1
    assert relay.probes[5] >= 1
    assert finished[5] - waited[5] < 2.0, (finished, waited)


def test_a_tensor_with_a_loss_budget_still_probes_at_once(endpoints):
    """A tensor whose receiver may complete without some packets (here 30 non-critical packets, 3
    of them droppable at p = 0.1) still sends its PROBE right after its DATA: only the PROBE tells
    the receiver that the missing ones are not coming."""
    rx = endpoints()
    tx = endpoints()
    with ClassDelayRelay(rx.address, LOW_CLASS, 0.0) as relay:
        data = np.random.default_rng(1).standard_normal(30 * 362).astype(np.float32)
        pt = packetize(data, policy=TagPolicy(layer_classes={0: LOW_CLASS}, critical_share=0.0), tensor_id=0)
        out = np.zeros_like(data)
        rh = rx.expect(0, 0, 0, out)
        sh = tx.send(pt, relay.address)
        run_both(tx, [sh], rx, [rh], timeout=10)
    assert relay.probes[0] >= 1
    assert np.array_equal(out, data)
