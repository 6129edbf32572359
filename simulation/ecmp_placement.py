"""Per-flow ECMP placement of the cross-check's TCP runs, in Mininet and in ns-3 (issue 13, item 7).

Why this exists: in the status-quo runs (TCP cubic) every switch picks a flow's uplink by BMv2's crc16 over the
5-tuple (routing.p4; ns-3's switch model the same, dlcp_switch.h PickMember), so which of ``ecmp-collision``'s
flows share a spine depends on the connections' source ports. Linux picks them at random, so each Mininet TCP run
is another placement; ns-3 hands out a host's ephemeral ports in turn (49153, 49154, ...), so the rebuild was one
fixed placement. DLCP DATA is sprayed per packet and DLCP control hashed per tensor on fixed ports in both, so
the DLCP runs have one placement everywhere. This module

* samples a Mininet study's TCP connections while it runs (``python -m simulation.ecmp_placement sample FILE``:
  every agent's network namespace, /proc/<pid>/net/tcp, read only),
* turns a run's connections into its placement (the ECMP member of every data direction of the scenario's jobs),
* finds, for a placement, how many ephemeral ports each ns-3 host skips (``Topology.tcp_port_skip``) so that the
  rebuild's connections hash the same way, given the order in which the rebuild's jobs open them.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import time
from pathlib import Path

from p4sim.runtime.hashes import v1model_hash

MEMBERS = 2                     # the 2x2 leaf-spine: two uplinks per leaf, member m = spine m in both worlds
MININET_TCP_PORT = 9290         # mininet_topos.agents PS_PORT / ALLREDUCE_PORT: every TCP agent listens there
NS3_TCP_PORT = 5000             # switch_model/sim_net.h kTcpPort
NS3_FIRST_EPHEMERAL = 49153     # ns-3's Ipv4EndPointDemux: the first port it hands out on a node
# ecmp-collision's data directions (Mininet names): the PS (server h5, workers h1, h2) pushes and pulls, the ring
# h3 -> h7 -> h4 -> h8 -> h3 sends to its right neighbour
FLOWS = ("h1>h5", "h2>h5", "h5>h1", "h5>h2", "h3>h7", "h7>h4", "h4>h8", "h8>h3")
RING = ("h3>h7", "h7>h4", "h4>h8", "h8>h3")


def member(src: int, dst: int, sport: int, dport: int, members: int = MEMBERS) -> int:
    """routing.p4's per-flow member: crc16 over (src, dst, protocol 6, sport, dport) mod members."""
    return v1model_hash("crc16", 0, [(src, 32), (dst, 32), (6, 8), (sport, 16), (dport, 16)], members)


def ip_int(text: str) -> int:
    return struct.unpack("!I", socket.inet_aton(text))[0]


def mininet_placement(conns: list[tuple[str, str]], host_ip: dict[str, str]) -> dict[str, int] | None:
    """A Mininet run's placement from its TCP connections ((local "ip:port", remote "ip:port"), as sampled from
    either end): for each data direction a > b of FLOWS, the member of (a, b, a's port, b's port) on the one
    connection between a and b (host_agent: the PS's workers connect to the server and pull on the same
    connection; a ring rank connects to its right neighbour). None if a pair has no connection."""
    ports: dict[tuple[str, str], tuple[int, int]] = {}
    for local, remote in conns:
        (la, lp), (ra, rp) = (x.rsplit(":", 1) for x in (local, remote))
        ports[(la, ra)] = (int(lp), int(rp))
        ports[(ra, la)] = (int(rp), int(lp))
    out = {}
    for flow in FLOWS:
        a, b = flow.split(">")
        p = ports.get((host_ip[a], host_ip[b]))
        if p is None:
            return None
        out[flow] = member(ip_int(host_ip[a]), ip_int(host_ip[b]), *p)
    return out


def collisions(placement: dict[str, int]) -> int:
    """Pairs (ring data direction, PS data direction) leaving the same leaf on the same spine (0..8): they share
    that uplink and the spine's downlink to the other leaf."""
    leaf = {"h1": 1, "h2": 1, "h3": 1, "h4": 1, "h5": 2, "h7": 2, "h8": 2}
    ps = [f for f in FLOWS if f not in RING]
    return sum(placement[r] == placement[p] and leaf[r[:2]] == leaf[p[:2]] for r in RING for p in ps)


