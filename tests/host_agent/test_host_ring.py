"""The ring all-reduce's schedule (host_agent/ring.py) among 3 real processes over loopback UDP.

A ring step needs only the previous step's receive; waiting for its own send's DONE as well cost
each step another trip to the right neighbour and back (issue 10, H10b: the ring in
``ecmp-collision`` was 0.78x TCP cubic). The regression: with every DONE held back by a relay,
the ranks must still finish reducing; the sends complete once the DONEs flow again.

Each step is a new tensor to the same neighbour, and a new tensor to a receiver that grants used
to send 4 packets and wait for the GRANT answering its OPEN (measured in ``ecmp-collision``: 19-49
ms per step). A sender whose earlier tensor to that receiver is still unfinished and granted is in
the receiver's active set, so its share is current: the next tensor goes on at once.
"""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from cpu_wait import CpuWait
from host_helpers import run_both

from host_agent import overlap, receiver
from host_agent import protocol as P
from host_agent.collectives import CommStats
from host_agent.endpoint import Endpoint, EndpointConfig
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy
from host_agent.relay import LossyRelay
from host_agent.ring import bucket_need_positions, finish_sends, ring_task
from host_agent.tcp_baseline import open_rings
from host_agent.workloads import make_workload
from mininet_topos.ports import free_ports

CTX = mp.get_context("spawn")
N = 3
ELEMENTS = 30_000          # 10,000 per chunk: 28 packets per step


def _data(rank: int) -> np.ndarray:
    return np.random.default_rng(rank).standard_normal(ELEMENTS).astype(np.float32)


def _rank(rank: int, q_addr, q_in, q_out) -> None:
    ep = Endpoint(EndpointConfig(job_id=7, worker_id=rank))
    q_addr.put((rank, ep.address))
    addrs = q_in.get()
    data = _data(rank)
    stats, sends = CommStats(), []
    for handles in ring_task(ep, rank, addrs, data, 0, TagPolicy(), stats, sends):
        ep.run(handles, timeout=20)
    q_out.put(("reduced", rank, data.copy(), sum(h.done for h in sends), len(sends)))
    ep.run(list(sends), timeout=20)
    finish_sends(sends, stats)
    q_out.put(("acked", rank, stats.as_record(), None, None))
    ep.close(linger=0.5)


def test_ring_steps_wait_for_receives_not_for_acknowledgements():
    hold_done = threading.Event()
    hold_done.set()
    q_addr, q_out = CTX.Queue(), CTX.Queue()
    q_in = [CTX.Queue() for _ in range(N)]
    procs = [CTX.Process(target=_rank, args=(r, q_addr, q_in[r], q_out)) for r in range(N)]
    for p in procs:
        p.start()
    relays: list[LossyRelay] = []
    try:
        addrs = dict(q_addr.get(timeout=30) for _ in range(N))
        # every rank reaches its right neighbour through a relay that drops the DONEs coming back
        relays = [LossyRelay(addrs[r], reverse_rule=lambda h: h.msg_type == P.MSG_DONE and hold_done.is_set())
                  .__enter__() for r in range(N)]
        for r in range(N):
            q_in[r].put([relays[i].address for i in range(N)])
        reduced = {}
        for _ in range(N):           # a schedule that waits for DONEs never gets here: the get times out
            kind, rank, data, acked, n_sends = q_out.get(timeout=30)
            assert kind == "reduced"
            reduced[rank] = (data, acked, n_sends)
        assert sum(r.dropped["DONE_critical"] for r in relays) > 0
        hold_done.clear()
        records = {}
        for _ in range(N):
            kind, rank, rec, _a, _n = q_out.get(timeout=60)
            assert kind == "acked"
            records[rank] = rec
    finally:
        hold_done.clear()
        for p in procs:              # every rank has its records by now (or the test failed)
            p.join(15)
        for relay in relays:
            relay.stop()
        for p in (p for p in procs if p.is_alive()):
            p.kill()
    assert all(p.exitcode == 0 for p in procs)
    exact = sum(_data(r) for r in range(N))
    for rank, (data, acked, n_sends) in reduced.items():
        assert n_sends == 2 * (N - 1)
        assert acked == 0, f"rank {rank}: a DONE got through the relay"
        np.testing.assert_allclose(data, exact, rtol=1e-5, atol=1e-5)
        assert np.array_equal(data, reduced[0][0])        # every rank holds the same values
    for rec in records.values():
        assert len(rec["ring_step_recv_ms"]) == len(rec["ring_step_ack_ms"]) == 2 * (N - 1)
        starts = rec["ring_step_start_unix"]
        assert len(starts) == 2 * (N - 1) and starts == sorted(starts)
        # each send was acknowledged only after the DONEs were let through, i.e. after every receive,
        # and a step's receive and acknowledgement are timed from the same instant (its send)
        assert all(a > r for a, r in zip(rec["ring_step_ack_ms"], rec["ring_step_recv_ms"], strict=True)), rec


