"""Ring all-reduce schedule benchmark: a step waits for its receive only (``host_agent/ring.py``)
against the first version's lockstep (each step also waits for its own send's DONE), over loopback
paths with an emulated one-way delay.

Why: in Mininet's ``ecmp-collision`` the ring's 24 dependent steps per iteration (4 ranks, 4
buckets) each carry only 19-28 packets, so a step's cost is round trips, not bytes; the ring
neighbours' round trip there was 50-130 ms at the machine's load (issue 10, H10b). Each rank
sits behind a relay that delays every datagram by ``--delay-ms`` in each direction (UDP on real
sockets, no ``tc``: the machine is shared). Endpoints grant at ``--link-mbps`` as in the studies.
Each round: a warm-up all-reduce (first contact, first grants), then all ranks start the measured
one together. The figure is the new schedule's all-reduce time over the lockstep's, both measured
in this run, rounds interleaved. With ``--buckets B --in-flight N`` each all-reduce is B buckets
and a third variant reduces N of them at once (``overlap.allreduce_worker_udp``'s slots: bucket k
in slot k mod N), reported against one at a time.

    .venv/bin/python benchmarks/bench_ring_schedule.py [--delay-ms 25] [--rounds 3] [--quick]
        [--buckets 4 --in-flight 2]   # also: buckets in flight against one at a time
"""

from __future__ import annotations

import argparse
import heapq
import multiprocessing as mp
import queue
import select
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmode import add_quick_flag, announce  # noqa: E402

from host_agent.collectives import CommStats  # noqa: E402
from host_agent.endpoint import Endpoint, EndpointConfig  # noqa: E402
from host_agent.policy import TagPolicy  # noqa: E402
from host_agent.ring import finish_sends, ring_task  # noqa: E402

CTX = mp.get_context("spawn")


class DelayRelay(threading.Thread):
    """Forwards datagrams client -> target and back, each ``delay`` seconds after it arrived."""

    def __init__(self, target: tuple[str, int], delay: float) -> None:
        super().__init__(daemon=True)
        self.target, self.delay = target, delay
        self.listen = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.listen.bind(("127.0.0.1", 0))
        self.listen.setblocking(False)
        self.up: dict[tuple[str, int], socket.socket] = {}
        self.client_of: dict[socket.socket, tuple[str, int]] = {}
        self.due: list = []           # (time, seq, socket, datagram, destination)
        self.seq = 0
        self.stopped = False

    @property
    def address(self) -> tuple[str, int]:
        return self.listen.getsockname()

    def _route(self, s: socket.socket, addr: tuple[str, int]) -> tuple[socket.socket, tuple[str, int]]:
        if s is not self.listen:
            return self.listen, self.client_of[s]
        up = self.up.get(addr)
        if up is None:
            up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            up.bind(("127.0.0.1", 0))
            up.setblocking(False)
            self.up[addr], self.client_of[up] = up, addr
        return up, self.target

    def run(self) -> None:
        while not self.stopped:
            now = time.monotonic()
            while self.due and self.due[0][0] <= now:
                _t, _n, out, data, dest = heapq.heappop(self.due)
                out.sendto(data, dest)
            wait = min(0.002, max(0.0, self.due[0][0] - now)) if self.due else 0.002
            for s in select.select([self.listen, *self.up.values()], [], [], wait)[0]:
                while True:
                    try:
                        data, addr = s.recvfrom(65536)
                    except BlockingIOError:
                        break
                    out, dest = self._route(s, addr)
                    self.seq += 1
                    heapq.heappush(self.due, (time.monotonic() + self.delay, self.seq, out, data, dest))


def _drive(ep: Endpoint, tasks: list) -> None:
    """Turn the endpoint until every task (a generator yielding handle lists) is finished."""
    waiting: list = [None] * len(tasks)
    live = list(range(len(tasks)))
    end = time.monotonic() + 60
    while live:
        for i in list(live):
            while waiting[i] is None or all(h.done for h in waiting[i]):
                try:
                    waiting[i] = next(tasks[i])
                except StopIteration:
                    live.remove(i)
                    break
        if live:
            if time.monotonic() > end:
                raise TimeoutError("ring all-reduce did not finish in 60 s")
            ep.poll(0.001)


def _allreduce(ep: Endpoint, rank: int, ring: list, data: list[np.ndarray], iteration: int, lockstep: bool,
               in_flight: int) -> float:
    """All-reduce each bucket of ``data``, ``in_flight`` at once (bucket k in slot k mod in_flight)."""
    stats, sends = CommStats(), []

    def slot(first: int):
        for k in range(first, len(data), in_flight):
            yield from ring_task(ep, rank, ring, data[k], iteration, TagPolicy(), stats, sends, wait_for_acks=lockstep,
                                 tensor_id=lambda step, k=k: 100 * iteration + 10 * k + step)
    t0 = time.perf_counter()
    _drive(ep, [slot(i) for i in range(min(in_flight, len(data)))])
    reduced = time.perf_counter() - t0
    ep.run(list(sends), timeout=60)
    finish_sends(sends, stats)
    return reduced


