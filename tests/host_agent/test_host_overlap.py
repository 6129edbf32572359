"""Iterations as training sees them (host_agent/overlap.py): compute model, buckets, overlap on loopback.

Real endpoints and real TCP sockets on 127.0.0.1, one thread per process role.
"""

import threading
import time
from collections.abc import Callable

import numpy as np
import pytest
from cpu_wait import CpuWait

from host_agent import overlap
from host_agent.endpoint import Endpoint, EndpointConfig
from host_agent.errors import UserError
from host_agent.outgoing import PROBE_FREE_MAX_PACKETS
from host_agent.policy import TagPolicy
from host_agent.tcp_baseline import FRAME
from host_agent.workloads import make_workload


def test_compute_scales_with_the_link_and_follows_layer_sizes():
    cm = overlap.ComputeModel.scaled([1000, 3000], link_mbps=10, ratio=2.0)
    assert cm.total == pytest.approx(2.0 * 4000 * 4 * 8 / 10e6)
    assert sum(cm.backward) == pytest.approx(2 * sum(cm.forward))
    assert cm.forward[1] == pytest.approx(3 * cm.forward[0])
    assert overlap.ComputeModel.scaled([5, 5], 10, 0.0).total == 0.0
    assert overlap.ComputeModel.scaled([5, 5], 40, 1.0).total == pytest.approx(
        overlap.ComputeModel.scaled([5, 5], 20, 1.0).total / 2)


def test_buckets_are_contiguous_cover_every_layer_and_balance_size():
    sizes = [10, 500, 10, 10, 480, 10, 5]
    groups = overlap.buckets_of(sizes, 2)
    assert [i for g in groups for i in g] == list(range(len(sizes)))
    assert len(groups) == 2
    assert abs(sum(sizes[i] for i in groups[0]) - sum(sizes[i] for i in groups[1])) < 500
    assert overlap.buckets_of(sizes, 100) == [[i] for i in range(len(sizes))] or len(overlap.buckets_of(sizes, 100)) <= 7


def test_wire_ids_of_consecutive_iterations_differ():
    assert overlap.wire_tid(0, 5) != overlap.wire_tid(1, 5) and overlap.wire_tid(0, 5) == overlap.wire_tid(2, 5)


