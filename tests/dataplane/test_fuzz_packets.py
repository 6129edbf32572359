"""Issue 11: >= 100,000 random and mutated packets through the DLCP pipeline on p4sim.

Why this exists: the issue asks for packet fuzzing at volume in ``make test``. Seeds are built
once with scapy (tests/dataplane/packets.py: DLCP DATA/PROBE/BITMAP/DONE/CONTROL, plain UDP, TCP,
ARP, IPv4 with options); each fuzzed packet is a raw-byte mutation of a seed (bit flips,
truncation at every layer boundary and next to it, length-field lies in IPv4/UDP/DLCP, IPv4
options, splices, random bytes), usually with the IPv4 checksum repaired so the mutation reaches
the deeper layers. Every packet runs through ingress, the TM hand-over and egress of the program
(``DlcpTarget.send``) with routes 10.0.<p>.0/24 -> port p (p = 2..6) and the default policy, and
port 2's queues 1..6 deep enough for the policy to drop low-magnitude DATA.

Checked per packet: no exception, CPU time bounded (``PER_PACKET_SECONDS`` of this thread's CPU
time, ``time.thread_time``: the pipeline runs in this thread, so a packet that sends it into a long
or endless loop is caught whatever the machine's load; wall time is not used per packet, because a
loaded machine can deschedule the test for over a second between two packets, session 16); a
SIGALRM per batch (``BATCH_SECONDS`` of wall time) catches a hang that uses no CPU (a blocked
wait); at most one copy, on a real port (the port of the route for its destination); a forwarded
copy has TTL - 1, a valid IPv4 header checksum, the switch/neighbour MACs, and differs from the
input in nothing else (DLCP on port 9290 may also change its TOS byte: DSCP mirror and ECN); a
dropped packet is counted in exactly one drop counter (``malformed[r]``, ``selective_drops``,
``egress_safety_drops``) or has a reason the switch does not count, computed here from the bytes
(parser error/truncated, not IPv4, bad IPv4 checksum, TTL <= 1, no route); a packet the oracle says
must be dropped is never forwarded; a selective drop is always of an uncritical DLCP DATA packet.
Checked after the run: forwarded + every drop reason == packets sent, the switch's own counters
agree with the tallies (``port_queue_tx`` == forwarded), and RSS of the last 10 % of the run within
10 % of the first 10 %.

Programs: p4src/bmv2/dlcp.p4 (v1model) and p4src/tofino/dlcp.p4 on p4sim's TNA model as Tofino1
and Tofino2 (tests/dataplane/targets.py). Budget: ``MINIMUM`` packets per program, 10-30 s each
on a shared 2-core machine (3,000-10,000 packets/s); ``DLCP_FUZZ_SECONDS`` (``make fuzz``) keeps
going that long per program with a fresh seed (printed), ``DLCP_FUZZ_SEED`` repeats a run.
Run by hand: ``python -m tests.dataplane.test_fuzz_packets bmv2 5000``.
"""

from __future__ import annotations

import operator
import os
import random
import signal
import time

import pytest

from tests.dataplane.packets import (
    SWITCH_MAC,
    arp_packet,
    dlcp_packet,
    host_mac,
    ipv4_checksum,
    tcp_packet,
    udp_packet,
    with_ipv4_fields,
)
from tests.dataplane.targets import DlcpTarget
from tests.dataplane.test_pipeline import install_default_policy

MINIMUM = 100_000
PER_PACKET_SECONDS = 1.0
BATCH = 1000
BATCH_SECONDS = 30
ROUTED_PORTS = range(2, 7)
CONGESTED_PORT = 2
DLCP_UDP_PORT = 9290
MALFORMED = "DlcpIngress.malformed"
SELECTIVE = "DlcpIngress.selective_drops"
SAFETY = "DlcpEgress.egress_safety_drops"
PACKETS = operator.itemgetter(0)                               # a counter cell's packet count
SWITCH_MAC_BYTES = bytes.fromhex(SWITCH_MAC.replace(":", ""))


# ---------------------------------------------------------------- seeds (scapy, built once)

