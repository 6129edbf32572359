"""Public TNA example programs, unchanged, compiled by p4sim and run against their own PTF checks.

Why it exists (issue 15): the TNA model should run Tofino programs other people wrote, not only
ours. tests/tna/public/ keeps open-p4studio's p4-examples (Apache-2.0; NOTICE names repository,
commit and path) exactly as published. Each test here repeats what the program's PTF test
(``test.py`` beside it, driven through BfRuntime on Intel's model) checks, with the entries
written into p4sim's tables and the packets built with scapy. Known difference, stated where it
shows: the Tofino model's byte counters include the 4-byte Ethernet FCS ("model adds 4 bytes of
CRC"), p4sim's frames carry none, so byte counts are the frame length. Six programs run:
tna_counter, tna_exact_match, tna_digest, tna_register (its RegisterParam control-plane writes,
in the second half of its PTF test, are not modelled: ``read()`` gives the program's constant),
tna_checksum, tna_resubmit (on Tofino1 and Tofino2 where it matters). A program that uses
something p4sim does not model is refused at compile time with the location
(``tna_meter_lpf_wred``: Lpf, Wred); the test asserts that error, and docs/p4sim.md lists it.
Budget: about 20 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether

from p4sim.runtime.tables import ActionCall, Exact, TableEntry, Ternary

PUBLIC = Path(__file__).resolve().parent / "public" / "p4_16_programs"
ALL_ONES_48 = (1 << 48) - 1
PKT_LEN = 100


def compile_example(name: str, arch: str = "tna"):
    from p4sim.tna.program import compile_tna

    return compile_tna(str(PUBLIC / name / f"{name}.p4"), [str(PUBLIC)], arch)


def mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def tcp_packet(dst: str = "00:11:22:33:44:55", src: str = "11:33:55:77:99:00", ip_dst: str = "192.168.0.1") -> bytes:
    """ptf.testutils.simple_tcp_packet's frame: Ethernet/IPv4/TCP padded to PKT_LEN bytes."""
    pkt = Ether(dst=dst, src=src) / IP(src="192.168.0.2", dst=ip_dst, ttl=64) / TCP(sport=1234, dport=80)
    return bytes(pkt) + bytes(PKT_LEN - len(pkt))


@pytest.fixture(scope="module", params=["tna", "t2na"])
def counter_program(request):
    return compile_example("tna_counter", request.param)


def path_of(program):
    from p4sim.tna.pipeline import TnaPath

    pipeline = program.instantiate()
    return pipeline, TnaPath(pipeline)


def test_tna_counter_direct_counter_counts_hits_and_a_deleted_entry_drops(counter_program) -> None:
    """PTF DirectCounterTest: 2 packets hit ``forward`` (ternary on the source MAC) and go out
    of the action's port; the entry's direct counter reads 2 packets (and their bytes); after the
    entry is deleted the packet is dropped (no action writes ucast_egress_port)."""
    pipeline, path = path_of(counter_program)
    table = pipeline.tables["pipe.SwitchIngress.forward"]
    entry = TableEntry(match=(Ternary(mac("11:33:55:77:99:00"), ALL_ONES_48),),
                       action=ActionCall("pipe.SwitchIngress.hit", (2,)), priority=1)
    table.insert(entry)
    pkt = tcp_packet()
    for _ in range(2):
        assert path.process(pkt, 1) == [(2, pkt)]
    assert (entry.packets, entry.bytes) == (2, 2 * PKT_LEN)      # Tofino's model: 2 * (PKT_LEN + 4)
    table.delete(entry)
    assert path.process(pkt, 1) == []
    assert path.drops["no_egress_port"] == 1