PACK_DELAY = 0.1


class _SlowPacking(TagPolicy):
    """Packing a chunk takes PACK_DELAY s longer (packetize asks the policy for the critical packets),
    as on a loaded machine: at load 10 the first step's packing took up to 128 ms (H10b, session 6)."""

    def critical_mask(self, packet_magnitude: np.ndarray) -> np.ndarray:
        time.sleep(PACK_DELAY)
        return super().critical_mask(packet_magnitude)


def test_a_steps_receive_and_acknowledgement_are_timed_from_its_send():
    """``ring_step_recv_ms`` and ``ring_step_ack_ms`` share one origin, the step's send, and
    ``ring_step_start_unix`` is that instant: start + ack is when the DONE came, start + receive when
    the receive completed. The receive used to be timed from before the chunk was packed and the
    acknowledgement from the send, so where packing was slow a receive read longer than an
    acknowledgement that came after it (the test above failed about 1 run in 4-5 at load 9-11).

    One clock: the test reads ``time.monotonic`` and converts with an offset read between two
    monotonic reads (``_clock_offset``). The record's own conversion
    (``time.time()``, then ``time.monotonic()``) can only date the start early, by a preemption between
    its two reads (the other rank's thread holding the GIL, a CPU wait): that side gets PACK_DELAY / 2
    (the old error was PACK_DELAY) plus what the threads waited for a CPU, the other the records'
    rounding (0.1 ms each) and the offset's bracket."""
    eps = [Endpoint(EndpointConfig(job_id=7, worker_id=r, give_up_after=5.0)) for r in range(2)]
    addrs = [ep.address for ep in eps]
    out: dict[int, tuple[dict, list[float], list[float]]] = {}

    def rank(r: int) -> None:
        stats, sends, resumed = CommStats(), [], []
        for handles in ring_task(eps[r], r, addrs, _data(r)[:4000], 0, _SlowPacking(), stats, sends):
            eps[r].run(handles, timeout=20)
            resumed.append(time.monotonic())       # the step's receive is complete by now
        eps[r].run(list(sends), timeout=20)
        acked = [h.tx.finished for h in sends]
        finish_sends(sends, stats)
        out[r] = (stats.as_record(), resumed, acked)
        eps[r].close(linger=0.3)                   # the other rank's last DONE may still be asked for
    with CpuWait() as wait:
        _in_threads(rank, 2, 60)
        early = PACK_DELAY / 2 + wait.seconds()
    assert sorted(out) == [0, 1]
    to_unix = _clock_offset()
    for rec, resumed, acked in out.values():
        starts = rec["ring_step_start_unix"]
        assert len(starts) == len(resumed) == len(acked) == 2
        for start, recv_ms, ack_ms, t_recv, t_ack in zip(starts, rec["ring_step_recv_ms"], rec["ring_step_ack_ms"],
                                                         resumed, acked, strict=True):
            late = start + ack_ms / 1e3 - (t_ack + to_unix)     # the DONE's time as the record has it, less the truth
            assert -early < late < 0.001, (start, ack_ms, t_ack + to_unix, early)
            assert start + recv_ms / 1e3 - (t_recv + to_unix) > -early, (start, recv_ms, t_recv + to_unix, early)


