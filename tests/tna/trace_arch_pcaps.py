"""Follow every packet of a ``dlcp-exp --pcap`` run through the switches (a tool, not a test).

Why it exists (issue 15): the Tofino program's Mininet runs showed more DLCP retransmissions and
more queue-1 packets than the BMv2 program's. The P4 counters say how many packets each queue
sent, not where a lost packet went missing or how long a switch held one. Every p4sim switch of a
``--pcap`` run writes each port's received (``_in``) and sent (``_out``) frames with the wall
time; this matches them (same IPv4 addresses, identification and layer-4 bytes, first in first
out) and prints, for one mode of one run:

* what the hosts sent into the fabric, DLCP messages by type and queue (the default policy's
  priority map: control, BITMAP and DONE in queue 7, DATA and PROBE by layer class);
* where DLCP packets were lost: inside a switch (received, never sent: TM tail drop, selective
  drop, egress drop) or on a link (sent by one switch, never received by the next: the kernel
  receive ring or a full send buffer), with their type, class and CRITICAL flag;
* each switch's residence time (received -> sent) and each link's delay (sent -> received by the
  next switch, i.e. veth plus the time the packet waited for the next switch to read it),
  for DLCP and for all packets.

    .venv/bin/python tests/tna/trace_arch_pcaps.py RUN_DIR [RUN_DIR ...] [--mode dlcp]

It also reads the packet thread's CPU time each switch logs when it stops (``final: ...``). With
several run directories it ends with the figures pooled per program (the run's ``--arch``).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import struct
import sys
from pathlib import Path

import yaml

DLCP_PORT = 9290
MSG_NAMES = {0: "DATA", 1: "PROBE", 2: "BITMAP", 3: "DONE", 4: "CONTROL"}
_REC = struct.Struct("<IIII")
STALL_S = 0.1


def read_pcap(path: Path) -> list[tuple[float, bytes]]:
    """(wall time, frame) of every record of a classic pcap file (a truncated tail is ignored)."""
    raw = path.read_bytes()
    out, pos = [], 24
    while pos + 16 <= len(raw):
        sec, usec, caplen, _ = _REC.unpack_from(raw, pos)
        pos += 16
        if pos + caplen > len(raw):
            break
        out.append((sec + usec / 1e6, raw[pos:pos + caplen]))
        pos += caplen
    return out


def packet_key(frame: bytes) -> tuple | None:
    """What stays the same across hops (no TTL, checksum or ECN): IPv4 addresses, protocol,
    identification and the layer-4 bytes. None for a non-IPv4 frame."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 0x0F) * 4
    return frame[26:34], frame[23], frame[18:20], frame[14 + ihl:]


