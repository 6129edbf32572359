"""Packet tests of both DLCP programs on p4sim (p4src/bmv2/dlcp.p4 on the v1model path,
p4src/tofino/dlcp.p4 on the TNA path for Tofino1 and Tofino2), packets built with scapy.

What the STF files cannot show: the queue a packet is handed to the traffic manager with
(priority on BMv2, qid on Tofino: the QueuedPacket's queue), the member a sprayed packet takes,
and many-packet statistics (chi-square uniformity of spraying). Every test runs on every
program (``target``, tests/dataplane/targets.py hides the target differences docs/dataplane.md
names).
"""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from tests.dataplane.packets import dlcp_packet, tcp_packet, udp_packet
from tests.dataplane.tables import DlcpTables
from tests.dataplane.targets import DlcpTarget, ip_int

# Chi-square critical value, 3 degrees of freedom (4 members), significance 0.001.
CHI2_3DOF_P001 = 16.266


@pytest.fixture(params=["bmv2", "tna", "t2na"])
def target(request) -> DlcpTarget:
    """A fresh pipeline of one program with routes 10.0.<p>.0/24 -> port p for p = 2..6."""
    return DlcpTarget(request.param)


def queued(target: DlcpTarget, data: bytes, port: int = 1):
    return target.queued(data, port)


def test_priority_table_puts_each_tag_in_the_queue_it_names(target) -> None:
    tables = target.tables
    # One rule per layer class, queue = layer class; control messages to 7 above them.
    tables.priority_rule(7, 100, is_dlcp=(1, 1), msg_type=(4, 0xF))
    for layer in range(8):
        tables.priority_rule(layer, 10, is_dlcp=(1, 1), layer_class=(layer, 7))
    for layer in range(8):
        out = queued(target, dlcp_packet(layer_class=layer, mag_class=3))
        assert [(q.egress_port, q.priority) for q in out] == [(2, layer)]
    out = queued(target, dlcp_packet(msg_type=4, layer_class=0, payload=b"x"))
    assert [q.priority for q in out] == [7]
    # non-DLCP traffic: table default, queue 0
    assert [q.priority for q in queued(target, udp_packet())] == [0]
    assert [q.priority for q in queued(target, tcp_packet())] == [0]


def test_mag_class_and_flags_keys_select_queues(target) -> None:
    tables = target.tables
    tables.priority_rule(5, 50, is_dlcp=(1, 1), flags=(0x10, 0x10))          # PULL
    tables.priority_rule(3, 20, is_dlcp=(1, 1), mag_class=(12, 0xC))         # mag 12..15
    tables.priority_rule(1, 10, is_dlcp=(1, 1))
    assert [q.priority for q in queued(target, dlcp_packet(mag_class=13, flags=0x10))] == [5]
    assert [q.priority for q in queued(target, dlcp_packet(mag_class=13))] == [3]
    assert [q.priority for q in queued(target, dlcp_packet(mag_class=11))] == [1]


def test_critical_packets_are_never_selectively_dropped(target) -> None:
    tables = target.tables
    tables.priority_rule(4, 10, is_dlcp=(1, 1))
    for mag in range(16):
        tables.thresholds(4, mag, 0, 0)                   # drop at any depth above 0
    target.set_depth(2, 4, 1000)
    for mag in range(16):          # BMv2 drops in ingress (fresh record), Tofino1 in egress (enq_qdepth)
        assert target.forwarded(dlcp_packet(mag_class=mag, seq=mag)) == []            # dropped
        for flags in (0x80, 0x80 | 0x20, 0x80 | 0x10 | 0x40):
            out = target.forwarded(dlcp_packet(mag_class=mag, flags=flags, seq=mag))
            assert out == [(2, 4)], (mag, flags)
    assert sum(target.counter("DlcpIngress.selective_drops", 4 * 16 + mag) for mag in range(16)) == 16


def members_hit(target, packets: list[bytes]) -> dict[int, int]:
    hits: dict[int, int] = {}
    for data in packets:
        out = queued(target, data)
        assert len(out) == 1
        hits[out[0].egress_port] = hits.get(out[0].egress_port, 0) + 1
    return hits


def chi_square(counts: list[int]) -> float:
    expected = sum(counts) / len(counts)
    return sum((c - expected) ** 2 / expected for c in counts)