# The rebuild's TCP connections in the order its jobs open them (simulation/job.py starts the PS job first:
# workloads.h PsJob::Begin, per worker its push connection, then the server's pull connection to it; then
# ring_allreduce.h RingJob::Begin, each rank to its right neighbour), as (host that binds, data direction).
# ns-3 opens one connection per direction (the pull is the server's own), Mininet one per pair.
NS3_BIND_ORDER = (("h1", "h1>h5"), ("h5", "h5>h1"), ("h2", "h2>h5"), ("h5", "h5>h2"),
                  ("h3", "h3>h7"), ("h7", "h7>h4"), ("h4", "h4>h8"), ("h8", "h8>h3"))


def ns3_ip(host: str) -> int:
    """The rebuild's address of Mininet host hN: ns-3 host N-1 on host link N-1, 10.1.(N-1).1
    (scenario.build_links: link i's subnet 10.1.i.0/24, hosts' links first, the host the first address)."""
    return ip_int(f"10.1.{int(host[1:]) - 1}.1")


def ns3_port_skips(placement: dict[str, int], limit: int = 4096) -> dict[str, int]:
    """Ephemeral ports each host (ns-3 name) skips so that the rebuild's connections (NS3_BIND_ORDER) hash as
    ``placement``: the smallest skip per host that gives all of its connections their member."""
    skips = {}
    for host in dict.fromkeys(h for h, _ in NS3_BIND_ORDER):
        flows = [f for h, f in NS3_BIND_ORDER if h == host]
        for skip in range(limit):
            ports = range(NS3_FIRST_EPHEMERAL + skip, NS3_FIRST_EPHEMERAL + skip + len(flows))
            if all(member(ns3_ip(f[:2]), ns3_ip(f[3:]), p, NS3_TCP_PORT) == placement[f] for f, p in zip(flows, ports, strict=True)):
                skips[f"h{int(host[1:]) - 1}"] = skip
                break
        else:
            raise ValueError(f"no port skip below {limit} places {', '.join(flows)} as {placement}")
    return skips


def ns3_placement(skips: dict[str, int]) -> dict[str, int]:
    """The placement the rebuild's connections get with ``skips`` (none: ns-3's own ports)."""
    out, bound = {}, {}
    for host, flow in NS3_BIND_ORDER:
        name = f"h{int(host[1:]) - 1}"
        port = NS3_FIRST_EPHEMERAL + skips.get(name, 0) + bound.get(host, 0)
        bound[host] = bound.get(host, 0) + 1
        out[flow] = member(ns3_ip(flow[:2]), ns3_ip(flow[3:]), port, NS3_TCP_PORT)
    return out


def _addr(hexed: str) -> str:
    ip, port = hexed.split(":")
    return f"{socket.inet_ntoa(struct.pack('<I', int(ip, 16)))}:{int(port, 16)}"


def sample(out: Path, every_s: float = 0.3) -> None:
    """Until killed: every ``every_s``, the established TCP connections of every dlcp-agent's network namespace,
    one JSON line per new (local, remote) with the time first seen (unix seconds)."""
    seen: set[tuple[str, str]] = set()
    other: set[str] = set()                     # pids that are not agents: their command line is read once
    with open(out, "a", buffering=1) as f:
        while True:
            now = time.time()
            for pid in filter(str.isdigit, os.listdir("/proc")):
                if pid in other:
                    continue
                try:
                    if b"dlcp-agent" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                        other.add(pid)
                        continue
                    lines = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
                except OSError:                 # the process ended meanwhile
                    continue
                for cols in (ln.split() for ln in lines):
                    conn = (_addr(cols[1]), _addr(cols[2]))
                    if cols[3] == "01" and conn not in seen:        # 01: ESTABLISHED
                        seen.add(conn)
                        f.write(json.dumps({"t": round(now, 3), "local": conn[0], "remote": conn[1]}) + "\n")
            time.sleep(every_s)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "sample":
        print("usage: python -m simulation.ecmp_placement sample FILE  (until killed)", file=sys.stderr)
        return 2
    sample(Path(args[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
