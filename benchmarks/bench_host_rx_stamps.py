"""Benchmark: CPU per received DATA packet of a granting receiver with and without kernel receive timestamps.

Why: a receiver that grants (an endpoint with a link rate) dates each DATA packet by the kernel's receive time
(``SO_TIMESTAMPNS``, read from ``recvmsg``'s ancillary data beside the TOS byte; docs/transport.md, "Admission"),
not by when its loop reads the socket. That costs CPU on every received packet: the kernel builds one more control
message, the loop parses it and unpacks a timespec (instead of one ``time.time()`` in ``count_data``). This
benchmark shows that cost against the same receive path with the timestamps off, in the same run.

What runs: one ``Endpoint`` as the agents configure it (link rate set, ECN read, offload "auto"), real UDP sockets
on 127.0.0.1, one process. Per round a digits-wide-sized layer (442 DATA packets of 362 float32) is expected, its
OPEN is let through (not measured: once per tensor), then its DATA goes in bursts of ``--burst`` packets from a
plain socket, each burst read by ``Endpoint.poll`` (recvmsg_into + ancillary data, count_data with its ACKs every
few packets, assembly into the output) until the handle has them all. Timed: CPU time (user + system) of this
thread inside the ``poll`` calls only (the thread's, not the process's: numpy's BLAS threads spin after
``packetize`` and would be counted). The two arms differ only in the endpoint's socket option and the flag
``_drain`` reads (``_stamps``), which is exactly the endpoint's state when the option is unavailable. Rounds come
in pairs, stamped and unstamped on the same endpoint with the order alternating (ABBA), so drift hits both alike.

Figures: median CPU per packet of each arm; per pair the ratio stamped/unstamped and the difference in
microseconds per packet, each as a median over the pairs with a bootstrap 95 % interval
(mininet_topos.stats.bootstrap). The kernel's own stamping of each skb happens on the sending side of loopback
(outside the timed region); the send side's CPU per packet is printed beside for that reason. The same packets
are also read by ``recvmsg_into`` alone, option on and off, to show how much of the difference is the kernel's
and the call's in a tight loop. ``--differ option`` / ``--differ flag`` split the difference: the arms differ only
in the socket option (the endpoint reads no stamp) or only in the endpoint's flag (no stamp arrives). ``--aa``: a
control with both arms unstamped, which shows the pairing itself biases nothing (its ratio's interval holds 1).

    .venv/bin/python benchmarks/bench_host_rx_stamps.py [--pairs 1000] [--burst 64] [--aa] [--differ both] [--quick]
"""

from __future__ import annotations

import argparse
import select
import socket
import sys
import time

import numpy as np
from benchmode import add_quick_flag, announce

from host_agent.endpoint import SO_TIMESTAMPNS, TIMESPEC, Endpoint, EndpointConfig
from host_agent.outgoing import OutgoingTensor
from host_agent.packetizer import PacketizedTensor, packetize
from host_agent.policy import TagPolicy
from mininet_topos.stats import STATS, bootstrap

ELEMENTS = 160_000          # digits-wide's hidden layer: 442 packets of 362 float32
LINK_RATE = 12.5e6          # bytes/s (100 Mbit/s): any link rate makes the endpoint grant and stamp
ROUND_TIMEOUT_S = 5.0       # wall time a round may take before the benchmark gives up (never hangs)
SOCKET_TIMEOUT_S = 2.0      # the sender's blocking sendto


def set_stamps(ep: Endpoint, on: bool, differ: str = "both") -> None:
    """Kernel receive timestamps on or off on the receiving endpoint: the socket option and the flag ``_drain``
    reads (``differ`` "both"), or only the option (the endpoint reads no stamp: no room for it in its ancillary
    buffer, ``time.time()`` as without stamps) or only the flag (no stamp arrives to parse)."""
    ep.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, int(on and differ != "flag"))
    ep._stamps = on and differ != "option"


def discard(s: socket.socket) -> int:
    """Read and drop what the receiver answered (OPEN_ACK, GRANT, ACKs); never blocks."""
    n = 0
    while select.select([s], [], [], 0)[0]:
        s.recv(65536)
        n += 1
    return n