def _rank(rank: int, bind: tuple[str, int], ring: list, elements: int, link_rate: float, lockstep: bool,
          q_out, go, buckets: int = 1, in_flight: int = 1) -> None:
    ep = Endpoint(EndpointConfig(job_id=9, worker_id=rank, bind=bind, link_rate=link_rate))
    rng = np.random.default_rng(rank)
    data = [rng.standard_normal(elements).astype(np.float32) for _ in range(buckets)]
    # warm-up (first contact, first grants), then every rank starts the measured one together
    _allreduce(ep, rank, ring, [d.copy() for d in data], 0, lockstep, in_flight)
    q_out.put(("ready", rank))
    go.wait(60)
    q_out.put(("reduced", _allreduce(ep, rank, ring, data, 1, lockstep, in_flight)))
    ep.close(linger=0.5)


def one_allreduce(ranks: int, elements: int, delay: float, link_rate: float, lockstep: bool, port: int,
                  threads: bool = False, buckets: int = 1, in_flight: int = 1) -> float:
    """Seconds until the slowest rank holds the sum (ranks in processes; ``threads``: quick smoke run)."""
    binds = [("127.0.0.1", port + r) for r in range(ranks)]
    relays = [DelayRelay(b, delay) for b in binds]
    for relay in relays:
        relay.start()
    q_out = queue.Queue() if threads else CTX.Queue()
    go = threading.Event() if threads else CTX.Event()
    ring = [relay.address for relay in relays]
    make = threading.Thread if threads else CTX.Process
    procs = [make(target=_rank, args=(r, binds[r], ring, elements, link_rate, lockstep, q_out, go, buckets, in_flight),
                  daemon=True) for r in range(ranks)]
    try:
        for p in procs:
            p.start()
        for _ in procs:
            q_out.get(timeout=120)
        go.set()
        return max(q_out.get(timeout=120)[1] for _ in procs)
    finally:
        for p in procs:
            p.join(10)
        for relay in relays:
            relay.stopped = True
        for p in (p for p in procs if p.is_alive() and not threads):
            p.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delay-ms", type=float, default=25.0, help="one-way delay of every path")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--elements", type=int, default=32_768,
                    help="per all-reduce (32,768 = one of ecmp-collision's 4 ring buckets)")
    ap.add_argument("--link-mbps", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--port", type=int, default=47700)
    ap.add_argument("--buckets", type=int, default=1, help="buckets per all-reduce, each of --elements")
    ap.add_argument("--in-flight", type=int, default=1,
                    help="> 1: also measure the receive-only schedule with this many buckets at once")
    add_quick_flag(ap)
    args = ap.parse_args()
    if args.quick:
        args.ranks, args.elements, args.rounds, args.delay_ms, args.buckets, args.in_flight = 3, 3000, 1, 5.0, 2, 2
    if args.buckets < 1 or not 1 <= args.in_flight <= args.buckets:
        ap.error(f"--buckets {args.buckets} --in-flight {args.in_flight}: need 1 <= in-flight <= buckets")
    announce(args.quick)
    link_rate = args.link_mbps * 1e6 / 8
    variants = [("lockstep", True, 1), ("receive-only", False, 1)]
    if args.in_flight > 1:
        variants.append((f"receive-only, {args.in_flight} in flight", False, args.in_flight))
    times: dict[str, list[float]] = {name: [] for name, _l, _n in variants}
    for _ in range(args.rounds):
        for name, lockstep, in_flight in variants:
            times[name].append(one_allreduce(args.ranks, args.elements, args.delay_ms / 1e3, link_rate, lockstep,
                                             args.port, threads=args.quick, buckets=args.buckets, in_flight=in_flight))
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"ring all-reduce of {args.buckets} x {args.elements} float32 over {args.ranks} ranks, "
          f"{args.delay_ms:g} ms one-way, grants at {args.link_mbps:g} Mbit/s, {args.rounds} rounds (median):")
    for name, _l, _n in variants:
        print(f"  {name + ':':36s}{med[name] * 1e3:8.1f} ms")
    print(f"  ratio new / lockstep: {med['receive-only'] / med['lockstep']:.2f}")
    if args.in_flight > 1:
        print(f"  ratio {args.in_flight} in flight / 1 (receive-only): {med[variants[2][0]] / med['receive-only']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
