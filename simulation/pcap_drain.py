"""How much of its link rate a Mininet switch port delivered while it had a backlog, from the
switch's own pcaps (`dlcp-exp ... --pcap`: `switches/<sw>-pcap/<sw>-eth<N>_{in,out}.pcap`).

Why this exists: the cross-check with Mininet (docs/simulation.md) found ns-3 dropping almost no
gradient packets selectively where Mininet dropped hundreds per run. p4sim's switches stamp every
packet when their (single) packet loop handles it, so a packet's stay in a switch is out time - in
time, and a port has a backlog while some packet waits in it. A work-conserving port sends at its
full link rate then; the share it really sent is what a software switch loses to its stalls (the
TM lets a port catch up at most 20 ms of link time after a pause, `PORT_CATCH_UP_NS`, since
3466ced; 1 ms before, when session 5's cross-check records were made). That share is what
`python -m simulation.crosscheck --switch-rate-share F` gives ns-3's switch ports.

    python -m simulation.pcap_drain RUN_DIR/switches leaf2:1 [leaf1:1 ...] [--rate-mbps 20]

Per port and traffic (DLCP runs: UDP; TCP runs: TCP; ``all`` where a port carried both, e.g. DLCP
beside bulk TCP): the seconds with a backlog (the union of [in, out] of packets that stayed over
``BACKLOG_S`` = 1 ms: a stay, not the TM's catch-up), the Mbit/s sent in them and the stay's p50 / p99.
"""

from __future__ import annotations

import argparse
import bisect
import struct
import sys
from collections import defaultdict, deque
from pathlib import Path

BACKLOG_S = 1e-3        # a packet that stayed longer waited behind others (a 1500 B packet takes 0.6 ms at 20 Mbit/s)
STALE_S = 1.0           # a stay this long is a match across runs (64-packet queues drain in < 0.3 s), not a stay
_PCAP_MAGIC = 0xA1B2C3D4


class PcapError(Exception):
    """A file that is not a microsecond pcap, or a switch/port without pcaps: one line."""


def read_pcap(path: Path) -> list[tuple[float, bytes]]:
    """(time, frame) of every record of a classic little-endian microsecond pcap (p4sim's writer)."""
    data = Path(path).read_bytes()
    if len(data) < 24 or struct.unpack_from("<I", data)[0] != _PCAP_MAGIC:
        raise PcapError(f"{path}: not a little-endian microsecond pcap")
    out, pos = [], 24
    while pos + 16 <= len(data):
        sec, usec, n, _ = struct.unpack_from("<IIII", data, pos)
        out.append((sec + usec / 1e6, data[pos + 16:pos + 16 + n]))
        pos += 16 + n
    return out


def _packet(frame: bytes) -> tuple[tuple, dict] | None:
    """(key that survives forwarding, info) of an IPv4 frame; None for anything else."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 15) * 4
    l4 = frame[14 + ihl:]
    info = {"proto": frame[23], "len": len(frame)}
    # TTL, DSCP/ECN and the checksum change on the way through; addresses, IP id and L4 bytes do not
    return (frame[26:34], frame[18:20], bytes(l4[:48])), info


def port_drain(switch_dir: Path, switch: str, port: int, rate_bps: float) -> dict[str, dict]:
    """Per traffic ('udp', 'tcp'): backlogged seconds, Mbit/s sent then, share of ``rate_bps``, stays."""
    pdir = Path(switch_dir) / f"{switch}-pcap"
    outs = [pdir / f"{switch}-eth{port}_out.pcap"]
    if not outs[0].is_file():
        raise PcapError(f"{outs[0]}: not found (run dlcp-exp with --pcap)")
    arrived: dict[tuple, deque] = defaultdict(deque)
    for path in sorted(pdir.glob(f"{switch}-eth*_in.pcap")):
        for t, frame in read_pcap(path):
            p = _packet(frame)
            if p:
                arrived[p[0]].append(t)
    stays: dict[str, list[tuple[float, float, int]]] = {"udp": [], "tcp": []}
    for t, frame in read_pcap(outs[0]):
        p = _packet(frame)
        if p and arrived.get(p[0]) and p[1]["proto"] in (6, 17):
            t_in = arrived[p[0]].popleft()
            if t - t_in < STALE_S:
                stays["udp" if p[1]["proto"] == 17 else "tcp"].append((t_in, t, p[1]["len"]))
    out = {kind: _drain(rows, rate_bps) for kind, rows in stays.items() if rows}
    if len(out) > 1:       # the port's delivery as a whole: one kind's backlog may be served by the other's packets
        out["all"] = _drain(stays["udp"] + stays["tcp"], rate_bps)
    return out


def _drain(rows: list[tuple[float, float, int]], rate_bps: float) -> dict:
    union: list[list[float]] = []
    for t_in, t_out, _ in sorted(r for r in rows if r[1] - r[0] > BACKLOG_S):
        if union and t_in <= union[-1][1]:
            union[-1][1] = max(union[-1][1], t_out)
        else:
            union.append([t_in, t_out])
    starts = [u[0] for u in union]
    sent = 0
    for _, t_out, length in rows:
        k = bisect.bisect_right(starts, t_out) - 1
        if k >= 0 and union[k][0] < t_out <= union[k][1]:
            sent += 8 * length
    busy = sum(b - a for a, b in union)
    stay = sorted(b - a for a, b, _ in rows)
    return {"packets": len(rows), "backlogged_s": round(busy, 3),
            "mbps_backlogged": round(sent / busy / 1e6, 2) if busy else None,
            "share_of_rate": round(sent / busy / rate_bps, 3) if busy else None,
            "stay_p50_ms": round(1e3 * stay[len(stay) // 2], 2), "stay_p99_ms": round(1e3 * stay[int(0.99 * (len(stay) - 1))], 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simulation.pcap_drain", description=__doc__.splitlines()[0])
    ap.add_argument("switch_dir", help="a Mininet run's switches/ directory (with <switch>-pcap/)")
    ap.add_argument("ports", nargs="+", metavar="SWITCH:PORT", help="e.g. leaf2:1")
    ap.add_argument("--rate-mbps", type=float, default=20.0, help="the ports' emulated link rate")
    a = ap.parse_args(argv)
    for spec in a.ports:
        sw, _, num = spec.partition(":")
        if not sw or not num.isdigit():
            print(f"pcap_drain: port '{spec}': expected SWITCH:PORT, e.g. leaf2:1", file=sys.stderr)
            return 2
        try:
            result = port_drain(Path(a.switch_dir), sw, int(num), a.rate_mbps * 1e6)
        except (PcapError, OSError) as err:
            print(f"pcap_drain: {err}", file=sys.stderr)
            return 2
        for kind, r in result.items():
            print(f"{sw}-eth{num} {kind}: {r['packets']} packets; backlogged {r['backlogged_s']} s, sent "
                  f"{r['mbps_backlogged']} Mbit/s then ({r['share_of_rate']} of {a.rate_mbps:g}); stay p50 "
                  f"{r['stay_p50_ms']} ms, p99 {r['stay_p99_ms']} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