def dlcp_info(frame: bytes) -> tuple[str, int, int, bool] | None:
    """(message type, queue by the default policy, magnitude class, CRITICAL) of a DLCP frame."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return None
    l4 = 14 + (frame[14] & 0x0F) * 4
    if len(frame) < l4 + 8 + 4 or struct.unpack_from("!H", frame, l4 + 2)[0] != DLCP_PORT:
        return None
    b0, b1, flags = frame[l4 + 8], frame[l4 + 9], frame[l4 + 10]
    msg, layer, mag = b0 & 0x0F, b1 >> 5, b1 & 0x0F
    queue = 7 if msg in (2, 3, 4) else {7: 6, 6: 5, 5: 4, 4: 3, 3: 2}.get(layer, 1)
    return MSG_NAMES.get(msg, str(msg)), queue, mag, bool(flags & 0x80)


def percentiles(xs: list[float]) -> str:
    if not xs:
        return "-"
    xs = sorted(xs)
    pick = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))] * 1e3  # noqa: E731
    return f"n {len(xs):6d}  p50 {pick(0.5):7.2f}  p90 {pick(0.9):7.2f}  p99 {pick(0.99):7.2f}  max {xs[-1] * 1e3:7.2f} ms"


def analyse(mode_dir: Path) -> dict:
    """Print one mode's figures; return them for pooling over runs."""
    net = yaml.safe_load((mode_dir / "net.yaml").read_text())
    peer: dict[tuple[str, int], tuple[str, int]] = {}
    for a, b in net["links"]:
        (sa, pa), (sb, pb) = a.split(":"), b.split(":")
        peer[(sa, int(pa))] = (sb, int(pb))
        peer[(sb, int(pb))] = (sa, int(pa))
    host_ports = {(h["switch"], h["port"]) for h in net["hosts"].values()}
    # (switch, port, direction) -> [(t, frame)]
    caps: dict[tuple[str, int, str], list[tuple[float, bytes]]] = {}
    for d in sorted(mode_dir.glob("*-pcap")):
        sw = d.name[:-5]
        for f in d.glob("*.pcap"):
            stem, direction = f.stem.rsplit("_", 1)
            port = int(stem.rsplit("eth", 1)[1])
            caps[(sw, port, direction)] = read_pcap(f)
    if not caps:
        sys.exit(f"{mode_dir}: no *-pcap directories (run dlcp-exp with --pcap)")

    sent_by_hosts: collections.Counter = collections.Counter()
    for (sw, port, direction), recs in caps.items():
        if direction == "in" and (sw, port) in host_ports:
            for _, fr in recs:
                info = dlcp_info(fr)
                if info:
                    sent_by_hosts[(info[0], info[1], info[3])] += 1
    print(f"== {mode_dir}\nDLCP messages the hosts sent into the fabric (type, queue, critical): count")
    for k in sorted(sent_by_hosts):
        print(f"  {k[0]:8s} q{k[1]} {'crit' if k[2] else '    '}  {sent_by_hosts[k]}")
    per_queue = collections.Counter()
    for (_msg, q, _c), n in sent_by_hosts.items():
        per_queue[q] += n
    print("  per queue: " + ", ".join(f"q{q} {n}" for q, n in sorted(per_queue.items())))

    # inside each switch: received -> sent, FIFO per key
    residence: dict[str, list[float]] = collections.defaultdict(list)
    residence_dlcp: dict[str, list[float]] = collections.defaultdict(list)
    lost_in_switch: collections.Counter = collections.Counter()
    switches = sorted({k[0] for k in caps})
    for sw in switches:
        pending: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)
        events = []
        for (s, port, direction), recs in caps.items():
            if s == sw:
                events += [(t, 0 if direction == "in" else 1, port, fr) for t, fr in recs]
        events.sort(key=lambda e: (e[0], e[1]))
        for t, is_out, port, fr in events:
            key = packet_key(fr)
            if key is None:
                continue
            if not is_out:
                pending[key].append((t, port, fr))
            elif pending[key]:
                t_in, _p, _ = pending[key].popleft()
                residence[sw].append(t - t_in)
                if dlcp_info(fr):
                    residence_dlcp[sw].append(t - t_in)
        for q in pending.values():
            for _t, _p, fr in q:
                info = dlcp_info(fr)
                if info:
                    lost_in_switch[(sw,) + info] += 1

    # on each link: sent by one switch -> received by the next, FIFO per key
    link_delay: dict[str, list[float]] = collections.defaultdict(list)
    lost_on_link: collections.Counter = collections.Counter()
    for (sw, port, direction), recs in sorted(caps.items()):
        if direction != "out" or (sw, port) not in peer:
            continue
        nsw, nport = peer[(sw, port)]
        arrived: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)
        for t, fr in caps.get((nsw, nport, "in"), []):
            key = packet_key(fr)
            if key is not None:
                arrived[key].append(t)
        name = f"{sw}:{port}->{nsw}:{nport}"
        for t, fr in recs:
            key = packet_key(fr)
            if key is None:
                continue
            if arrived[key]:
                link_delay[name].append(arrived[key].popleft() - t)
            else:
                info = dlcp_info(fr)
                if info:
                    lost_on_link[(name,) + info] += 1

    print("\nDLCP packets lost inside a switch (received, never sent): switch, type, queue, mag, critical")
    for k, n in sorted(lost_in_switch.items()):
        print(f"  {k}: {n}")
    print(f"  total {sum(lost_in_switch.values())}")
    print("DLCP packets lost on a link (sent, never received by the next switch)")
    for k, n in sorted(lost_on_link.items()):
        print(f"  {k}: {n}")
    print(f"  total {sum(lost_on_link.values())}")
    print("\nswitch residence (received -> sent), all packets / DLCP only; stalls: packets held longer "
          f"than {STALL_S * 1e3:.0f} ms (more than a full 64-packet queue at 20 Mbit/s takes to drain)")
    for sw in switches:
        stalls = sum(1 for x in residence[sw] if x > STALL_S)
        print(f"  {sw:7s} all  {percentiles(residence[sw])}  stalls {stalls}")
        print(f"  {sw:7s} dlcp {percentiles(residence_dlcp[sw])}")
    print("link delay (sent -> received by the next switch), all packets")
    for name in sorted(link_delay):
        print(f"  {name:22s} {percentiles(link_delay[name])}")
    cpu = switch_cpu(mode_dir)
    for sw, (rx, secs, wait) in sorted(cpu.items()):
        print(f"  {sw:7s} packet thread CPU {secs:6.2f} s for {rx} packets received: {secs / max(rx, 1) * 1e6:6.1f} "
              f"us/packet; waited for a CPU {wait:.2f} s")
    return {"sent": sent_by_hosts, "lost_switch": sum(lost_in_switch.values()), "lost_link": sum(lost_on_link.values()),
            "residence_dlcp": [x for v in residence_dlcp.values() for x in v],
            "residence_all": [x for v in residence.values() for x in v],
            "link_delay": [x for v in link_delay.values() for x in v], "cpu": cpu}