def test_dlcp_data_is_sprayed_over_all_members_tcp_stays_on_one(target) -> None:
    tables = target.tables
    tables.group(1, [3, 4, 5, 6], spray=True)
    tables.route_group(ip_int("10.0.9.0"), 24, 1)
    n = 800
    sprayed = members_hit(target, [dlcp_packet(dst_port=9, seq=i, offset=i * 256, count=4)
                                 for i in range(n)])
    assert set(sprayed) == {3, 4, 5, 6}
    stat = chi_square([sprayed[p] for p in (3, 4, 5, 6)])
    assert stat < CHI2_3DOF_P001, (sprayed, stat)
    tcp = members_hit(target, [tcp_packet(dst_port=9, seq=1000 + i * 1460) for i in range(200)])
    assert len(tcp) == 1
    # DLCP control messages are not sprayed either: per flow
    ctl = members_hit(target, [dlcp_packet(dst_port=9, msg_type=4, seq=i, payload=b"c") for i in range(50)])
    assert len(ctl) == 1
    members = target.member_packets(1, 4)      # direct (BMv2) or indexed (Tofino) member counter
    assert sum(members) == n + 200 + 50
    assert all(c > 0 for c in members)


def test_group_without_spray_keeps_dlcp_per_flow(target) -> None:
    tables = target.tables
    tables.group(1, [3, 4, 5, 6], spray=False)
    tables.route_group(ip_int("10.0.9.0"), 24, 1)
    hits = members_hit(target, [dlcp_packet(dst_port=9, seq=i, offset=i) for i in range(100)])
    assert len(hits) == 1