def seeds(rng: random.Random) -> list[bytes]:
    """Valid packets of every kind the switch sees, to the routed hosts and beyond."""
    out: list[bytes] = []
    for _ in range(40):
        dst = rng.choice([2, 2, 3, 4, 5, 6, 9])
        common = dict(src_port=rng.randrange(1, 7), dst_port=dst, ttl=rng.choice([1, 2, 64, 255]),
                      ecn=rng.randrange(4), dscp=rng.randrange(64))
        tags = dict(layer_class=rng.randrange(8), mag_class=rng.randrange(16),
                    flags=rng.choice([0, 0x80, 0x08, 0x88, 0x10, 0x20, 0x40]), seq=rng.getrandbits(32))
        dtype = rng.randrange(4)
        out.append(dlcp_packet(dtype=dtype, count=rng.randrange(0, 60), **tags, **common))  # DATA
        out.append(dlcp_packet(msg_type=1, payload=bytes(16), **tags, **common))            # PROBE
        out.append(dlcp_packet(msg_type=2, payload=bytes(rng.randrange(1, 64)), **tags, **common))  # BITMAP
        out.append(dlcp_packet(msg_type=3, payload=bytes(12), **tags, **common))            # DONE
        out.append(dlcp_packet(msg_type=4, payload=b"ctl" * rng.randrange(1, 9), **tags, **common))  # CONTROL
        out.append(udp_packet(dport=rng.choice([53, 6000, 9291, 4791]), **common))
        out.append(tcp_packet(dport=rng.choice([80, 9290, 443]), src_port=common["src_port"],
                              dst_port=dst, ttl=common["ttl"], dscp=common["dscp"]))
        out.append(arp_packet(rng.randrange(1, 7)))
        opts = bytes([1] * 4 * rng.randrange(1, 11))           # NOPs: a valid options field
        out.append(with_ipv4_fields(dlcp_packet(**tags, **common), options=opts))
        out.append(with_ipv4_fields(udp_packet(**common), options=opts))
    return out


# ---------------------------------------------------------------- mutations (raw bytes, fast)

def _ihl_end(data: bytes) -> int:
    return 14 + 4 * (data[14] & 0xF) if len(data) > 14 else 14


def _fix_ipv4_checksum(data: bytearray) -> None:
    end = _ihl_end(data)
    if len(data) >= 34 and data[12:14] == b"\x08\x00" and len(data) >= end and end > 14:
        data[24:26] = b"\0\0"
        data[24:26] = ipv4_checksum(bytes(data[14:end]) + b"\0" * ((end - 14) % 2)).to_bytes(2, "big")


def _boundaries(data: bytes) -> list[int]:
    """Layer boundaries of ``data``: Ethernet, IPv4 (and options), L4, DLCP header."""
    marks = [0, 14]
    if len(data) > 14:
        ip_end = _ihl_end(data)
        marks += [34, ip_end, ip_end + 8, ip_end + 20, ip_end + 8 + 24]
    return [m for m in marks if m <= len(data)]