def test_tna_counter_indirect_counter_is_indexed_by_the_port(counter_program) -> None:
    """PTF IndirectCounterTest: ``forward_dst`` hits ``hit_dst(port)``, which counts
    ``indirect_counter[port]``; nothing else is counted."""
    pipeline, path = path_of(counter_program)
    pipeline.tables["pipe.SwitchIngress.forward_dst"].insert(
        TableEntry(match=(Exact(mac("00:11:22:33:44:55")),), action=ActionCall("pipe.SwitchIngress.hit_dst", (5,))))
    pkt = tcp_packet()
    for _ in range(3):
        assert path.process(pkt, 1) == [(5, pkt)]
    cells = pipeline.counters["pipe.SwitchIngress.indirect_counter"].cells
    assert cells[5] == [3, 3 * PKT_LEN]
    assert sum(c[0] for i, c in enumerate(cells) if i != 5) == 0


def test_tna_counter_forward_or_drop_counts_dropped_packets_too(counter_program) -> None:
    """The program's comment: ``forward_or_drop`` counts forwarded and dropped packets."""
    pipeline, path = path_of(counter_program)
    table = pipeline.tables["pipe.SwitchIngress.forward_or_drop"]
    fwd = TableEntry(match=(Exact(mac("00:11:22:33:44:55")),), action=ActionCall("pipe.SwitchIngress.set_port", (3,)))
    drop = TableEntry(match=(Exact(mac("00:11:22:33:44:66")),), action=ActionCall("pipe.SwitchIngress.drop", ()))
    table.insert(fwd)
    table.insert(drop)
    assert path.process(tcp_packet(), 1) == [(3, tcp_packet())]
    assert path.process(tcp_packet(dst="00:11:22:33:44:66"), 1) == []
    assert (fwd.packets, drop.packets) == (1, 1)


def test_tna_exact_match_forwards_routes_and_nats_with_a_fresh_checksum() -> None:
    """PTF tests of tna_exact_match: ``forward`` hits send the packet to the entry's port, a miss
    drops it (its const default ``miss(1)`` sets drop_ctl); ``ipRoute`` (vrf 0, IPv4 dst) ``route``
    rewrites the MACs, ``nat`` the addresses, and the deparser's Checksum rewrites the IPv4
    checksum; both count in the direct counter."""
    program = compile_example("tna_exact_match")
    pipeline, path = path_of(program)
    pipeline.tables["pipe.SwitchIngress.forward"].insert(
        TableEntry(match=(Exact(mac("00:11:22:33:44:55")),), action=ActionCall("pipe.SwitchIngress.hit", (4,))))
    pkt = tcp_packet()
    assert path.process(pkt, 1) == [(4, pkt)]
    assert path.process(tcp_packet(dst="00:11:22:33:44:66"), 1) == []              # forward miss: drop_ctl
    routes = pipeline.tables["pipe.SwitchIngress.ipRoute"]
    route = TableEntry(match=(Exact(0), Exact(0xC0A80001)),
                       action=ActionCall("pipe.SwitchIngress.route", (mac("00:aa:00:00:00:01"), mac("00:bb:00:00:00:02"), 6)))
    nat = TableEntry(match=(Exact(0), Exact(0xC0A80009)),
                     action=ActionCall("pipe.SwitchIngress.nat", (0x0A000001, 0x0A000002, 7)))
    routes.insert(route)
    routes.insert(nat)
    ((port, out),) = path.process(tcp_packet(dst="00:11:22:33:44:66"), 1)        # route clears drop_ctl
    assert port == 6 and Ether(out).dst == "00:bb:00:00:00:02" and Ether(out).src == "00:aa:00:00:00:01"
    ((port, out),) = path.process(tcp_packet(ip_dst="192.168.0.9"), 1)
    got = Ether(out)[IP]
    assert port == 7 and (got.src, got.dst) == ("10.0.0.1", "10.0.0.2")
    want = IP(bytes(got))
    del want.chksum
    assert got.chksum == IP(bytes(want)).chksum                                # recomputed in the deparser
    assert (route.packets, nat.packets) == (1, 1)