def test_without_spray_each_dlcp_tensor_keeps_one_path_and_tensors_spread(target) -> None:
    """Every DLCP endpoint uses one UDP port, so a 5-tuple hash put all DLCP traffic between two
    hosts on one member (ecmp-collision: all of a leaf's DLCP data of two jobs on one uplink, the
    other idle, in every seed; H10b session 7). The hash takes the tensor (job, worker, iteration,
    tensor id) as DLCP's flow: one tensor's DATA and PROBE keep one member (no reordering), many
    tensors between the same hosts use all members, and TCP stays per flow."""
    tables = target.tables
    tables.group(1, [3, 4, 5, 6], spray=False)
    tables.route_group(ip_int("10.0.9.0"), 24, 1)
    for tid in (1, 2, 3):
        one = members_hit(target, [dlcp_packet(dst_port=9, tensor_id=tid, seq=i, offset=i * 256) for i in range(40)]
                          + [dlcp_packet(dst_port=9, tensor_id=tid, msg_type=1, seq=40, payload=b"")])
        assert len(one) == 1, (tid, one)
    n = 400
    spread = members_hit(target, [dlcp_packet(dst_port=9, tensor_id=t % 256, job_id=1 + t // 256, seq=0)
                                  for t in range(n)])
    assert set(spread) == {3, 4, 5, 6}
    assert chi_square([spread[p] for p in (3, 4, 5, 6)]) < CHI2_3DOF_P001, spread
    assert len(members_hit(target, [tcp_packet(dst_port=9, seq=1000 + i * 1460) for i in range(50)])) == 1


def test_group_membership_changes_apply_to_the_next_packet(target) -> None:
    tables = target.tables
    tables.group(1, [3, 4, 5, 6], spray=True)
    tables.route_group(ip_int("10.0.9.0"), 24, 1)
    assert set(members_hit(target, [dlcp_packet(dst_port=9, seq=i) for i in range(200)])) == {3, 4, 5, 6}
    tables.group(1, [5, 6], spray=True)
    assert set(members_hit(target, [dlcp_packet(dst_port=9, seq=i) for i in range(200)])) == {5, 6}
    tables.group(1, [4], spray=True)
    assert set(members_hit(target, [dlcp_packet(dst_port=9, seq=i) for i in range(20)])) == {4}


def test_routed_packet_bytes_through_egress(target) -> None:
    path, tables = target.path, target.tables
    tables.priority_rule(6, 10, is_dlcp=(1, 1))
    sent = path.process(dlcp_packet(layer_class=7, ttl=9, ecn=1), 1)
    assert len(sent) == 1
    port, data = sent[0]
    pkt = Ether(data)
    assert port == 2
    assert pkt[IP].ttl == 8 and pkt[IP].tos == (48 << 2) | 1
    clean = IP(bytes(pkt[IP]))
    del clean.chksum
    assert pkt[IP].chksum == IP(bytes(clean)).chksum
    assert pkt[UDP].dport == 9290


def install_default_policy(tables: DlcpTables) -> None:
    """What the controller does with controller/data/default_policy.yaml (docs/dataplane.md):
    its queueing delays become packets at 20 Mbit/s, the rate assumed where the YAML gives none."""
    from controller.desired import SHIPPED_DEFAULT_PPS, _delay_to_packets
    from tests.dataplane.test_default_policy import KEY_WIDTHS, load, ternary

    policy = load()
    rules = policy["priority_map"]
    for i, rule in enumerate(rules):
        fields = {k: ternary(v, KEY_WIDTHS[k]) for k, v in rule["match"].items()}
        tables.priority_rule(rule["queue"], len(rules) - i, **fields)
    for block in policy["thresholds"]:
        for q in block["queues"]:
            for c in block["mag_classes"]:
                tables.thresholds(q, c, _delay_to_packets(block["drop_delay_us"], SHIPPED_DEFAULT_PPS),
                                  _delay_to_packets(block["ecn_delay_us"], SHIPPED_DEFAULT_PPS))


def test_default_policy_gives_the_documented_queues_and_dscp(target) -> None:
    path, tables = target.path, target.tables
    install_default_policy(tables)
    assert len(tables.pipeline.tables["DlcpIngress.drop_thresholds"]) == 96
    # docs/protocol.md, "DSCP mirror of the queue", default mapping table
    rows = [(dict(msg_type=m, layer_class=3, payload=b"ctl"), 7) for m in (2, 3, 4)]
    rows += [(dict(msg_type=1, layer_class=3, payload=b"ctl"), 2)]          # PROBE: its DATA's queue
    rows += [(dict(layer_class=0, flags=0x80), 1), (dict(layer_class=5, flags=0xA0), 4)]
    rows += [(dict(layer_class=c), q) for c, q in ((7, 6), (6, 5), (5, 4), (4, 3), (3, 2), (2, 1), (1, 1), (0, 1))]
    for fields, queue in rows:
        sent = path.process(dlcp_packet(dscp=0, **fields), 1)
        assert len(sent) == 1, fields
        assert Ether(sent[0][1])[IP].tos >> 2 == queue << 3, (fields, queue)
        assert [q.priority for q in queued(target, dlcp_packet(dscp=0, **fields))] == [queue]
    sent = path.process(udp_packet(dscp=10), 1)
    assert Ether(sent[0][1])[IP].tos >> 2 == 10
    # the top magnitude band is never dropped, the lowest is above 16 packets
    target.set_depth(2, 6, 17)
    assert target.forwarded(dlcp_packet(layer_class=7, mag_class=0)) == []
    target.set_depth(2, 6, 200_000)
    assert target.forwarded(dlcp_packet(layer_class=7, mag_class=15)) == [(2, 6)]


def test_controller_installed_udp_port_carries_dlcp(target) -> None:
    tables = target.tables
    tables.priority_rule(6, 10, is_dlcp=(1, 1))
    other = 9400
    # before: a DLCP header on port 9400 is plain UDP (queue 0, DSCP kept)
    assert [q.priority for q in queued(target, dlcp_packet(udp_dport=other, layer_class=7))] == [0]
    tables.dlcp_port(other)
    assert [q.priority for q in queued(target, dlcp_packet(udp_dport=other, layer_class=7))] == [6]
    # the built-in default port keeps working, and a malformed DLCP packet on the new port is dropped
    assert [q.priority for q in queued(target, dlcp_packet(layer_class=7))] == [6]
    assert queued(target, dlcp_packet(udp_dport=other, count=4, payload=bytes(3))) == []
    assert tables.pipeline.counters["DlcpIngress.malformed"].cells[1][0] == 1


def test_ipv4_options_checksum_is_verified_and_recomputed_as_bmv2_does():
    """The IPv4 checksum over a header with options (a run-time width field: the generated code's
    csum16 fast path) is recomputed on egress after the TTL decrement exactly as scapy computes
    it, for every option length; a wrong checksum on arrival sets checksum_error like the
    generic field-list path does (the program forwards either way)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from p4sim.runtime.checksums import verify_checksum
    from tests.dataplane.packets import SWITCH_MAC, host_ip, host_mac
    from tests.dataplane.targets import DlcpTarget

    t = DlcpTarget("bmv2")
    for words in range(0, 11):
        options = bytes((7 * words + i) % 251 for i in range(4 * words))
        pkt = (Ether(dst=SWITCH_MAC, src=host_mac(1)) / IP(src=host_ip(1), dst=host_ip(2), ttl=9, options=options)
               / UDP(sport=4000 + words, dport=5000) / (b"x" * 30))
        frame = bytes(pkt)
        out = t.send(frame)
        assert [p for p, _q, _d in out] == [2], words
        got = IP(out[0][2][14:])
        assert got.ihl == 5 + words and got.ttl == 8
        want = IP(bytes(got))
        del want.chksum
        assert got.chksum == IP(bytes(want)).chksum, words
        # arrival: the fast path's verdict equals the runtime's generic verify_checksum
        raw = bytearray(frame)
        raw[24:26] = bytes([raw[24] ^ 0x01, raw[25]])          # corrupt the checksum
        hdr = IP(bytes(raw[14:]))
        fields = [(int.from_bytes(bytes(raw[14 + i:16 + i]), "big"), 16) for i in range(0, 20 + 4 * words, 2)
                  if i != 10]
        assert not verify_checksum(True, fields, hdr.chksum, "csum16")
        t.send(bytes(raw))
        assert t.path._ctx.sm.checksum_error == 1, words
        t.send(frame)
        assert t.path._ctx.sm.checksum_error == 0, words