def mutate(seed: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One fuzzed packet from ``seed`` and the name of the mutation (for failure messages)."""
    data = bytearray(seed)
    kind = rng.randrange(10)
    if kind == 0:                                              # the seed, a few fields changed
        name = "valid"
    elif kind == 1:                                            # bit flips anywhere
        name = "bitflip"
        for _ in range(rng.randint(1, 8)):
            if data:
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == 2:                                            # truncation at/next to a boundary
        name = "truncate"
        cut = rng.choice(_boundaries(seed)) + rng.choice([-1, 0, 0, 1])
        del data[max(0, cut):]
    elif kind == 3:                                            # length fields lie
        name = "length-lie"
        ip_end = _ihl_end(data)
        field = rng.choice([(16, 2), (ip_end + 4, 2), (ip_end + 8 + 14, 2), (14, 1)])
        off, width = field
        if off + width <= len(data):
            if width == 1:                                     # IHL
                data[off] = (data[off] & 0xF0) | rng.randrange(16)
            else:
                value = rng.choice([0, 1, 7, 8, 23, 24, 31, 0xFFFF, rng.getrandbits(16)])
                data[off:off + 2] = value.to_bytes(2, "big")
    elif kind == 4:                                            # IPv4 options, odd or random
        name = "options"
        if len(data) >= 34:
            words = rng.randrange(0, 11)
            opts = bytes(rng.getrandbits(8) for _ in range(4 * words))
            data[34:34] = opts
            data[14] = (data[14] & 0xF0) | min(15, 5 + words + rng.choice([0, 0, 0, -1, 1]))
            if len(data) >= 18:
                data[16:18] = (len(data) - 14).to_bytes(2, "big")
    elif kind == 5:                                            # random bytes after a layer
        name = "random-tail"
        cut = rng.choice(_boundaries(seed))
        data[cut:] = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 80)))
    elif kind == 6:                                            # splice: delete/insert/duplicate
        name = "splice"
        if data:
            p = rng.randrange(len(data))
            q = min(len(data), p + rng.randint(1, 16))
            op = rng.randrange(3)
            if op == 0:
                del data[p:q]
            elif op == 1:
                data[p:p] = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 16)))
            else:
                data[p:p] = data[p:q]
    elif kind == 7:                                            # DLCP/IPv4 field values
        name = "fields"
        for _ in range(rng.randint(1, 4)):
            off = rng.choice([14, 15, 22, 23, 25, 36, 37, 42, 43, 44, 45, 57, 58])
            if off < len(data):
                data[off] = rng.getrandbits(8)
    elif kind == 8:                                            # entirely random
        name = "random"
        data = bytearray(rng.getrandbits(8) for _ in range(rng.randrange(0, 120)))
        if rng.random() < 0.5 and len(data) >= 14:
            data[12:14] = b"\x08\x00"
            if len(data) > 14:
                data[14] = 0x45
    else:                                                      # destination, TTL, flags
        name = "retarget"
        if len(data) >= 34:
            data[33] = rng.choice([1, 2, 3, 4, 5, 6, 7, 9, 255])
            data[32] = rng.choice([2, 3, 4, 5, 6, 2, 9])
            data[22] = rng.choice([0, 1, 2, 64, 255])
        if len(data) >= 45:
            data[44] ^= 0x80                                   # CRITICAL on DLCP
    if rng.random() < 0.75:
        _fix_ipv4_checksum(data)
    return bytes(data), name


# ---------------------------------------------------------------- oracle of uncounted drops

def drop_reason(data: bytes) -> str | None:
    """Why the switch must drop ``data`` without counting it, or None (it may be forwarded)."""
    if len(data) < 14:
        return "truncated-ethernet"
    if data[12:14] != b"\x08\x00":
        return "not-ipv4"
    if len(data) < 34:
        return "truncated-ipv4"
    ihl, version = data[14] & 0xF, data[14] >> 4
    if version != 4 or ihl < 5:
        return None                                            # counted: malformed[3]
    end = 14 + 4 * ihl
    if len(data) < end:
        return "truncated-options"
    if ipv4_checksum(data[14:end]) != 0:
        return "bad-checksum"
    frag = int.from_bytes(data[20:22], "big") & 0x1FFF
    proto = data[23]
    if frag == 0 and (proto == 6 and len(data) < end + 20 or proto == 17 and len(data) < end + 8):
        return "truncated-l4"
    if proto == 17 and frag == 0:                              # a DLCP-shaped header cut short
        udp_len = int.from_bytes(data[end + 4:end + 6], "big")
        if udp_len > 8 and len(data) < end + 9:                # the version peek runs off the end
            return "truncated-dlcp"
        if udp_len >= 32 and data[end + 8:end + 9] and data[end + 8] >> 4 == 1 and len(data) < end + 32:
            return "truncated-dlcp"
    if data[22] <= 1:
        return "ttl"
    if data[30] != 10 or data[31] != 0 or data[32] not in ROUTED_PORTS:
        return "no-route"
    return None


def is_dlcp_port(data: bytes) -> bool:
    """UDP to the DLCP port, first fragment: the switch may rewrite its TOS (DSCP mirror, ECN)."""
    end = _ihl_end(data)
    return (data[23] == 17 and int.from_bytes(data[20:22], "big") & 0x1FFF == 0
            and len(data) >= end + 4 and int.from_bytes(data[end + 2:end + 4], "big") == DLCP_UDP_PORT)


def droppable_by_policy(data: bytes) -> bool:
    """An uncritical DLCP DATA packet (version 1) on the DLCP port: the only kind the policy drops."""
    p = _ihl_end(data) + 8
    return is_dlcp_port(data) and len(data) >= p + 24 and data[p] == 0x10 and not data[p + 2] & 0x80


def is_critical_data(data: bytes) -> bool:
    """DLCP DATA (version 1) on the DLCP port with CRITICAL set."""
    p = _ihl_end(data) + 8
    return is_dlcp_port(data) and len(data) >= p + 24 and data[p] == 0x10 and bool(data[p + 2] & 0x80)


def check_forwarded(data: bytes, port: int, out: bytes) -> None:
    assert port in ROUTED_PORTS and data[32] == port, f"left on port {port} for {data[30:34].hex()}"
    assert len(out) == len(data), f"length {len(data)} -> {len(out)}"
    assert out[0:6] == bytes.fromhex(host_mac(port).replace(":", "")) and out[6:12] == SWITCH_MAC_BYTES, "MACs"
    assert out[22] == data[22] - 1, f"TTL {data[22]} -> {out[22]}"
    end = _ihl_end(data)
    assert ipv4_checksum(out[14:end]) == 0, "IPv4 header checksum invalid"
    same = [(12, 15), (16, 22), (23, 24), (26, len(data))]     # all but MACs, TOS, TTL, checksum
    assert all(out[a:b] == data[a:b] for a, b in same), "bytes changed beyond the rewrite"
    if not is_dlcp_port(data):
        assert out[15] == data[15], f"non-DLCP TOS {data[15]:#x} -> {out[15]:#x}"


# ---------------------------------------------------------------- the run

class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def counted_drops(pipeline) -> tuple[list[int], int, int]:
    malformed = [c[0] for c in pipeline.counters[MALFORMED].cells[:4]]
    return (malformed, sum(map(PACKETS, pipeline.counters[SELECTIVE].cells)),
            sum(map(PACKETS, pipeline.counters[SAFETY].cells)))


def fuzz_target(name: str) -> dict:
    seconds = float(os.environ.get("DLCP_FUZZ_SECONDS", "0"))
    seed = int(os.environ.get("DLCP_FUZZ_SEED", str(time.time_ns() % (1 << 32) if seconds else 20261201)))
    rng = random.Random(seed)
    target = DlcpTarget(name)
    install_default_policy(target.tables)
    for queue in range(1, 7):                                  # port 2 congested: the policy drops
        target.set_depth(CONGESTED_PORT, queue, 60)
    pipeline = target.pipeline
    corpus = seeds(rng)
    tally: dict[str, int] = {"forwarded": 0, "selective": 0, "safety": 0}
    tally.update({f"malformed[{r}]": 0 for r in range(4)})
    kinds: dict[str, int] = {}
    critical_forwarded_congested = 0
    last = counted_drops(pipeline)
    rss: list[int] = []
    slowest = slowest_cpu = 0.0
    old = signal.signal(signal.SIGALRM, _alarm)
    start = time.monotonic()
    i = 0
    try:
        while i < MINIMUM or time.monotonic() - start < seconds:
            signal.alarm(BATCH_SECONDS)
            for _ in range(BATCH):
                pkt_seed = rng.getrandbits(64)
                data, kind = mutate(rng.choice(corpus), random.Random(pkt_seed))
                kinds[kind] = kinds.get(kind, 0) + 1
                where = f"{name} packet {i} ({kind}, seed {seed}, packet seed {pkt_seed}): {data.hex()}"
                t0, c0 = time.perf_counter(), time.thread_time()
                try:
                    sent = target.send(data, port=rng.randrange(1, 7))
                except Hang:
                    raise
                except Exception as err:  # noqa: BLE001 - any exception is the bug this finds
                    pytest.fail(f"{where} raised {type(err).__name__}: {err}")
                cpu = time.thread_time() - c0
                slowest, slowest_cpu = max(slowest, time.perf_counter() - t0), max(slowest_cpu, cpu)
                assert cpu < PER_PACKET_SECONDS, f"{where} took {cpu:.2f} s of CPU time"
                reason = drop_reason(data)
                assert len(sent) <= 1, f"{where}: {len(sent)} copies"
                if sent:
                    assert reason is None, f"{where}: forwarded, must be dropped ({reason})"
                    port, _queue, out = sent[0]
                    try:
                        check_forwarded(data, port, bytes(out))
                    except AssertionError as err:
                        pytest.fail(f"{where}: {err}; out {bytes(out).hex()}")
                    tally["forwarded"] += 1
                    if port == CONGESTED_PORT and is_critical_data(data):
                        critical_forwarded_congested += 1
                else:
                    now = counted_drops(pipeline)
                    deltas = [b - a for a, b in zip(last[0], now[0], strict=True)] + [now[1] - last[1], now[2] - last[2]]
                    assert sorted(deltas) in ([0] * 6, [0] * 5 + [1]), f"{where}: counters moved {deltas}"
                    if deltas[4] or deltas[5]:
                        assert droppable_by_policy(data), f"{where}: selectively dropped, not droppable"
                        tally["selective" if deltas[4] else "safety"] += 1
                    elif any(deltas):
                        tally[f"malformed[{deltas.index(1)}]"] += 1
                    else:
                        assert reason is not None, f"{where}: dropped, counted nowhere, no reason"
                        tally[reason] = tally.get(reason, 0) + 1
                    last = now
                i += 1
            signal.alarm(0)
            rss.append(rss_kib())
    except Hang:
        pytest.fail(f"{name}: a batch of {BATCH} packets ran over {BATCH_SECONDS} s near packet {i}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    elapsed = time.monotonic() - start
    assert sum(tally.values()) == i, (tally, i)
    final = counted_drops(pipeline)
    assert final[0] == [tally[f"malformed[{r}]"] for r in range(4)]
    assert (final[1], final[2]) == (tally["selective"], tally["safety"])
    tx = sum(c[0] for c in pipeline.counters["DlcpEgress.port_queue_tx"].cells)
    assert tx == tally["forwarded"], (tx, tally["forwarded"])
    tenth = max(1, len(rss) // 10)
    first, final_rss = sum(rss[:tenth]) / tenth, sum(rss[-tenth:]) / tenth
    report = dict(target=name, packets=i, seconds=round(elapsed, 1), rate=round(i / elapsed),
                  slowest_ms=round(slowest * 1000, 1), slowest_cpu_ms=round(slowest_cpu * 1000, 1),
                  rss_kib=(round(first), round(final_rss)),
                  critical_data_forwarded_on_congested_port=critical_forwarded_congested,
                  tally=tally, kinds=kinds, seed=seed)
    print(f"\nfuzz packets: {report}")
    assert final_rss <= first * 1.10, f"RSS grew {first:.0f} -> {final_rss:.0f} KiB"
    # the run reached what it is meant to check
    assert tally["forwarded"] > i // 10 and tally["selective"] + tally["safety"] > 0
    assert critical_forwarded_congested > 0
    assert all(tally[f"malformed[{r}]"] > 0 for r in range(4)), tally
    for reason in ("not-ipv4", "bad-checksum", "ttl", "no-route", "truncated-l4"):
        assert tally.get(reason, 0) > 0, (reason, tally)
    return report


@pytest.mark.fuzz
@pytest.mark.parametrize("name", ["bmv2", "tna", "t2na"])
def test_fuzz_packets_through_the_dlcp_pipeline(name: str) -> None:
    fuzz_target(name)


if __name__ == "__main__":                                    # quick manual runs: python -m ...
    import sys
    MINIMUM = int(sys.argv[2]) if len(sys.argv) > 2 else MINIMUM
    print(fuzz_target(sys.argv[1] if len(sys.argv) > 1 else "bmv2"))
