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
in this run, rounds interleaved.

    .venv/bin/python benchmarks/bench_ring_schedule.py [--delay-ms 25] [--rounds 3] [--quick]
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


def _allreduce(ep: Endpoint, rank: int, ring: list, data: np.ndarray, iteration: int, lockstep: bool) -> float:
    stats, sends = CommStats(), []
    t0 = time.perf_counter()
    for handles in ring_task(ep, rank, ring, data, iteration, TagPolicy(), stats, sends, wait_for_acks=lockstep,
                             tensor_id=lambda step: 100 * iteration + step):
        ep.run(handles, timeout=60)
    reduced = time.perf_counter() - t0
    ep.run(list(sends), timeout=60)
    finish_sends(sends, stats)
    return reduced


def _rank(rank: int, bind: tuple[str, int], ring: list, elements: int, link_rate: float, lockstep: bool,
          q_out, go) -> None:
    ep = Endpoint(EndpointConfig(job_id=9, worker_id=rank, bind=bind, link_rate=link_rate))
    data = np.random.default_rng(rank).standard_normal(elements).astype(np.float32)
    # warm-up (first contact, first grants), then every rank starts the measured one together
    _allreduce(ep, rank, ring, data.copy(), 0, lockstep)
    q_out.put(("ready", rank))
    go.wait(60)
    q_out.put(("reduced", _allreduce(ep, rank, ring, data, 1, lockstep)))
    ep.close(linger=0.5)


def one_allreduce(ranks: int, elements: int, delay: float, link_rate: float, lockstep: bool, port: int,
                  threads: bool = False) -> float:
    """Seconds until the slowest rank holds the sum (ranks in processes; ``threads``: quick smoke run)."""
    binds = [("127.0.0.1", port + r) for r in range(ranks)]
    relays = [DelayRelay(b, delay) for b in binds]
    for relay in relays:
        relay.start()
    q_out = queue.Queue() if threads else CTX.Queue()
    go = threading.Event() if threads else CTX.Event()
    ring = [relay.address for relay in relays]
    make = threading.Thread if threads else CTX.Process
    procs = [make(target=_rank, args=(r, binds[r], ring, elements, link_rate, lockstep, q_out, go), daemon=True)
             for r in range(ranks)]
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
    add_quick_flag(ap)
    args = ap.parse_args()
    if args.quick:
        args.ranks, args.elements, args.rounds, args.delay_ms = 3, 3000, 1, 5.0
    announce(args.quick)
    link_rate = args.link_mbps * 1e6 / 8
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.rounds):
        for lockstep in (True, False):
            times[lockstep].append(one_allreduce(args.ranks, args.elements, args.delay_ms / 1e3, link_rate,
                                                 lockstep, args.port, threads=args.quick))
    new, old = statistics.median(times[False]), statistics.median(times[True])
    print(f"ring all-reduce of {args.elements} float32 over {args.ranks} ranks, {args.delay_ms:g} ms one-way, "
          f"grants at {args.link_mbps:g} Mbit/s, {args.rounds} rounds (median):")
    print(f"  lockstep (waits for its own DONE): {old * 1e3:8.1f} ms")
    print(f"  receive-only steps (ring.py):      {new * 1e3:8.1f} ms")
    print(f"  ratio new / lockstep: {new / old:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
