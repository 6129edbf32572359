"""Benchmark: CPU per DATA packet of the agent's send and receive paths, against a bare-socket floor.

The per-packet Python cost of the DLCP host agent, in the shape the Mininet runs have it: a sender
paced by a receiver's grant (one wake-up per ``pace_packets`` packets: 2 by default, 1 before),
and a receiver that grants and acknowledges every few packets. Real sockets on 127.0.0.1, one process, CPU time (user + system)
of this process only.

- send: ``Endpoint.send`` of a digits-wide-sized layer (442 packets) to a UDP sink, the grant at
  ``--mbps``, the loop turned by ``Endpoint.poll`` as the agents turn it, once per pace of
  ``--pace`` (packets per paced wake-up, the paces alternating layer by layer so machine noise hits
  each alike); floor: a bare loop that sleeps (select) until each packet's pacing time and
  ``sendto``s the same datagrams (one wake-up per packet).
- receive: the same packets handed to a granting ``Endpoint`` (``_datagram``, after the OPEN) as
  its socket loop hands them over; its ACKs, GRANTs and DONE go to a real socket; floor: header
  unpack + payload copy into the destination per packet.

Figure: microseconds of CPU per packet for each and the ratio to its floor.

    .venv/bin/python benchmarks/bench_host_packet_path.py [--mbps 20] [--tensors 6] [--pace 1,2] [--quick]
"""

from __future__ import annotations

import argparse
import select
import socket
import time

import numpy as np
from benchmode import add_quick_flag, announce

from host_agent import protocol as P
from host_agent.endpoint import Endpoint, EndpointConfig
from host_agent.outgoing import OutgoingTensor
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy

LAYER_ELEMENTS = 160_000          # digits-wide's hidden layer: 442 packets of 362 float32


def cpu() -> float:
    return time.process_time()


def sink() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("127.0.0.1", 0))
    s.setblocking(False)
    return s


def drain(s: socket.socket) -> None:
    try:
        while True:
            s.recv(65536)
    except BlockingIOError:
        pass


def layer(seed: int, iteration: int = 0, worker: int = 1):
    g = np.random.default_rng(seed).laplace(size=LAYER_ELEMENTS).astype(np.float32)
    return packetize(g, tensor_id=3, policy=TagPolicy(), position=1, num_layers=4, worker_id=worker,
                     iteration=iteration)


def send_path(mbps: float, tensors: int, paces: list[int]) -> tuple[dict[int, float], float, int]:
    """CPU s of the endpoint per pace (packets per paced wake-up) and of the bare paced loop, and
    packets sent by each (the same for every pace: each sends ``tensors`` layers)."""
    rate = mbps * 1e6 / 8
    dst = sink()
    ep = Endpoint(EndpointConfig(worker_id=1, link_rate=rate, offload="off"))
    dest = dst.getsockname()
    ep.ready_peers.add(dest)              # first contact done (no OPEN_ACK round trip here)
    ep.grants.grant(dest, rate)
    packets = 0
    used = dict.fromkeys(paces, 0.0)
    for t in range(tensors):
        pt = layer(t, iteration=t)
        for pace in paces:
            ep.grants.pace_packets = pace
            c0 = cpu()
            h = ep.send(pt, dest)
            while h.tx.pos < h.tx.queue.size:
                ep.poll(0.05)
            used[pace] += cpu() - c0
            drain(dst)
            ep.outgoing.clear()
            ep._active.clear()
        packets += pt.n_packets
    ep.sock.close()
    # the floor: the same datagrams, each at its pacing time, from a bare socket
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    bare = 0.0
    for t in range(tensors):
        pt = layer(t, iteration=t)
        c0 = cpu()
        due = time.monotonic()
        for i in range(pt.n_packets):
            if (left := due - time.monotonic()) > 0:
                select.select([], [], [], left)
            s.sendto(pt.packet(i), dest)
            due += int(pt.lengths[i]) / rate
        bare += cpu() - c0
        drain(dst)
    s.close()
    dst.close()
    return used, bare, packets


def receive_path(tensors: int) -> tuple[float, float, int]:
    """CPU s of the granting endpoint's receive path and of the bare floor, and packets handled."""
    peer = sink()
    addr = peer.getsockname()
    ep = Endpoint(EndpointConfig(worker_id=0, link_rate=2.5e6, offload="off"))
    packets = 0
    used = 0.0
    for t in range(tensors):
        pt = layer(t, iteration=t)
        tx = OutgoingTensor(pt, ep.address, time.monotonic(), 0.02)
        out = np.empty(LAYER_ELEMENTS, np.float32)
        h = ep.expect(1, t, pt.tensor_id, out)
        datagrams = [bytes(pt.packet(i)) for i in range(pt.n_packets)]
        c0 = cpu()
        ep._datagram(memoryview(tx.open_message()), False, addr)
        for d in datagrams:
            ep._datagram(memoryview(d), False, addr)
        used += cpu() - c0
        assert h.done and np.array_equal(out, pt.records["payload"].view(np.float32).reshape(-1)[:LAYER_ELEMENTS]
                                         if pt.full_packets == pt.n_packets else out)
        packets += pt.n_packets
        drain(peer)
    ep.sock.close()
    bare = 0.0
    for t in range(tensors):
        pt = layer(t, iteration=t)
        out = np.empty(LAYER_ELEMENTS, np.float32)
        mv = memoryview(out.view(np.uint8))
        datagrams = [bytes(pt.packet(i)) for i in range(pt.n_packets)]
        c0 = cpu()
        for d in datagrams:
            off = P.HEADER_STRUCT.unpack_from(d)[9] * 4
            mv[off:off + len(d) - P.DLCP_HEADER_LEN] = memoryview(d)[P.DLCP_HEADER_LEN:]
        bare += cpu() - c0
    peer.close()
    return used, bare, packets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mbps", type=float, default=20.0, help="grant (pacing rate) of the send path")
    ap.add_argument("--tensors", type=int, default=None, help="442-packet layers per path (default 6)")
    ap.add_argument("--pace", default="1,2", help="packets per paced wake-up of the send path, comma-separated "
                    "(default 1,2: before and since pacing in pairs; the agents use ratecontrol.PACE_PACKETS)")
    add_quick_flag(ap)
    args = ap.parse_args()
    announce(args.quick)
    tensors = args.tensors or (1 if args.quick else 6)
    paces = [int(x) for x in args.pace.split(",")]
    if any(k < 1 for k in paces):
        ap.error(f"--pace {args.pace}: each pace must be >= 1 packet")
    used, bare, n = send_path(args.mbps, tensors, paces)
    for pace in paces:
        print(f"send, paced at {args.mbps:g} Mbit/s, {pace} per wake-up: {used[pace] / n * 1e6:6.1f} us CPU per "
              f"packet (bare paced sendto loop {bare / n * 1e6:5.1f} us; ratio {used[pace] / bare:.2f}x; {n} packets)")
    if len(paces) > 1:
        print(f"send, pace {paces[-1]} / pace {paces[0]}: {used[paces[-1]] / used[paces[0]]:.2f}x CPU per packet")
    used, bare, n = receive_path(tensors)
    print(f"receive, granting:        {used / n * 1e6:6.1f} us CPU per packet "
          f"(bare unpack + copy {bare / n * 1e6:5.1f} us; ratio {used / bare:.2f}x; {n} packets)")


if __name__ == "__main__":
    main()
