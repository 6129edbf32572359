"""PS push/pull and ring all-reduce among 4 real processes over loopback UDP, with and without loss."""

from __future__ import annotations

import multiprocessing as mp
import threading

import numpy as np
import pytest

from host_agent.collectives import PSServer, PSWorker, ring_allreduce
from host_agent.endpoint import Endpoint, EndpointConfig
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy
from host_agent.relay import LossyRelay, drop_noncritical, drop_offsets

N = 4
SHAPES = [(3000,), (40, 50), (7,), (20000,)]
CTX = mp.get_context("fork")


def worker_grads(rank: int, it: int) -> list[np.ndarray]:
    rng = np.random.default_rng(1000 * rank + it)
    # integer-valued floats: every summation order gives the exact same float32 sum
    return [rng.integers(-1000, 1000, s).astype(np.float32) for s in SHAPES]


def _ps_worker(rank, q_addr, q_in, q_out, iters, loss):
    ep = Endpoint(EndpointConfig(job_id=3, worker_id=rank))
    q_addr.put((rank, ep.address))
    server = q_in.get()
    params = [np.zeros(s, np.float32) for s in SHAPES]
    w = PSWorker(ep, server, params, TagPolicy(loss_bound=loss), timeout=30)
    results = []
    for it in range(iters):
        st = w.step(it, worker_grads(rank, it))
        results.append(([p.copy() for p in params], st.as_record()))
    ep.close(linger=0.5)
    q_out.put((rank, results))


def _ps_server(q_addr, q_out, iters, loss):
    ep = Endpoint(EndpointConfig(job_id=3, worker_id=0xFFFF))
    q_addr.put(("server", ep.address))
    srv = PSServer(ep, SHAPES, N, TagPolicy(loss_bound=loss), timeout=30)
    sums = []
    for it in range(iters):
        srv.step(it)
        sums.append([s.copy() for s in srv.last_sum])
    ep.close(linger=0.5)
    q_out.put(("server", sums))


def run_ps(iters: int, loss_rate: float, bound: float):
    q_addr, q_out = CTX.Queue(), CTX.Queue()
    q_in = [CTX.Queue() for _ in range(N)]
    procs = [CTX.Process(target=_ps_worker, args=(r, q_addr, q_in[r], q_out, iters, bound)) for r in range(N)]
    procs.append(CTX.Process(target=_ps_server, args=(q_addr, q_out, iters, bound)))
    for p in procs:
        p.start()
    addrs = dict(q_addr.get(timeout=20) for _ in range(N + 1))
    relays = []
    try:
        for r in range(N):
            target = addrs["server"]
            if loss_rate:
                relay = LossyRelay(target, drop_noncritical(loss_rate, seed=r),
                                   reverse_rule=drop_noncritical(loss_rate, seed=100 + r)).__enter__()
                relays.append(relay)
                target = relay.address
            q_in[r].put(target)
        results = dict(q_out.get(timeout=60) for _ in range(N + 1))
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
        for relay in relays:
            relay.stop()
    assert all(p.exitcode == 0 for p in procs)
    return results, relays


def test_ps_lossless_equals_numpy_sum():
    results, _ = run_ps(iters=2, loss_rate=0.0, bound=0.1)
    for it in range(2):
        exact = [sum(worker_grads(r, it)[t] for r in range(N)) for t in range(len(SHAPES))]
        for t in range(len(SHAPES)):
            assert np.array_equal(results["server"][it][t], exact[t])
            for r in range(N):
                params, rec = results[r][it]
                assert np.array_equal(params[t], exact[t])
        assert results[0][it][1]["retransmissions"] == 0
        assert results[0][it][1]["spurious_retransmissions"] == 0


def test_ps_with_loss_stays_within_bound():
    bound = 0.1
    results, relays = run_ps(iters=1, loss_rate=0.08, bound=bound)
    assert sum(r.dropped["DATA_noncritical"] for r in relays) > 0
    exact = [sum(worker_grads(r, 0)[t] for r in range(N)) for t in range(len(SHAPES))]
    total = sum(e.size for e in exact)
    wrong_sum = sum(int((results["server"][0][t] != exact[t]).sum()) for t in range(len(SHAPES)))
    # each worker loses at most p of its elements (rounded up to whole packets per tensor)
    assert wrong_sum <= N * (bound * total + 362 * len(SHAPES))
    # parameters lost on the way back are reported by the workers (kept at their previous value)
    assert sum(sum(results[r][0][1]["loss_by_class"].values()) for r in range(N)) > 0
    for r in range(N):
        params, rec = results[r][0]
        stale = sum(int((params[t] != results["server"][0][t]).sum()) for t in range(len(SHAPES)))
        assert stale <= bound * total + 362 * len(SHAPES)
        for t in range(len(SHAPES)):                 # a stale element kept its previous value (0)
            diff = params[t] != results["server"][0][t]
            assert np.all(params[t][diff] == 0)