def _run_ps(mode: str, overlapped: bool, iterations: int = 3, n: int = 2, ratio: float = 2.0,
            slice_packets: int | None = None, merge_packets: int | None = None, workload: str = "digits-wide",
            emitted: list[list[tuple[float, float]]] | None = None, meter: CpuWait | None = None,
            via: Callable[[int, tuple[str, int]], tuple[str, int]] | None = None):
    """``emitted``: per worker, ``time.time()`` as each record reached the caller and ``meter``'s CPU wait
    by then (0 without a meter). ``via(rank, server address)``: the address worker ``rank`` sends to instead
    (a relay; the server answers whoever sent)."""
    wl = make_workload(workload, n, 1.0, 0)
    compute = overlap.ComputeModel.scaled([int(np.prod(s)) for s in wl.shapes], 20.0, ratio)
    records: list[list] = [[] for _ in range(n)]
    finals: list = [None] * n
    errors: list = []
    ready = threading.Event()
    addr: list = []

    def server():
        try:
            if mode == "tcp":
                overlap.ps_server_tcp(("127.0.0.1", 0), "cubic", wl, n, iterations, 30, lambda it, st: None,
                                      on_listening=lambda a: (addr.append(a), ready.set()), slice_packets=slice_packets,
                                      merge_packets=merge_packets)
            else:
                ep = Endpoint(EndpointConfig(job_id=1, worker_id=0xFFFF))
                addr.append(ep.address)
                ready.set()
                overlap.ps_server_udp(ep, wl, n, iterations, TagPolicy(), 1500, 30, lambda it, st: None,
                                      slice_packets=slice_packets, merge_packets=merge_packets)
                ep.close(0.3)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            ready.set()

    def worker(r):
        try:
            ready.wait(10)
            server = addr[0] if via is None else via(r, addr[0])
            def emit(rec, params) -> None:
                records[r].append(rec)
                if emitted is not None:
                    emitted[r].append((time.time(), meter.seconds() if meter is not None else 0.0))
            if mode == "tcp":
                finals[r] = overlap.ps_worker_tcp(server, "cubic", wl, r, iterations, compute, overlapped, 30, 5, emit,
                                                  slice_packets=slice_packets, merge_packets=merge_packets)
            else:
                ep = Endpoint(EndpointConfig(job_id=1, worker_id=r))
                finals[r] = overlap.ps_worker_udp(ep, server, wl, r, iterations, compute, overlapped, TagPolicy(),
                                                  1500, 30, emit, slice_packets=slice_packets, merge_packets=merge_packets)
                ep.close(0.3)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=server)] + [threading.Thread(target=worker, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[0]
    return records, finals, compute


@pytest.mark.parametrize("mode", ["dlcp", "tcp"])
def test_ps_iterations_include_compute_and_workers_end_with_the_same_parameters(mode):
    emitted: list[list[tuple[float, float]]] = [[], []]
    with CpuWait() as wait:
        records, finals, compute = _run_ps(mode, overlapped=True, emitted=emitted, meter=wait)
        waited = wait.seconds()
    # a bias of 1-2 packets has no loss budget: its DONE comes unasked and it sends a PROBE only when
    # that DONE is late (outgoing.probe_free; test_host_small_tensors.py)
    probed = [int(np.prod(s)) > PROBE_FREE_MAX_PACKETS * 362 for s in make_workload("digits-wide", 2, 1.0, 0).shapes]
    for recs, times in zip(records, emitted, strict=True):
        assert [r.iteration for r in recs] == [0, 1, 2]
        waited_before = 0.0
        for r, (_at, wait_by) in zip(recs, times, strict=True):
            assert r.compute_seconds == pytest.approx(compute.total)
            assert r.iter_seconds >= compute.total * 0.99           # the GPU's own work is never hidden
            rec = r.as_record()
            assert rec["exposed_comm_seconds"] == pytest.approx(max(0.0, r.iter_seconds - compute.total), abs=1e-5)
            if mode == "dlcp":                # each layer's push: acknowledged after its backward step, by
                done = rec["push_done_s"]     # the time its parameters came back (the server replies DONE to
                # a push before it counts it, receiver._complete, so before it can send the layer's sum; one
                # socket, in order: seen in the same turn at the latest); a PROBE for each tensor with a loss budget
                assert len(done) == len(rec["layer_arrival_s"]) == len(rec["push_probes"])
                assert all(t is not None and 0 < t <= a for t, a in zip(done, rec["layer_arrival_s"], strict=True)), \
                    list(zip(done, rec["layer_arrival_s"], strict=True))
                # last layer first (its push left during the backward pass), unless the threads waited for a
                # CPU as long as the backward pass in this iteration: then the GPU clock ran ahead meanwhile, the
                # rest of the backward pass completes at once and the pushes leave together, the highest class
                # (first layer) first (seen at nice 19 beside busy loops: 2 runs in 6, and equal DONE times)
                if wait_by - waited_before < sum(compute.backward):
                    assert done[-1] < done[0], (done, wait_by - waited_before)
                assert all(p >= 1 for p, big in zip(rec["push_probes"], probed, strict=True) if big)  # budget
            waited_before = wait_by
        if mode == "dlcp":                    # wall-clock starts line records up with pcaps: i+1 starts when i ends
            # (each start converts perf_counter to time.time() with two reads: another thread holding the GIL
            # or a CPU wait between them dates it early; 10 ms, plus what the threads waited for a CPU)
            for a, b in zip(recs, recs[1:], strict=False):
                assert b.as_record()["start_unix"] - a.as_record()["start_unix"] == \
                    pytest.approx(a.iter_seconds, abs=0.01 + waited)
    if mode == "dlcp":                        # ... and on the wall clock: an iteration ends (its next forward pass
        for recs, times in zip(records, emitted, strict=True):   # does) before its record goes out (no margin:
            for r, (at, _wait) in zip(recs, times, strict=True):  # the record's conversion can only date it early)
                assert r.as_record()["start_unix"] + r.iter_seconds <= at + 1e-5, (r, at)
    for a, b in zip(finals[0], finals[1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_overlap_hides_communication_that_no_overlap_exposes():
    over, finals_o, _ = _run_ps("dlcp", overlapped=True)
    flat, finals_f, _ = _run_ps("dlcp", overlapped=False)
    for recs in flat:                       # no overlap: every bit of communication is exposed
        for r in recs[1:]:
            assert r.iter_seconds - r.compute_seconds >= 0.9 * r.comm_seconds
    hidden = [r.comm_seconds - (r.iter_seconds - r.compute_seconds) for recs in over for r in recs[1:]]
    assert max(hidden) > 0                  # overlap: part of the communication ran under the backward pass
    for a, b in zip(finals_o[0], finals_f[0], strict=True):     # same training either way (lossless loopback)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_slices_cut_every_layer_into_whole_packets_of_at_most_the_slice_size():
    shapes = make_workload("digits-wide", 2, 1.0, 0).shapes
    epp = 362                                      # float32 elements per 1500-byte packet
    assert overlap.ps_slices(shapes, 1500, 0) == [(t, 0, int(np.prod(s))) for t, s in enumerate(shapes)]
    for k in (1, 50, 128, 10_000):
        slices = overlap.ps_slices(shapes, 1500, k)
        for t, s in enumerate(shapes):
            mine = [(a, b) for lay, a, b in slices if lay == t]
            assert mine[0][0] == 0 and mine[-1][1] == int(np.prod(s))          # every element, once, in order
            assert all(b0 == a1 for (_a0, b0), (a1, _b1) in zip(mine, mine[1:], strict=False))
            assert all(a % epp == 0 for a, _b in mine)                          # whole packets
            packets = [-(-(b - a) // epp) for a, b in mine]
            assert max(packets) <= k and max(packets) - min(packets) <= 1     # at most k, about equal
    assert [b - a for lay, a, b in overlap.ps_slices(shapes, 1500, 128) if lay == 2] == [39820, 40182, 39820, 40178]


@pytest.mark.parametrize(("var", "read"), [("DLCP_PS_SLICE_PACKETS", overlap.ps_slice_packets),
                                           ("DLCP_PS_MERGE_PACKETS", overlap.ps_merge_packets)])
def test_slice_and_merge_sizes_from_the_environment(monkeypatch, var, read):
    monkeypatch.setenv(var, "64")
    assert read() == 64
    for bad in ("-1", "many"):
        monkeypatch.setenv(var, bad)
        with pytest.raises(UserError, match=var):
            read()


@pytest.mark.parametrize("mode", ["dlcp", "tcp"])
def test_sliced_ps_trains_exactly_as_whole_layers(mode):
    """Slices are summed and updated on their own (SGD is elementwise): the same parameters come back,
    and each layer's record still has one push time, arrival and PROBE count. The TCP PS moves the
    same slices (one frame each: the bytes it sends say how many frames), so a comparison of the two
    is one of transports, not of PS designs."""
    whole, finals_w, _ = _run_ps(mode, overlapped=True, slice_packets=0)
    sliced, finals_s, _ = _run_ps(mode, overlapped=True, slice_packets=100)
    n_layers = len(finals_w[0])
    shapes = make_workload("digits-wide", 2, 1.0, 0).shapes
    payload = 4 * sum(int(np.prod(s)) for s in shapes)
    for records, k in ((whole, 0), (sliced, 100)):
        for r in (r for recs in records for r in recs):
            rec = r.as_record()
            if mode == "tcp":                          # a frame header per slice
                assert rec["bytes_sent"] == payload + len(overlap.ps_slices(shapes, 1500, k,
                                                                             overlap.ps_taper_packets())) * FRAME.size
            elif k:
                assert len(rec["push_done_s"]) == len(rec["layer_arrival_s"]) == len(rec["push_probes"]) == n_layers
                assert rec["push_probes"][2] >= 4      # the hidden layer: 5 slices of <= 100 packets, each probed
    for a, b in zip(finals_w[0], finals_s[0], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    for a, b in zip(finals_s[0], finals_s[1], strict=True):
        np.testing.assert_array_equal(a, b)



def test_plan_merges_consecutive_small_slices_and_nothing_else():
    """PsPlan: the tensors cover the flat parameters once, in model order; consecutive slices merge only
    while the merged tensor fits in the merge size (and the slice size), so the digits MLP's b1, W2, b2
    (1 + 2 + 1 packets) become one tensor of 2 packets, while digits-wide's layers and slices stay apart."""
    epp = 362
    digits = make_workload("digits", 2, 1.0, 0).shapes          # W1 64x64, b1 64, W2 64x10, b2 10
    assert overlap.PsPlan.build(digits, 1500, 128, 4).tensors == ((0, 0, 4096), (1, 4096, 4810))
    assert overlap.PsPlan.build(digits, 1500, 128, 0).tensors == ((0, 0, 4096), (1, 4096, 4160), (2, 4160, 4800),
                                                                   (3, 4800, 4810))
    plan = overlap.PsPlan.build(digits, 1500, 128, 4)
    assert plan.of_layer() == [[0], [1], [1], [1]] and plan.pushed_at() == [[0], [1], [], []]
    wide = make_workload("digits-wide", 2, 1.0, 0).shapes
    for k, m in ((0, 0), (128, 0), (128, 4), (1, 4), (3, 100), (10_000, 4)):
        plan = overlap.PsPlan.build(wide, 1500, k, m)
        t = plan.tensors
        assert t[0][1] == 0 and t[-1][2] == plan.offsets[-1]                      # every element once, in order
        assert all(b0 == a1 for (_f, _a, b0), (_g, a1, _b) in zip(t, t[1:], strict=False))
        assert all(plan.offsets[f] <= a < plan.offsets[f + 1] for f, a, _b in t)  # first layer = where it starts
        merged = [s for s in t if plan.offsets[s[0] + 1] < s[2]]                  # tensors spanning layers
        limit = min(m, k) if k else m
        assert all(-(-(b - a) // epp) <= limit for _f, a, b in merged)
        if m == 0 or (k in (128, 10_000) and m == 4):   # no two such slices of digits-wide fit in 4 packets
            assert [(f, a - plan.offsets[f], b - plan.offsets[f]) for f, a, b in t] == \
                overlap.ps_slices(wide, 1500, k, overlap.ps_taper_packets())


def test_plan_binds_parameters_into_one_buffer_and_updates_merged_tensors_per_layer():
    wl = make_workload("digits", 2, 1.0, 0)
    plan = overlap.PsPlan.build(wl.shapes, 1500, 128, 4)
    flat, params = plan.bind(wl.initial_params())
    for p, q in zip(params, wl.initial_params(), strict=True):
        np.testing.assert_array_equal(p, q)
        assert np.shares_memory(p, flat)                       # a tensor received into flat updates the layers
    flat[4096:4810] = 1.0
    assert all((p == 1.0).all() for p in params[1:])
    grads = [np.full(s, i + 1, np.float32) for i, s in enumerate(wl.shapes)]
    upd_merged = plan.updater(wl.server_update(2))
    per_layer = wl.server_update(2)
    g = plan.flatten(grads)
    got = np.concatenate([upd_merged(s, g[a:b]) for s, (_f, a, b) in enumerate(plan.tensors)])
    want = np.concatenate([np.asarray(per_layer(i, gi), np.float32).reshape(-1) for i, gi in enumerate(grads)])
    np.testing.assert_array_equal(got, want)


def test_no_merging_from_the_environment(monkeypatch):
    monkeypatch.setenv("DLCP_PS_MERGE_PACKETS", "0")
    assert len(overlap.PsPlan.build(make_workload("digits", 2, 1.0, 0).shapes, 1500).tensors) == 4


@pytest.mark.parametrize("mode", ["dlcp", "tcp"])
def test_merged_ps_trains_exactly_as_per_layer_and_moves_fewer_tensors(mode):
    """The digits MLP over real sockets with its small layers merged (2 tensors each way) and without
    (4): the same parameters come back; a DLCP worker sends 14 packets per iteration instead of 16 (the
    merged tensor's partial packets combine), TCP 2 frame headers instead of 4; each layer keeps its
    record fields."""
    merged, finals_m, _ = _run_ps(mode, overlapped=True, merge_packets=4, workload="digits")
    apart, finals_a, _ = _run_ps(mode, overlapped=True, merge_packets=0, workload="digits")
    payload = 4 * 4810
    for records, tensors, packets in ((merged, 2, 14), (apart, 4, 16)):
        for r in (r for recs in records for r in recs):
            rec = r.as_record()
            if mode == "tcp":
                assert rec["bytes_sent"] == payload + tensors * FRAME.size
            else:
                assert rec["packets_sent"] == packets
                assert len(rec["push_done_s"]) == len(rec["layer_arrival_s"]) == len(rec["push_probes"]) == 4
                assert all(t is not None for t in rec["push_done_s"])
    for a, b in zip(finals_m[0], finals_a[0], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    for a, b in zip(finals_m[0], finals_m[1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_waiting_on_a_received_tensor_whose_delivery_failed_raises():
    """A tensor staged before anyone expected it completes (done); binding it to an array of the
    wrong size then fails its delivery, so the handle is done *and* failed. Waiting on it must raise
    the failure, not count the handle as finished (real endpoints on loopback)."""
    from host_agent.errors import TransportError
    from host_agent.packetizer import packetize

    rx = Endpoint(EndpointConfig(job_id=3, bind=("127.0.0.1", 0)))
    tx = Endpoint(EndpointConfig(job_id=3, worker_id=1, bind=("127.0.0.1", 0)))
    try:
        grad = np.arange(600, dtype=np.float32)
        sent = tx.send(packetize(grad, tensor_id=5, policy=TagPolicy(), job_id=3, worker_id=1), rx.address)
        for _ in range(1000):
            if sent.done:
                break
            rx.poll(0.005)
            tx.poll(0.005)
        assert sent.done
        h = rx.expect(1, 0, 5, np.zeros(10, np.float32))        # 10 elements, 600 arrived
        assert h.done and h.failed
        with pytest.raises(TransportError, match="tensor 5 from worker 1 failed"):
            overlap.EventLoop(rx, 10.0).wait_handles([h], "the staged tensor")
    finally:
        tx.close()
        rx.close()