def _clock_offset() -> float:
    """``time.time() - time.monotonic()``, read between two monotonic reads: of 20 tries the one whose
    reads lie closest together (a pair of reads split by a preemption is off by the preemption)."""
    best = (float("inf"), 0.0)
    for _ in range(20):
        m1 = time.monotonic()
        unix = time.time()
        m2 = time.monotonic()
        best = min(best, (m2 - m1, unix - (m1 + m2) / 2))
    return best[1]


def test_next_tensor_to_a_granting_receiver_keeps_the_senders_grant(endpoints):
    link = 20e6 / 8
    rx = endpoints(job_id=7, worker_id=1, link_rate=link)
    tx = endpoints(job_id=7, worker_id=0, link_rate=link)
    first_control_of_b: list[P.DlcpHeader] = []

    def drop_grant_of_b(h: P.DlcpHeader) -> bool:   # the first CONTROL naming tensor 1 is its GRANT
        if h.msg_type == P.MSG_CONTROL and h.tensor_id == 1 and not first_control_of_b:
            first_control_of_b.append(h)
            return True
        return False

    a = np.arange(1200 * 359, dtype=np.float32)     # 1,200 packets: ~0.7 s at the grant
    b = np.ones(40 * 359, np.float32)
    out_a, out_b = np.zeros_like(a), np.zeros_like(b)
    recvs = [rx.expect(0, 0, 0, out_a), rx.expect(0, 0, 1, out_b)]
    with LossyRelay(rx.address, reverse_rule=drop_grant_of_b) as relay:
        ha = tx.send(packetize(a, tensor_id=0, policy=TagPolicy(), job_id=7), relay.address)
        end = time.monotonic() + 10
        while not (tx.grants.grants_received and ha.tx.stats.packets > 4):   # A runs at its grant
            assert time.monotonic() < end, "tensor A never got its GRANT"
            tx.poll(0.005)
            rx.poll(0.005)
        hb = tx.send(packetize(b, tensor_id=1, policy=TagPolicy(), job_id=7), relay.address)
        assert not ha.done
        run_both(tx, [ha, hb], rx, recvs)
    assert first_control_of_b and relay.dropped["CONTROL_critical"] == 1
    # B never waited for the GRANT the relay dropped (before ee9a9b9 it waited max(0.1 s, 2 RTO);
    # since standby grants no tensor waits for the GRANT answering its OPEN, test_host_grants.py)
    assert tx.send_blocked.get("unscheduled", 0.0) == 0.0
    assert np.array_equal(out_a, a) and np.array_equal(out_b, b)


def test_receiver_forgets_quiet_senders_without_failing(endpoints, monkeypatch):
    """A receiver whose recent senders all went quiet longer than GRANT_MEMORY has no one to grant
    (seen in ecmp-collision at 090cbb0: the PS server died with an AssertionError in _share(0))."""
    monkeypatch.setattr(receiver, "GRANT_MEMORY", 0.2)
    link = 20e6 / 8
    rx = endpoints(job_id=7, worker_id=1, link_rate=link)
    tx = endpoints(job_id=7, worker_id=0, link_rate=link)
    data = np.ones(20 * 359, np.float32)
    out = np.zeros_like(data)
    h = rx.expect(0, 0, 0, out)
    run_both(tx, [tx.send(packetize(data, tensor_id=0, policy=TagPolicy(), job_id=7), rx.address)], rx, [h])
    assert rx.rx._granted                      # it granted the sender ...
    end = time.monotonic() + 0.6                # ... who stays quiet for longer than GRANT_MEMORY
    while time.monotonic() < end:
        rx.poll(0.01)
    assert not rx.rx._recent and not rx.rx._granted
    assert np.array_equal(out, data)