def test_tna_digest_learns_unknown_sources_and_dmac_digests() -> None:
    """PTF tests of tna_digest: an unknown source MAC (smac miss) or a known one on another port
    sends ``digest_a`` (dst, ingress port, src); a ``dmac_hit_with_digest`` entry sends
    ``digest_b`` (dst, f) instead; a known source on its own port sends nothing."""
    program = compile_example("tna_digest")
    pipeline, path = path_of(program)
    seen = []
    pipeline.digest_sink = lambda name, values: seen.append((name, values))
    smac = pipeline.tables["pipe.SwitchIngress.smac"]
    dmac = pipeline.tables["pipe.SwitchIngress.dmac"]
    smac.insert(TableEntry(match=(Exact(mac("11:33:55:77:99:00")),), action=ActionCall("pipe.SwitchIngress.smac_hit", (1,))))
    dmac.insert(TableEntry(match=(Exact(mac("00:11:22:33:44:55")),), action=ActionCall("pipe.SwitchIngress.dmac_hit", (3,))))
    dmac.insert(TableEntry(match=(Exact(mac("00:11:22:33:44:77")),),
                           action=ActionCall("pipe.SwitchIngress.dmac_hit_with_digest", (3, 0xABCDEF))))
    assert path.process(tcp_packet(), 1) == [(3, tcp_packet())]                  # known source, own port
    path.process(tcp_packet(src="11:33:55:77:99:01"), 1)                        # unknown source
    path.process(tcp_packet(), 2)                                               # known source, moved
    path.process(tcp_packet(dst="00:11:22:33:44:77", src="11:33:55:77:99:01"), 1)
    assert seen == [("digest_a_t", (mac("00:11:22:33:44:55"), 1, mac("11:33:55:77:99:01"))),
                    ("digest_a_t", (mac("00:11:22:33:44:55"), 2, mac("11:33:55:77:99:00"))),
                    ("digest_b_t", (mac("00:11:22:33:44:77"), 0xABCDEF))]


@pytest.mark.parametrize("arch", ["tna", "t2na"])
def test_tna_register_indirect_and_direct_registers_as_its_ptf_test_checks(arch) -> None:
    """PTF IndirectRegisterSyncTest and DirectRegisterSyncTest of tna_register: ``test_reg`` cells
    start at the program's ``initial_value={5, 7}`` (first, second) and go back to it when cleared;
    after the control plane writes (lo, hi) into the cell ``reg_match`` points at, n packets
    (returned on their ingress port, unchanged) leave (lo + n, hi + 100 n) (``test_asn`` 1,
    ``test_cdn`` 100000000); a ``reg_match_dir`` entry's DirectRegister cell counts (n, 100 n)."""
    pipeline, path = path_of(compile_example("tna_register", arch))
    reg = pipeline.registers["pipe.SwitchIngress.test_reg"]
    idx, lo, hi, n = 321, 1234, 56789, 7
    assert reg.read(idx) == (5 << 32) | 7 and reg.read(1023) == (5 << 32) | 7
    bools = pipeline.registers["pipe.SwitchIngress.bool_register_table"]
    assert bools.read(1) == 1                                       # its initial value 1
    for i in range(1024):                                            # the test fills it with 0
        bools.write(i, 0)
    reg.write(idx, (lo << 32) | hi)
    pipeline.tables["pipe.SwitchIngress.reg_match"].insert(
        TableEntry(match=(Exact(mac("00:11:22:33:44:55")),), action=ActionCall("pipe.SwitchIngress.register_action", (idx,))))
    direct = TableEntry(match=(Exact(mac("11:33:55:77:99:00")),),
                        action=ActionCall("pipe.SwitchIngress.register_action_dir", ()))
    pipeline.tables["pipe.SwitchIngress.reg_match_dir"].insert(direct)
    pkt = tcp_packet()
    for _ in range(n):
        assert path.process(pkt, 9) == [(9, pkt)]
    assert reg.read(idx) == ((lo + n) << 32) | (hi + 100 * n)
    assert pipeline.direct_registers["pipe.SwitchIngress.test_reg_dir"].read(direct) == (n << 32) | (100 * n)
    reg.reset()                                                     # the table cleared: initial values again
    assert reg.read(idx) == (5 << 32) | 7