def one_round(ep: Endpoint, snd: socket.socket, pt: PacketizedTensor, burst: int) -> tuple[float, float, int]:
    """Receive one tensor: CPU s of the receiver's poll calls, CPU s of the sender's sendto calls, ACKs received."""
    dest = ep.address
    opening = OutgoingTensor(pt, dest, time.monotonic(), 0.02)     # seals the DATA with its transfer token
    datagrams = [bytes(pt.packet(k)) for k in range(pt.n_packets)]
    out = np.empty(pt.n_elements, np.float32)
    h = ep.expect(pt.worker_id, pt.iteration, pt.tensor_id, out)
    deadline = time.monotonic() + ROUND_TIMEOUT_S

    def poll_until(target: int) -> None:
        """Turn the receiver's loop until ``target`` DATA packets are in (0: until the OPEN is)."""
        while not (h.done or (h.assembly is not None and h.assembly.n_received >= target)):
            if time.monotonic() > deadline:
                got = h.assembly.n_received if h.assembly is not None else 0
                raise RuntimeError(f"round of tensor {pt.tensor_id} (iteration {pt.iteration}): {got} of "
                                   f"{pt.n_packets} packets received after {ROUND_TIMEOUT_S:.0f} s "
                                   f"(drops: {dict(ep.drops)})")
            ep.poll(0.05)

    snd.sendto(opening.open_message(), dest)
    poll_until(0)
    rx = tx = 0.0
    for first in range(0, len(datagrams), burst):
        part = datagrams[first:first + burst]
        c0 = time.thread_time()
        for d in part:
            snd.sendto(d, dest)
        c1 = time.thread_time()
        poll_until(first + len(part))
        rx += time.thread_time() - c1
        tx += c1 - c0
    poll_until(pt.n_packets)
    if h.failed or h.stats is None or h.stats.received != pt.n_packets:
        raise RuntimeError(f"tensor {pt.tensor_id} (iteration {pt.iteration}) not received whole: {h.stats}")
    return rx, tx, discard(snd)


def recvmsg_only(ep: Endpoint, snd: socket.socket, datagrams: list[bytes], burst: int, on: bool,
                 differ: str = "both") -> float:
    """CPU s of ``recvmsg_into`` alone on the endpoint's socket for ``datagrams`` (sent in bursts), with its
    ancillary buffer, the option on or off: the kernel's part of the cost and the extra ancillary item."""
    set_stamps(ep, on, differ)
    space = 2 * socket.CMSG_SPACE(4) + socket.CMSG_SPACE(TIMESPEC.size)
    sock, mv, dest = ep.sock, ep._mv, ep.address
    used = 0.0
    for first in range(0, len(datagrams), burst):
        part = datagrams[first:first + burst]
        for d in part:
            snd.sendto(d, dest)
        if not select.select([sock], [], [], SOCKET_TIMEOUT_S)[0]:
            raise RuntimeError(f"recvmsg floor: nothing to read after {SOCKET_TIMEOUT_S:.0f} s")
        c0 = time.thread_time()
        for _ in part:
            sock.recvmsg_into([mv], space)
        used += time.thread_time() - c0
    return used