def test_tensors_opened_before_the_receiver_listened_are_announced_again(endpoints):
    """A ring rank runs ahead: its second step's tensor goes out while the first one still waits for
    an OPEN_ACK from a neighbour that is not listening yet (agents start at different times). The
    OPEN_ACK that finally comes answers one OPEN, not every tensor's: before the fix the sender
    sent the other tensor's DATA unannounced, the receiver (not yet expecting it) dropped it as
    ``unknown_tensor``, and the repair round cut the sender's AIMD rate. That made
    bench_ring_schedule's new schedule 1.33-1.42x slower than the lockstep at 0-5 ms (H10b)."""
    rx = endpoints(job_id=7, worker_id=1)
    tx = endpoints(job_id=7, worker_id=0)
    state = {"listening": False, "opened_0": False}

    def not_listening_yet(h: P.DlcpHeader) -> bool:
        if not state["listening"]:
            return True                            # the receiver's port is not bound yet
        if h.msg_type == P.MSG_CONTROL and h.tensor_id == 0:
            state["opened_0"] = True
        # tensor 1's own OPEN retries lose the race against tensor 0's OPEN_ACK
        return h.msg_type == P.MSG_CONTROL and h.tensor_id == 1 and not state["opened_0"]

    a, b = np.arange(20 * 359, dtype=np.float32), np.ones(20 * 359, np.float32)
    out_a, out_b = np.zeros_like(a), np.zeros_like(b)
    recv_a = rx.expect(0, 0, 0, out_a)
    with LossyRelay(rx.address, rule=not_listening_yet) as relay:
        ha = tx.send(packetize(a, tensor_id=0, policy=TagPolicy(), job_id=7), relay.address)
        hb = tx.send(packetize(b, tensor_id=1, policy=TagPolicy(), job_id=7), relay.address)
        end = time.monotonic() + 0.05
        while time.monotonic() < end:
            tx.poll(0.005)
        state["listening"] = True
        run_both(tx, [ha], rx, [recv_a])
        recv_b = rx.expect(0, 0, 1, out_b)          # the receiver gets to the second step
        run_both(tx, [hb], rx, [recv_b])
    assert state["opened_0"]
    assert rx.drops.get("unknown_tensor", 0) == 0, rx.drops
    assert ha.stats.retransmitted == 0 and hb.stats.retransmitted == 0
    assert np.array_equal(out_a, a) and np.array_equal(out_b, b)