def test_tna_checksum_rewrites_addresses_with_residual_checksums() -> None:
    """tna_checksum: the parser subtracts the fields ``translate`` may rewrite from the TCP/UDP
    checksums (``Checksum.subtract``) and keeps the residual (``get``); the deparser adds the new
    values back (``update``, UDP with ``zeros_as_ones``). A rewrite with update=true leaves every
    checksum correct, with update=false the old checksums stay; a zero UDP checksum stays zero; a
    packet whose IPv4 checksum is wrong is tagged with destination MAC 00:00:de:ad:be:ef."""
    from scapy.layers.inet import UDP

    pipeline, path = path_of(compile_example("tna_checksum"))
    pipeline.tables["pipe.SwitchIngress.output_port"].set_default(ActionCall("pipe.SwitchIngress.set_output_port", (2,)))
    translate = pipeline.tables["pipe.SwitchIngress.translate"]

    def rule(src: str, action: str, *args: int) -> None:
        a, b, c, d = (int(x) for x in src.split("."))
        translate.insert(TableEntry(match=(Exact((a << 24) | (b << 16) | (c << 8) | d),),
                                    action=ActionCall(f"pipe.SwitchIngress.{action}", args)))

    def checksums_ok(frame: bytes) -> bool:
        ip = Ether(frame)[IP]
        fresh = IP(bytes(ip))
        del fresh.chksum
        l4 = fresh.payload
        del l4.chksum
        fresh = IP(bytes(fresh))
        return ip.chksum == fresh.chksum and ip.payload.chksum == fresh.payload.chksum

    rule("10.0.0.1", "snat", 0xC0A80164, 1)               # 192.168.1.100, update
    rule("10.0.0.2", "sntpat", 0xC0A80165, 4321, 1)
    rule("10.0.0.3", "snupat", 0xC0A80166, 5353, 1)
    rule("10.0.0.4", "snat", 0xC0A80167, 0)               # no update: stale checksums
    for src, l4 in (("10.0.0.1", TCP(sport=1234, dport=80)), ("10.0.0.2", TCP(sport=1234, dport=80)),
                    ("10.0.0.3", UDP(sport=1234, dport=53))):
        pkt = bytes(Ether() / IP(src=src, dst="10.9.9.9") / l4 / b"payload-bytes-")
        ((port, out),) = path.process(pkt, 1)
        assert port == 2 and Ether(out)[IP].src.startswith("192.168.1.") and checksums_ok(out), src
        assert Ether(out).dst == Ether(pkt).dst                    # a correct checksum: not tagged
    ((_, out),) = path.process(bytes(Ether() / IP(src="10.0.0.3", dst="10.9.9.9") / UDP(sport=1, dport=53, chksum=0)), 1)
    assert Ether(out)[UDP].chksum == 0 and Ether(out)[UDP].sport == 5353
    ((_, out),) = path.process(bytes(Ether() / IP(src="10.0.0.4", dst="10.9.9.9") / TCP()), 1)
    assert Ether(out)[IP].src == "192.168.1.103" and not checksums_ok(out)
    bad = bytearray(bytes(Ether() / IP(src="10.0.0.9", dst="10.9.9.9") / TCP()))
    bad[24] ^= 0xFF                                          # the IPv4 header checksum
    ((_, out),) = path.process(bytes(bad), 1)
    assert Ether(out).dst == "00:00:de:ad:be:ef"