def switch_cpu(mode_dir: Path) -> dict[str, tuple[int, float, float]]:
    """Switch -> (packets received, packet-thread CPU seconds, seconds it waited for a CPU; nan
    when not logged) from the line p4sim logs at stop."""
    out = {}
    for log in mode_dir.glob("*.log"):
        text = log.read_text()
        m = re.search(r"final: rx (\d+) .* packet thread CPU ([\d.]+) s", text)
        if m:
            w = re.search(r"waited for a CPU ([\d.]+) s", text)
            out[log.stem] = (int(m.group(1)), float(m.group(2)), float(w.group(1)) if w else float("nan"))
    return out


def pooled(runs: dict[str, list[dict]]) -> None:
    """Per program: the figures of all its runs together."""
    print("\n== pooled per program")
    for arch, res in sorted(runs.items()):
        sent: collections.Counter = collections.Counter()
        for r in res:
            sent.update(r["sent"])
        per = collections.Counter()
        probes = collections.Counter()
        for (msg, q, _c), n in sent.items():
            per[q] += n
            if msg == "PROBE":
                probes[q] += n
        rx = sum(v[0] for r in res for v in r["cpu"].values())
        secs = sum(v[1] for r in res for v in r["cpu"].values())
        print(f"{arch} ({len(res)} runs): sent per queue " + ", ".join(f"q{q} {n}" for q, n in sorted(per.items()))
              + "; of them PROBE " + ", ".join(f"q{q} {n}" for q, n in sorted(probes.items())))
        print(f"  DLCP lost in switches {sum(r['lost_switch'] for r in res)}, on links {sum(r['lost_link'] for r in res)}")
        print(f"  residence DLCP {percentiles([x for r in res for x in r['residence_dlcp']])}")
        every = [x for r in res for x in r["residence_all"]]
        print(f"  residence all  {percentiles(every)}  stalls {sum(1 for x in every if x > STALL_S)}")
        print(f"  link delay     {percentiles([x for r in res for x in r['link_delay']])}")
        wait = sum(v[2] for r in res for v in r["cpu"].values())
        print(f"  packet thread CPU {secs:.2f} s for {rx} packets: {secs / max(rx, 1) * 1e6:.1f} us/packet; "
              f"waited for a CPU {wait:.2f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dirs", type=Path, nargs="+", help="dlcp-exp run directories (results/<run>); several: "
                   "each one, then the figures pooled per program (--arch of the run)")
    p.add_argument("--mode", default="dlcp")
    a = p.parse_args(argv)
    runs: dict[str, list[dict]] = collections.defaultdict(list)
    for run_dir in a.run_dirs:
        mode_dir = run_dir / a.mode
        if not (mode_dir / "net.yaml").exists():
            p.error(f"{mode_dir}: no net.yaml (not a dlcp-exp run directory with mode {a.mode})")
        arch = json.loads((run_dir / "config.json").read_text()).get("arch", "v1model")
        runs[arch].append(analyse(mode_dir))
    if len(a.run_dirs) > 1:
        pooled(runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
