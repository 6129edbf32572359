"""The parameter server's tail (host_agent/overlap.py, PS_TAPER_PACKETS): a big layer's last slices taper.

The server sums a slice once every worker's copy is in and then sends the whole sum back, so the iteration
waits for the store-and-forward of the slice that completes last. Real endpoints on 127.0.0.1: each worker
talks to the server through a UDP relay (a real socket) that logs every DLCP DATA packet it forwards, so
the test sees the order in which gradients came in and parameters went out.
"""

from __future__ import annotations

import selectors
import socket
import threading

import numpy as np
import pytest
from test_host_overlap import _run_ps

from host_agent import overlap
from host_agent import protocol as P
from host_agent.errors import UserError
from host_agent.policy import TagPolicy
from host_agent.workloads import make_workload

EPP = 362                          # float32 elements per 1500-byte packet
WIDE = make_workload("digits-wide", 3, 1.0, 0).shapes


def _packets(plan: overlap.PsPlan, layer: int) -> list[int]:
    return [-(-(b - a) // EPP) for f, a, b in plan.tensors if f == layer]


def test_a_big_layers_last_slices_halve_down_to_the_taper_size():
    assert overlap.PS_TAPER_PACKETS == 16 and overlap.ps_taper_packets() == 16
    # digits-wide's hidden layer (442 packets): the slice the server completes last is 16 packets, not 111
    assert _packets(overlap.PsPlan.build(WIDE, 1500, 128, 4), 2) == [110, 110, 110, 64, 32, 16]
    assert _packets(overlap.PsPlan.build(WIDE, 1500, 128, 4, taper_packets=0), 2) == [110, 111, 110, 111]
    for packets in (1, 100, 128, 129, 130, 241, 442, 1000, 5000):
        for k, t in ((128, 16), (128, 8), (100, 16), (64, 32), (128, 0), (0, 16), (16, 16)):
            sizes = overlap.slice_sizes(packets, k, t)
            assert sum(sizes) == packets and min(sizes) >= 1
            if k <= 0 or packets <= k:
                assert len(sizes) == 1 if k <= 0 else sizes == [packets]
                continue
            assert max(sizes) <= k
            m = 0                               # the tail: ..., 4t, 2t, t, each below the slice size
            while 0 < t < k and (t << m) < k and t * ((2 << m) - 1) <= packets:
                m += 1
            head = sizes[:len(sizes) - m]
            assert sizes[len(head):] == [t << j for j in reversed(range(m))]
            assert max(head) - min(head) <= 1 and len(head) == -(-sum(head) // k)   # the rest: about equal


def test_the_taper_keeps_the_loss_budget_and_leaves_the_accuracy_workload_alone():
    """The loss bound is per tensor: cutting the hidden layer finer must not shrink what a worker may give
    up in it (40 packets either way), a 16-packet slice may give up 1 (its LAST packet never), and the
    digits MLP of the accuracy check moves the same tensors as before (no layer of it is sliced)."""
    pol = TagPolicy()

    def budget(n: int) -> int:
        nc = n - pol.critical_count(n)
        return min(pol.droppable_count(nc), max(0, nc - 1))
    for taper in (0, 16):
        assert sum(budget(n) for n in _packets(overlap.PsPlan.build(WIDE, 1500, 128, 4, taper), 2)) == 40
    assert budget(16) == 1
    digits = make_workload("digits", 2, 1.0, 0).shapes
    assert overlap.PsPlan.build(digits, 1500, 128, 4, 16) == overlap.PsPlan.build(digits, 1500, 128, 4, 0)


def test_taper_size_from_the_environment(monkeypatch):
    monkeypatch.setenv("DLCP_PS_TAPER_PACKETS", "0")
    assert overlap.ps_taper_packets() == 0
    assert _packets(overlap.PsPlan.build(WIDE, 1500, 128, 4), 2) == [110, 111, 110, 111]
    for bad in ("-1", "few"):
        monkeypatch.setenv("DLCP_PS_TAPER_PACKETS", bad)
        with pytest.raises(UserError, match="DLCP_PS_TAPER_PACKETS"):
            overlap.ps_taper_packets()


class _Relay(threading.Thread):
    """One UDP socket per worker between it and the server: forwards both ways and logs each first
    transmission of a DATA packet as (direction, worker, iteration, tensor slot, offset), in the order it
    forwarded them (one thread, one log; a retransmission may follow a sum it was not needed for)."""

    def __init__(self, n: int) -> None:
        super().__init__(daemon=True)
        self.server = ("127.0.0.1", 0)
        self.socks = []
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind(("127.0.0.1", 0))
            s.setblocking(False)
            self.socks.append(s)
        self.workers: list[tuple[str, int] | None] = [None] * n
        self.log: list[tuple[str, int, int, int, int]] = []     # (grad|param, rank, iteration, slot, offset)
        self.stop = threading.Event()

    def via(self, rank: int, server: tuple[str, int]) -> tuple[str, int]:
        """Worker ``rank`` sends to this relay's socket for it (``_run_ps``'s ``via``), which forwards to ``server``."""
        self.server = ("127.0.0.1", server[1])
        return self.socks[rank].getsockname()

    def run(self) -> None:
        sel = selectors.DefaultSelector()
        for r, s in enumerate(self.socks):
            sel.register(s, selectors.EVENT_READ, r)
        while not self.stop.is_set():
            for key, _ev in sel.select(0.05):
                r, s = key.data, key.fileobj
                while True:
                    try:
                        data, src = s.recvfrom(65535)
                    except BlockingIOError:
                        break
                    to_server = src[1] != self.server[1]
                    if to_server:
                        self.workers[r] = src
                    dest = self.server if to_server else self.workers[r]
                    if len(data) >= P.DLCP_HEADER_LEN:
                        h = P.DlcpHeader.unpack(data)
                        if h.msg_type == P.MSG_DATA and not h.flags & P.FLAG_RETX:   # first transmissions
                            self.log.append(("grad" if to_server else "param", r, h.iteration,
                                             h.tensor_id & ((1 << (P.TENSOR_ID_BITS - 1)) - 1), h.offset))
                    if dest is not None:
                        s.sendto(data, dest)
        sel.close()
        for s in self.socks:
            s.close()


def test_the_server_returns_a_big_layer_last_in_a_small_slice():
    """Three workers push digits-wide through relays. In every iteration the server sends each of the hidden
    layer's slices back only after the last gradient packet of that slice from every worker (it sums whole
    slices), and the slice it starts returning last -- the one the next forward pass waits for -- is the
    16-packet one (before the taper: a slice of 110-111 packets). All workers end with the same parameters."""
    n, iterations = 3, 3
    plan = overlap.PsPlan.build(WIDE, 1500)
    hidden = [s for s, (f, _a, _b) in enumerate(plan.tensors) if f == 2]
    relay = _Relay(n)
    relay.start()
    try:
        _records, finals, _compute = _run_ps("dlcp", overlapped=True, iterations=iterations, n=n, via=relay.via)
    finally:
        relay.stop.set()
        relay.join(5)
    log = relay.log
    for it in range(iterations):
        last_grad: dict[int, int] = {}          # slot -> index in the log of its last gradient packet (any worker)
        first_param: dict[int, int] = {}        # slot -> index of its first parameter packet (to any worker)
        params: dict[int, set] = {s: set() for s in hidden}
        for i, (kind, _r, i_it, slot, off) in enumerate(log):
            if i_it != it or slot not in params:
                continue
            if kind == "grad":
                last_grad[slot] = i
            else:
                first_param.setdefault(slot, i)
                params[slot].add(off)
        assert set(first_param) == set(hidden) == set(last_grad), (it, first_param, last_grad)
        for s in hidden:                        # store-and-forward: summed when every copy is in
            assert first_param[s] > last_grad[s], (it, s)
            assert len(params[s]) == -(-(plan.tensors[s][2] - plan.tensors[s][1]) // EPP)
        returned_last = max(hidden, key=lambda s: first_param[s])
        assert len(params[returned_last]) <= overlap.PS_TAPER_PACKETS, (it, returned_last, len(params[returned_last]))
    for a, b in zip(finals[0], finals[1], strict=True):
        np.testing.assert_array_equal(a, b)
