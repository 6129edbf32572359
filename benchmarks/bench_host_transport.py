"""Benchmark: DLCP send/receive over loopback vs a plain UDP socket loop moving the same bytes.

Both runs move the same packetized tensor (the same datagrams) from one process to another over
127.0.0.1 in the same run. Plain UDP: a sendto loop and a recv_into loop counting bytes (no
reliability; lost datagrams are simply not counted). Plain UDP + GSO/GRO: the same loop but 44
datagrams per sendmsg (UDP_SEGMENT) and a GRO receiver, the fairer floor since DLCP uses both. DLCP: Endpoint.send -> Endpoint.expect with
the full protocol (OPEN, DATA, PROBE, DONE, bitmap/retransmit if the socket overflowed).
Figure: goodput of each (tensor bytes per second) and the ratio DLCP / plain.

    .venv/bin/python benchmarks/bench_host_transport.py [--elements 4000000] [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import socket
import time

import numpy as np
from benchmode import add_quick_flag, announce

from host_agent.endpoint import Endpoint, EndpointConfig
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy


def plain_receiver(port_q, res_q, total_bytes: int, n_packets: int, gro: bool = False) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)
    if gro:
        s.setsockopt(17, 104, 1)
    s.bind(("127.0.0.1", 0))
    port_q.put(s.getsockname()[1])
    buf = bytearray(65536)
    got = nbytes = 0
    s.settimeout(2.0)
    start = None
    end = time.perf_counter()
    try:
        while nbytes < total_bytes:
            n = s.recv_into(buf)
            if start is None:
                start = time.perf_counter()
            got += 1
            nbytes += n
            end = time.perf_counter()
    except TimeoutError:
        pass
    res_q.put((nbytes, end - (start or end)))


def plain_sender(pt, dest, gso: bool = False) -> float:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, 32, 64 << 20)
    t = time.perf_counter()
    i = 0
    seg = pt.stride.to_bytes(2, "little")
    while i < pt.n_packets:
        k = min(44, pt.full_packets - i) if gso else 1
        if k > 1:
            s.sendmsg([pt.run(i, k)], [(17, 103, seg)], 0, dest)
        else:
            k = 1
            s.sendto(pt.packet(i), dest)
        i += k
    return time.perf_counter() - t


def dlcp_receiver(port_q, res_q, n: int, ecn: bool) -> None:
    ep = Endpoint(EndpointConfig(job_id=1, ecn=ecn))
    port_q.put(ep.address[1])
    out = np.empty(n, np.float32)
    h = ep.expect(2, 1, 1, out)
    ep.run([h], timeout=60)
    t_done = time.perf_counter()
    ep.close(linger=0.3)
    res_q.put((h.stats.received, h.stats.n_packets, t_done))


def run_dlcp(g, ecn: bool) -> tuple[float, int]:
    port_q, res_q = mp.Queue(), mp.Queue()
    p = mp.Process(target=dlcp_receiver, args=(port_q, res_q, g.size, ecn))
    p.start()
    port = port_q.get()
    ep = Endpoint(EndpointConfig(job_id=1, worker_id=2, ecn=ecn))
    pt = packetize(g, tensor_id=1, policy=TagPolicy(), job_id=1, worker_id=2, iteration=1)
    t = time.perf_counter()
    h = ep.send(pt, ("127.0.0.1", port))
    ep.run([h], timeout=60)
    elapsed = time.perf_counter() - t
    res_q.get()
    p.join()
    ep.close()
    return elapsed, h.stats.retransmitted


def run_plain(g, gso: bool = False) -> tuple[float, int, int]:
    pt = packetize(g, tensor_id=1, policy=TagPolicy(), job_id=1, worker_id=2, iteration=1)
    port_q, res_q = mp.Queue(), mp.Queue()
    total = int(pt.lengths.sum())
    p = mp.Process(target=plain_receiver, args=(port_q, res_q, total, pt.n_packets, gso))
    p.start()
    port = port_q.get()
    time.sleep(0.05)
    plain_sender(pt, ("127.0.0.1", port), gso)
    nbytes, elapsed = res_q.get()
    p.join()
    return elapsed, nbytes, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=None, help="float32 elements of the tensor (default 4,000,000)")
    ap.add_argument("--repeat", type=int, default=None, help="runs, best shown (default 3)")
    add_quick_flag(ap)
    args = ap.parse_args()
    announce(args.quick)
    args.elements = args.elements if args.elements is not None else (100_000 if args.quick else 4_000_000)
    args.repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    g = np.random.default_rng(0).standard_normal(args.elements).astype(np.float32)
    mb = g.nbytes / 1e6
    best = {"plain": 1e9, "plain_gso": 1e9, "dlcp": 1e9, "dlcp_noecn": 1e9}
    for _ in range(args.repeat):
        for key, gso in (("plain", False), ("plain_gso", True)):
            el, got, total = run_plain(g, gso)
            best[key] = min(best[key], el / (got / total))   # time per full tensor of received bytes
            print(f"{key}: {got}/{total} bytes in {el * 1e3:.1f} ms")
        el, retx = run_dlcp(g, ecn=True)
        best["dlcp"] = min(best["dlcp"], el)
        print(f"DLCP (ECN read on): {el * 1e3:.1f} ms, {retx} retransmitted")
        el, retx = run_dlcp(g, ecn=False)
        best["dlcp_noecn"] = min(best["dlcp_noecn"], el)
        print(f"DLCP (ECN read off): {el * 1e3:.1f} ms, {retx} retransmitted")
    for k, v in best.items():
        print(f"{k:>11}: {mb / v / 1e3:.3f} GB/s goodput ({mb:.0f} MB tensor)")
    print(f"ratio DLCP/plain (ECN on):  {best['plain'] / best['dlcp']:.2f}x")
    print(f"ratio DLCP/plain (ECN off): {best['plain'] / best['dlcp_noecn']:.2f}x")
    print(f"ratio DLCP/plain+GSO (ECN on):  {best['plain_gso'] / best['dlcp']:.2f}x")


if __name__ == "__main__":
    main()