def _ring_rank(rank, q_addr, q_in, q_out, loss):
    ep = Endpoint(EndpointConfig(job_id=5, worker_id=rank))
    q_addr.put((rank, ep.address))
    addrs = q_in.get()
    data = np.concatenate([g.reshape(-1) for g in worker_grads(rank, 0)])
    st = ring_allreduce(ep, rank, addrs, data, iteration=0, policy=TagPolicy(loss_bound=loss), timeout=30)
    ep.close(linger=0.5)
    q_out.put((rank, data, st.as_record()))


def run_ring(loss_rate: float, bound: float):
    q_addr, q_out = CTX.Queue(), CTX.Queue()
    q_in = [CTX.Queue() for _ in range(N)]
    procs = [CTX.Process(target=_ring_rank, args=(r, q_addr, q_in[r], q_out, bound)) for r in range(N)]
    for p in procs:
        p.start()
    addrs = dict(q_addr.get(timeout=20) for _ in range(N))
    relays = []
    try:
        if loss_rate:
            for r in range(N):
                relays.append(LossyRelay(addrs[r], drop_noncritical(loss_rate, seed=r)).__enter__())
            ring = [relays[r].address for r in range(N)]
        else:
            ring = [addrs[r] for r in range(N)]
        for r in range(N):
            q_in[r].put(ring)
        results = {r: (d, rec) for r, d, rec in (q_out.get(timeout=60) for _ in range(N))}
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
        for relay in relays:
            relay.stop()
    assert all(p.exitcode == 0 for p in procs)
    return results, relays


def test_ring_allreduce_lossless_equals_numpy_sum():
    results, _ = run_ring(0.0, 0.1)
    exact = sum(np.concatenate([g.reshape(-1) for g in worker_grads(r, 0)]) for r in range(N))
    for r in range(N):
        assert np.array_equal(results[r][0], exact)
        assert results[r][1]["retransmissions"] == 0


@pytest.mark.parametrize("loss_rate", [0.08])
def test_ring_allreduce_with_loss_stays_within_bound(loss_rate):
    bound = 0.1
    results, relays = run_ring(loss_rate, bound)
    assert sum(r.dropped["DATA_noncritical"] for r in relays) > 0
    exact = sum(np.concatenate([g.reshape(-1) for g in worker_grads(r, 0)]) for r in range(N))
    # all-gather is reliable: every rank holds the same result
    for r in range(1, N):
        assert np.array_equal(results[r][0], results[0][0])
    wrong = int((results[0][0] != exact).sum())
    # documented bound: each of the N-1 reduce-scatter steps loses at most p of a chunk's packets
    chunk = exact.size / N
    assert wrong <= (N - 1) * N * (bound * chunk + 362)
    assert wrong <= (N - 1) * (bound * exact.size + N * 362)


def test_ps_reports_loss_per_layer_class():
    """Zero-filled share per layer class in the server's stats matches the packets the relay dropped."""
    shapes = [(362 * 20,), (362 * 20,)]              # tensor 0 -> class 7, tensor 1 -> class 3
    sep = Endpoint(EndpointConfig(job_id=2, worker_id=0xFFFF))
    wep = Endpoint(EndpointConfig(job_id=2, worker_id=0))
    pol = TagPolicy(critical_share=0.0, loss_bound=0.2)
    grads = [np.ones(s, np.float32) for s in shapes]
    probe = packetize(grads[0], tensor_id=0, policy=pol, position=0, num_layers=2)
    assert probe.layer_class == 7
    dropped = {(0, 362 * i) for i in (1, 5, 9)}       # 3 of tensor 0's 20 packets
    srv = PSServer(sep, shapes, 1, pol, timeout=20)
    stats = {}
    t = threading.Thread(target=lambda: stats.update(s=srv.step(0)))
    try:
        with LossyRelay(sep.address, drop_offsets(dropped)) as relay:
            w = PSWorker(wep, relay.address, [np.zeros(s, np.float32) for s in shapes], pol, timeout=20)
            t.start()
            w.step(0, grads)
            t.join(20)
    finally:
        sep.sock.close()
        wep.sock.close()
    rec = stats["s"].as_record()
    assert rec["loss_by_class"] == {"3": 0.0, "7": 3 / 20}
    assert rec["zero_filled_elements"] == 3 * 362
    assert np.count_nonzero(srv.last_sum[0] == 0) == 3 * 362