@pytest.mark.parametrize("arch", ["tna", "t2na"])
def test_tna_resubmit_carries_each_resubmit_type_to_the_second_pass(arch) -> None:
    """PTF NoResubmitTest and ResubmitTest of tna_resubmit: the port metadata table gives the
    packet's port (f1, f2), read with port_metadata_unpack; a ``pass_one`` entry with ``no_resub``
    forwards the first pass's rewrite (MACs 00:00:00:00:00:01 / 0); ``resub_a``/``_b``/``_c`` set
    resubmit types 0, 7 and 3 (0 is a type too: a resubmit happens because the program wrote it),
    the second pass finds the digest in place of the port metadata and its ``pass_two_type_*``
    entry counts ``cntr[1..3]``; the packet leaves unmodified (the first pass's rewrite is
    discarded); ``cntr[0]`` counts first passes."""
    pipeline, path = path_of(compile_example("tna_resubmit", arch))
    port, f1, f2 = 6, 0x11223344, 0x55667788
    path.set_port_metadata(port, f1.to_bytes(4, "big") + f2.to_bytes(4, "big"))
    t = pipeline.tables
    extra = () if arch == "tna" else (0x0102030405060708,)       # Tofino2's 64 more bits
    t["pipe.SwitchIngress.pass_two_type_a"].insert(TableEntry(
        match=tuple(Exact(v) for v in (0xA1, 0xA2A2, 0xA3A3A3A3) + extra), action=ActionCall("pipe.SwitchIngress.okay_a", ())))
    t["pipe.SwitchIngress.pass_two_type_b"].insert(TableEntry(
        match=tuple(Exact(v) for v in (0xB1,) + extra), action=ActionCall("pipe.SwitchIngress.okay_b", ())))
    t["pipe.SwitchIngress.pass_two_type_c"].insert(TableEntry(
        match=tuple(Exact(v) for v in (0xC1C1, 0xC2C2, 0xC3C3) + extra), action=ActionCall("pipe.SwitchIngress.okay_c", ())))
    pass_one = t["pipe.SwitchIngress.pass_one"]
    key = (Exact(port), Exact(f1), Exact(f2))
    more = extra[0] if extra else 0
    pkt = bytes(Ether(dst="00:01:02:03:04:05", src="00:06:07:08:09:0a") / IP(src="192.168.0.1", dst="192.168.0.2"))
    pass_one.insert(TableEntry(match=key, action=ActionCall("pipe.SwitchIngress.no_resub", ())))
    ((out_port, out),) = path.process(pkt, port)
    assert out_port == port and (Ether(out).dst, Ether(out).src) == ("00:00:00:00:00:01", "00:00:00:00:00:00")
    assert path.process(pkt, 5) == []                               # other port, no entry: drop
    cntr = pipeline.counters["pipe.SwitchIngress.cntr"].cells
    for i, (action, args) in enumerate((("resub_a", (0xA1, 0xA2A2, 0xA3A3A3A3, more)), ("resub_b", (0xB1, more)),
                                        ("resub_c", (0xC1C1, 0xC2C2, 0xC3C3, more))), 1):
        pass_one.modify(TableEntry(match=key, action=ActionCall(f"pipe.SwitchIngress.{action}", args)))
        assert path.process(pkt, port) == [(port, pkt)], action     # forwarded unmodified
        assert (cntr[0][0], cntr[i][0]) == (i, 1), action


def test_tna_meter_lpf_wred_compiles_with_its_filters() -> None:
    """tna_meter_lpf_wred's Lpf, DirectLpf, Wred and DirectWred are modelled (were refused)."""
    pipeline, _ = path_of(compile_example("tna_meter_lpf_wred"))
    assert sorted(n for n in pipeline.tna_externs if not n.endswith("$PORT_METADATA")) == [
        "pipe.SwitchIngress.direct_lpf", "pipe.SwitchIngress.simple_direct_wred", "pipe.SwitchIngress.simple_lpf",
        "pipe.SwitchIngress.simple_wred"]