def interval(values: list[float], stat: str = "median") -> str:
    return bootstrap({0: values}, STATS[stat]).text(3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=None, help="stamped/unstamped round pairs (default 1000; quick 6)")
    ap.add_argument("--burst", type=int, default=64, help="DATA packets sent per burst, each burst read by poll "
                    "(default 64)")
    ap.add_argument("--aa", action="store_true", help="control: both arms unstamped (the ratio should hold 1)")
    ap.add_argument("--differ", choices=("both", "option", "flag"), default="both",
                    help="what the stamped arm changes: the socket option and the endpoint's flag (default, as "
                    "deployed), only the option (no stamp read), only the flag (no stamp arrives)")
    add_quick_flag(ap)
    args = ap.parse_args()
    announce(args.quick)
    pairs = args.pairs if args.pairs is not None else (6 if args.quick else 1000)
    if pairs < 2 or args.burst < 1:
        ap.error(f"--pairs {pairs} must be >= 2 and --burst {args.burst} >= 1")
    elements = 20_000 if args.quick else ELEMENTS
    g = np.random.default_rng(0).laplace(size=elements).astype(np.float32)

    ep = Endpoint(EndpointConfig(job_id=1, worker_id=0, link_rate=LINK_RATE))
    if not ep._stamps:
        print("skipped (SO_TIMESTAMPNS not available on this socket)")
        ep.sock.close()
        return 0
    snd = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    snd.bind(("127.0.0.1", 0))
    snd.settimeout(SOCKET_TIMEOUT_S)
    # arm "test" stamped (with --aa unstamped too: a control, its ratio should hold 1), arm "base" unstamped
    stamps = {"test": not args.aa, "base": False}
    cpu: dict[str, list[float]] = {"test": [], "base": []}
    send: dict[str, list[float]] = {"test": [], "base": []}
    answers = {"test": 0, "base": 0}      # ACKs, GRANTs, ... the receiver sent back (must match: same work)
    ratio: list[float] = []
    diff: list[float] = []
    floor: list[float] = []
    n = 0
    try:
        for i in range(pairs):
            per: dict[str, float] = {}
            for k, arm in enumerate(("test", "base") if i % 2 == 0 else ("base", "test")):
                it = 2 * i + k          # iterations only grow: a receiver refuses an older one
                pt = packetize(g, tensor_id=3, policy=TagPolicy(), position=1, num_layers=4, job_id=1,
                               worker_id=1, iteration=it)
                set_stamps(ep, stamps[arm], args.differ)
                rx, tx, a = one_round(ep, snd, pt, args.burst)
                n = pt.n_packets
                answers[arm] += a
                per[arm] = rx
                cpu[arm].append(rx / n * 1e6)
                send[arm].append(tx / n * 1e6)
            ratio.append(per["test"] / per["base"])
            diff.append((per["test"] - per["base"]) / n * 1e6)
            # the same packets read by recvmsg_into alone (no endpoint): the kernel's and the call's share
            datagrams = [bytes(pt.packet(k)) for k in range(n)]
            bare = {arm: 0.0 for arm in stamps}
            for arm in (("base", "test") if i % 2 == 0 else ("test", "base")):
                bare[arm] = recvmsg_only(ep, snd, datagrams, args.burst, stamps[arm], args.differ)
            floor.append((bare["test"] - bare["base"]) / n * 1e6)
            discard(snd)
    except (RuntimeError, OSError) as exc:
        print(f"bench_host_rx_stamps: {exc}", file=sys.stderr)
        return 1
    finally:
        snd.close()
        ep.sock.close()
    test = ("unstamped (A/A control)" if args.aa else
            {"both": "stamped (SO_TIMESTAMPNS)", "option": "socket option only", "flag": "flag only"}[args.differ])
    if args.differ != "both":
        print(f"diagnostic: the arms differ only in the {'socket option' if args.differ == 'option' else 'flag'}")
    print(f"{pairs} pairs of rounds, {n} DATA packets each, bursts of {args.burst}; answers to the sender "
          f"per tensor: baseline {answers['base'] / pairs:.1f}, {'control' if args.aa else 'stamped'} "
          f"{answers['test'] / pairs:.1f}")
    for arm, name in (("base", "unstamped (baseline)"), ("test", test)):
        print(f"receive, {name:>24}: {interval(cpu[arm])} us CPU per packet (median [95 % CI]); "
              f"send side {np.median(send[arm]):.2f} us")
    label = "A/A control" if args.aa else "stamped / unstamped"
    print(f"ratio {label}: {interval(ratio)}x (median over pairs), mean {interval(ratio, 'mean')}x")
    label = "A/A control" if args.aa else "stamped - unstamped"
    print(f"difference {label}: {interval(diff)} us CPU per packet (median over pairs), "
          f"mean {interval(diff, 'mean')} us")
    print(f"  of which recvmsg_into alone (kernel + the call's ancillary item): {interval(floor)} us per packet")
    return 0


if __name__ == "__main__":
    sys.exit(main())