def _in_threads(rank, n: int, timeout: float) -> None:
    """Run ``rank(r)`` for r in 0..n-1, each in its own thread, and wait up to ``timeout`` s for each."""
    threads = [threading.Thread(target=rank, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)


def _ring_of_two(in_flight: int, rule) -> list:
    """Two ranks (threads) run one overlapped ring all-reduce iteration of a small ResNet-50 profile in
    4 buckets, ``in_flight`` at once; rank 0's sends to rank 1 pass a relay dropping by ``rule``."""
    wl = make_workload("resnet50", 2, 0.002, 0)
    compute = overlap.ComputeModel.scaled([int(np.prod(s)) for s in wl.shapes], 20.0, 0.05)
    eps = [Endpoint(EndpointConfig(job_id=2, worker_id=r, give_up_after=5.0)) for r in range(2)]
    records: list[list] = [[], []]
    errors: list = []
    with LossyRelay(eps[1].address, rule=rule) as relay:
        addrs = [eps[0].address, relay.address]

        def rank(r: int) -> None:
            try:
                overlap.allreduce_worker_udp(eps[r], r, addrs, wl, 1, compute, True, TagPolicy(), 1500, 30, 4,
                                             lambda rec, data: records[r].append((rec.as_record(), data)),
                                             in_flight=in_flight)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
        _in_threads(rank, 2, 60)
    for ep in eps:
        ep.sock.close()
    assert not errors, errors[0]
    assert len(records[0]) == len(records[1]) == 1
    np.testing.assert_array_equal(records[0][0][1], records[1][0][1])     # both ranks hold the same sums
    return [rec for ((rec, _data),) in records]


def test_a_stalled_bucket_does_not_hold_back_the_next_one_in_flight():
    """Slow ring steps in ecmp-collision were the ring's low-class buckets starved in a leaf queue for
    up to 0.4 s (pcaps, H10b); with one bucket at a time every later bucket, the front layers' one
    included, waited behind them. Here the first three transmissions of each of the first bucket's
    (last layers') DATA packets to rank 1 are lost, so that bucket needs at least three repair rounds
    (with timer backoff; one round was not always longer than the second bucket's whole reduction on
    a loaded machine); with two in flight the second bucket is reduced meanwhile (with one at a time
    it could only start after the first had finished)."""
    steps = 2                                         # 2 ranks: 1 reduce-scatter + 1 all-gather step
    stalled = {3 * steps, 3 * steps + 1}              # bucket 3 (the last layers) is ready first
    sent: dict[tuple[int, int], int] = {}

    def lose_first_bucket(h: P.DlcpHeader) -> bool:
        if h.msg_type != P.MSG_DATA or h.tensor_id not in stalled:
            return False
        key = (h.tensor_id, h.offset)
        sent[key] = sent.get(key, 0) + 1
        return sent[key] <= 3

    sender, rec = _ring_of_two(2, lose_first_bucket)
    done = {}
    for tid, start, recv_ms in zip(rec["ring_step_tensor_id"], rec["ring_step_start_unix"], rec["ring_step_recv_ms"],
                                   strict=True):
        done[tid // steps] = max(done.get(tid // steps, 0.0), start + recv_ms / 1e3)
    assert sender["retransmissions"] > 0              # the stalled bucket was repaired
    assert sorted(done) == [0, 1, 2, 3]
    assert done[2] < done[3], done                    # the second bucket did not wait for the stalled one


def test_tcp_rings_in_flight_run_in_parallel_and_each_sums_its_own_bucket():
    """The Gloo-like baseline gets the same pipelining as DLCP: ``open_rings`` gives each bucket in
    flight its own connections (tagged with the ring's number, whatever order they are accepted in),
    so two all-reduces run at once in two threads per rank and neither sees the other's data."""
    n, count = 3, 2
    # a free port for each rank's one listener (the ranks bind them), below the ephemeral range
    addrs = [("127.0.0.1", port) for port in free_ports(n)]
    data = {(r, s): np.arange(1000, dtype=np.float32) * (r + 1) + 1000 * s for r in range(n) for s in range(count)}
    rings: dict[int, list] = {}
    errors: list = []

    def rank(r: int) -> None:
        try:
            rings[r] = open_rings(r, addrs, count, timeout=20)
            threads = [threading.Thread(target=rings[r][s].allreduce, args=(data[(r, s)],)) for s in range(count)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(20)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=rank, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for rs in rings.values():
        for ring in rs:
            ring.close()
    assert not errors, errors[0]
    for s in range(count):
        exact = sum(np.arange(1000, dtype=np.float32) * (r + 1) + 1000 * s for r in range(n))
        for r in range(n):
            np.testing.assert_array_equal(data[(r, s)], exact)


def test_buckets_in_flight_below_one_is_a_one_line_error():
    r = subprocess.run([sys.executable, "-m", "host_agent.cli", "allreduce", "--rank", "0", "--peers",
                        "127.0.0.1:1,127.0.0.1:2", "--buckets-in-flight", "0"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1
    assert r.stderr.strip() == "dlcp-agent: error: --buckets-in-flight 0: must be >= 1"


def _classes_on_the_wire(in_flight: int) -> tuple[dict[int, set[int]], list[float]]:
    """Layer classes rank 0's DATA and PROBEs really carried through the relay, per bucket, and each
    bucket's need time (share of the next forward pass's compute before its first layer)."""
    wl = make_workload("resnet50", 2, 0.002, 0)
    elems = [int(np.prod(s)) for s in wl.shapes]
    forward = overlap.ComputeModel.scaled(elems, 20.0, 0.05).forward
    steps = 2
    seen: dict[int, set[int]] = {}

    def record(h: P.DlcpHeader) -> bool:
        if h.msg_type in (P.MSG_DATA, P.MSG_PROBE):
            seen.setdefault(h.tensor_id // steps, set()).add(h.layer_class)
        return False                                  # drop nothing

    _ring_of_two(in_flight, record)
    return seen, [sum(forward[:g[0]]) / sum(forward) for g in overlap.buckets_of(elems, 4)]


def _class_of(need: float) -> int:
    return P.LAYER_CLASS_MAX - int(need * P.NUM_LAYER_CLASSES)


def test_each_bucket_is_tagged_by_when_the_next_forward_pass_needs_it():
    """The ring's layer class is when the next forward pass needs the bucket (the paper's reason for
    front-first priority), read off the compute model, not the index of the bucket's first layer.
    By index, ResNet-50's buckets 1-3 (first layers 112, 139, 151 of 161, after 26, 57 and 79 % of the
    forward compute) got classes 2, 1, 0 and sat in a leaf's queue 1 for up to 0.4 s under a PS job's
    classes 5-7 in ``ecmp-collision`` (pcaps, H10b); on the old code the wire carried 7/2/1/0."""
    wl = make_workload("resnet50", 2, 0.002, 0)
    elems = [int(np.prod(s)) for s in wl.shapes]
    groups = overlap.buckets_of(elems, 4)
    assert TagPolicy().layer_class(groups[1][0], len(elems)) == 2        # the old tag, by index
    seen, need = _classes_on_the_wire(4)              # every bucket in its own slot: nothing inherited
    assert seen == {b: {_class_of(need[b])} for b in range(4)}, (seen, need)
    assert [c for b in range(4) for c in seen[b]] == [7, 5, 3, 1]


def test_a_bucket_carries_the_class_of_the_most_urgent_bucket_waiting_behind_it():
    """Buckets are ready 3, 2, 1, 0 and the k-th ready goes to slot k mod in_flight, one after another
    per slot, so a bucket holds up the later buckets of its slot: it carries the most urgent need
    among them (priority inheritance). With one in flight (the default) every bucket holds up bucket
    0, which the next pass needs first: the whole ring travels at class 7. Need time alone put
    buckets 1-3 under the PS job's bulk in ecmp-collision (the ring 0.94x TCP cubic; with this 1.21x,
    H10b session 7); on the old wiring the wire carried 7/5/3/1 with one in flight."""
    seen, _need = _classes_on_the_wire(1)
    assert seen == {0: {7}, 1: {7}, 2: {7}, 3: {7}}, seen
    seen, _need = _classes_on_the_wire(2)
    assert [c for b in range(4) for c in seen[b]] == [7, 5, 7, 5], seen   # slot 0: 3 then 1; slot 1: 2 then 0
    wl = make_workload("resnet50", 2, 0.002, 0)
    elems = [int(np.prod(s)) for s in wl.shapes]
    groups = overlap.buckets_of(elems, 4)
    assert [TagPolicy().layer_class(*p) for p in bucket_need_positions(elems, groups)] == [7, 5, 3, 1]


def test_bucket_need_positions_rejects_no_parameters_and_no_slots():
    with pytest.raises(ValueError, match="no parameters"):
        bucket_need_positions([0, 0], [[0], [1]])
    with pytest.raises(ValueError, match="in_flight 0"):
        bucket_need_positions([4, 4], [[0], [1]], 0)


def test_a_tensor_without_layer_order_carries_one_class_in_every_step():
    """``collectives.ring_allreduce`` reduces one flat tensor, needed whole: every step carries the same
    class. The step number used to be the class (issue 10's review: "the ring's layer class is the
    step number"), so the all-gather step that completes the tensor travelled lowest (3 of 7 here)."""
    eps = [Endpoint(EndpointConfig(job_id=7, worker_id=r)) for r in range(2)]
    seen: dict[int, set[int]] = {}

    def record(h: P.DlcpHeader) -> bool:
        if h.msg_type == P.MSG_DATA:
            seen.setdefault(h.tensor_id, set()).add(h.layer_class)
        return False

    out: list = [None, None]
    with LossyRelay(eps[1].address, rule=record) as relay:
        addrs = [eps[0].address, relay.address]

        def rank(r: int) -> None:
            data, stats, sends = _data(r), CommStats(), []
            for handles in ring_task(eps[r], r, addrs, data, 0, TagPolicy(), stats, sends):
                eps[r].run(handles, timeout=20)
            eps[r].run(list(sends), timeout=20)
            out[r] = data
        _in_threads(rank, 2, 30)
    for ep in eps:
        ep.sock.close()
    np.testing.assert_allclose(out[0], _data(0) + _data(1), rtol=1e-5)
    assert seen == {0: {7}, 1: {7}}, seen


class _OvertakingRelay(LossyRelay):
    """Forwards rank 0's packets to rank 1 but holds step 0's last DATA packet and every OPEN of step 1 until the
    first DATA of step 1 has gone through: the next step's DATA overtakes both, as sprayed DATA overtook its OPEN
    (which keeps the tensor's one path) in ecmp-collision while the receiver still waited for this step."""

    def __init__(self, target, last_offset: int) -> None:
        super().__init__(target)
        self.last_offset = last_offset
        self.released = False
        self.overtaken = 0

    def _reorder_or_forward(self, client, data: bytes, ce: bool) -> None:
        h = P.DlcpHeader.unpack(data)
        if not self.released:
            if (h.tensor_id == 0 and h.msg_type == P.MSG_DATA and h.offset == self.last_offset
                    and not h.flags & P.FLAG_RETX) or (h.tensor_id == 1 and h.msg_type == P.MSG_CONTROL):
                self._held.append((client, data))
                return
            if h.tensor_id == 1 and h.msg_type == P.MSG_DATA:
                self._forward_up(client, data, ce)
                self.overtaken += 1
                self.released = True
                for c, d in self._held:
                    self._forward_up(c, d, False)
                self._held.clear()
                return
        self._forward_up(client, data, ce)


def test_the_next_steps_data_overtaking_its_open_is_held_not_dropped(endpoints):
    """Under spraying a ring step's DATA can reach the receiver before its OPEN (the OPEN keeps the tensor's one
    path, the DATA takes the emptier one) and before the receiver has finished the step before (ecmp-collision
    pcaps, H10h: 27 % of the ring's tensors; every packet the receivers' BITMAPs then asked for had been
    delivered by the switch, 0-80 ms earlier). DATA of a tensor the receiver neither knows nor expects is
    dropped, so each such step cost a repair round and an AIMD halving. The ring posts each receive a step
    early (``ring.LOOKAHEAD``), so that DATA is held for its OPEN: nothing is dropped or resent for step 1.
    Fails with ``LOOKAHEAD = 0`` (unknown_tensor drops, step 1 resent)."""
    n_el = 2 * 20 * 362                                  # 2 ranks, 20 full packets per step
    eps = [endpoints(job_id=7, worker_id=r) for r in range(2)]
    data = [np.random.default_rng(r).standard_normal(n_el).astype(np.float32) for r in range(2)]
    want = data[0] + data[1]
    with _OvertakingRelay(eps[1].address, last_offset=19 * 362) as relay:
        addrs = [eps[0].address, relay.address]
        stats = [CommStats(), CommStats()]
        sends: list[list] = [[], []]
        errors: list = []

        def rank(r: int) -> None:
            try:
                pol = TagPolicy(loss_bound=0.0)
                for handles in ring_task(eps[r], r, addrs, data[r], 0, pol, stats[r], sends[r]):
                    eps[r].run(handles, timeout=20)
                eps[r].run(list(sends[r]), timeout=20)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
        _in_threads(rank, 2, 60)
    assert not errors, errors[0]
    assert relay.overtaken == 1
    assert eps[1].drops.get("unknown_tensor", 0) == 0, eps[1].drops
    assert sends[0][1].stats.retransmitted == 0          # step 1 went through once
    np.testing.assert_array_equal(data[0], want)
    np.testing.assert_array_equal(data[1], want)
