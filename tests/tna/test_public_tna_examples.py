"""Public TNA example programs, unchanged, compiled by p4sim and run against their own PTF checks.

Why it exists (issue 15): the TNA model should run Tofino programs other people wrote, not only
ours. tests/tna/public/ keeps open-p4studio's p4-examples (Apache-2.0; NOTICE names repository,
commit and path) exactly as published. Each test here repeats what the program's PTF test
(``test.py`` beside it, driven through BfRuntime on Intel's model) checks, with the entries
written into p4sim's tables and the packets built with scapy. Known difference, stated where it
shows: the Tofino model's byte counters include the 4-byte Ethernet FCS ("model adds 4 bytes of
CRC"), p4sim's frames carry none, so byte counts are the frame length. All seven run:
tna_counter, tna_exact_match, tna_digest, tna_register (also the second half of its PTF test:
the control plane rewrites its RegisterParams, here over P4Runtime), tna_checksum, tna_resubmit
(on Tofino1 and Tofino2 where it matters; its port metadata also from the control plane's
``$PORT_METADATA`` table over P4Runtime) and tna_meter_lpf_wred, whose PTF tests are
control-plane round trips of meter, LPF and WRED specs (no packets), run over P4Runtime.
Budget: about 30 s.
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


# ---- tna_meter_lpf_wred: its PTF tests are control-plane round trips, run here over P4Runtime --------

@pytest.fixture(scope="module")
def lpf_wred_rig():
    """A p4sim switch serving the program over P4Runtime, pushed as a device config laid out as
    the examples are (``tna_meter_lpf_wred/`` beside ``common/``)."""
    rig = served("tna_meter_lpf_wred")
    yield rig
    rig.close()


def served(name: str):
    """A P4Runtime rig (p4sim switch, gRPC server, primary client) running public program
    ``name`` from its own directory, ``common/`` on the include path as the SDE's build has it."""
    from p4sim.tna.program import compile_tna
    from tests.dataplane.p4rt_rig import Rig

    return Rig(compile_tna(str(PUBLIC / name / f"{name}.p4"), [str(PUBLIC)], "tna"))


class P4:
    """Ids of the served P4Info by name, and the messages tna_meter_lpf_wred's tests need."""

    def __init__(self, rig) -> None:
        self.rig = rig
        self.info, _ = rig.client.get_pipeline()

    def table(self, name: str) -> int:
        return next(t.preamble.id for t in self.info.tables if t.preamble.name == f"pipe.SwitchIngress.{name}")

    def action(self, name: str) -> int:
        return next(a.preamble.id for a in self.info.actions if a.preamble.name == f"pipe.SwitchIngress.{name}")

    def extern(self, type_id: int, name: str) -> int:
        return next(i.preamble.id for e in self.info.externs if e.extern_type_id == type_id for i in e.instances
                    if i.preamble.name == f"pipe.SwitchIngress.{name}")

    def meter(self, name: str) -> int:
        return next(m.preamble.id for m in self.info.meters if m.preamble.name == f"pipe.SwitchIngress.{name}")

    def entry(self, table: str, key: int, width: int, action: str | None = None, *params: tuple[int, int]):
        from p4.v1 import p4runtime_pb2

        e = p4runtime_pb2.TableEntry(table_id=self.table(table))
        e.match.add(field_id=1).exact.value = key.to_bytes(width, "big")
        if action is not None:
            e.action.action.action_id = self.action(action)
            for pid, (value, nbytes) in enumerate(params, 1):
                e.action.action.params.add(param_id=pid, value=value.to_bytes(nbytes, "big"))
        return e

    def write(self, kind: int, entities) -> None:
        from p4.v1 import p4runtime_pb2

        updates = []
        for entity in entities:
            u = p4runtime_pb2.Update(type=kind)
            u.entity.CopyFrom(entity)
            updates.append(u)
        self.rig.client.write(updates)

    def read(self, entity) -> list:
        return list(self.rig.client.read([entity]))


def entity(**kw):
    from p4.v1 import p4runtime_pb2

    return p4runtime_pb2.Entity(**kw)


def extern_entity(type_id: int, extern_id: int, message=None):
    from p4.v1 import p4runtime_pb2

    e = p4runtime_pb2.ExternEntry(extern_type_id=type_id, extern_id=extern_id)
    if message is not None:
        e.entry.Pack(message)
    return entity(extern_entry=e)


def unpacked(got, cls):
    out = cls()
    assert got.extern_entry.entry.Unpack(out)
    return out


def macs(rng, n: int) -> list[int]:
    return rng.sample(range(1, 1 << 48), n)


def test_tna_meter_lpf_wred_meters_as_its_ptf_tests_check(lpf_wred_rig) -> None:
    """IndirectMeterGetTest / IndirectMeterIteratorTest: 500 cells of ``meter`` (BYTES) get
    random CIR/PIR/CBS/PBS (kbit/s and kbit, sent as P4Runtime's bytes/s and bytes) and read back
    as written; resetting them reads back unconfigured (the driver's default: unmetered).
    DirectMeterDefaultSpecTest: a ``direct_meter_color`` entry added without a meter spec reads
    back without one. DirectMeterTest: n entries with random specs read back. IndirectMeterTest:
    ``meter_color`` entries keep their ``meter_idx``."""
    import random

    from p4.v1 import p4runtime_pb2

    Update = p4runtime_pb2.Update
    p4, rng = P4(lpf_wred_rig), random.Random(5)
    meter_id = p4.meter("meter")
    configs = {}
    cells = []
    for x in range(500):
        cir = rng.randint(1, 1000) * 1000
        cbs = rng.randint(1, 100) * 1000
        cfg = p4runtime_pb2.MeterConfig(cir=cir * 125, cburst=cbs * 125, pir=cir * rng.randint(1, 5) * 125,
                                        pburst=cbs * rng.randint(1, 5) * 125)
        configs[x] = cfg
        cell = p4runtime_pb2.MeterEntry(meter_id=meter_id, config=cfg)
        cell.index.index = x
        cells.append(entity(meter_entry=cell))
    p4.write(Update.MODIFY, cells)
    got = p4.read(entity(meter_entry=p4runtime_pb2.MeterEntry(meter_id=meter_id)))
    assert [g.meter_entry.index.index for g in got] == list(range(500))
    assert all(g.meter_entry.config == configs[g.meter_entry.index.index] for g in got)
    p4.write(Update.MODIFY, [entity(meter_entry=p4runtime_pb2.MeterEntry(meter_id=meter_id, index=c.meter_entry.index))
                             for c in cells])
    assert not any(g.meter_entry.HasField("config")
                   for g in p4.read(entity(meter_entry=p4runtime_pb2.MeterEntry(meter_id=meter_id))))

    plain = p4.entry("direct_meter_color", 0x001122334455, 6, "set_color_direct")
    p4.write(Update.INSERT, [entity(table_entry=plain)])
    (got,) = p4.read(entity(direct_meter_entry=p4runtime_pb2.DirectMeterEntry(table_entry=p4.entry(
        "direct_meter_color", 0x001122334455, 6))))
    assert not got.direct_meter_entry.HasField("config")
    p4.write(Update.DELETE, [entity(table_entry=plain)])

    specs = {}
    entries = []
    for mac_ in macs(rng, 40):
        e = p4.entry("direct_meter_color", mac_, 6, "set_color_direct")
        cir = rng.randint(1, 200) * 1000
        e.meter_config.cir, e.meter_config.pir = cir * 125, (cir + rng.randint(1, 20) * 1000) * 125
        e.meter_config.cburst, e.meter_config.pburst = cir * 4 * 125, cir * 8 * 125
        specs[mac_] = e.meter_config
        entries.append(entity(table_entry=e))
    p4.write(Update.INSERT, entries)
    got = p4.read(entity(direct_meter_entry=p4runtime_pb2.DirectMeterEntry(
        table_entry=p4runtime_pb2.TableEntry(table_id=p4.table("direct_meter_color")))))
    assert {int.from_bytes(g.direct_meter_entry.table_entry.match[0].exact.value, "big"): g.direct_meter_entry.config
            for g in got} == specs
    p4.write(Update.DELETE, entries)

    indices = rng.sample(range(1, 101), 40)
    entries = [entity(table_entry=p4.entry("meter_color", m, 6, "set_color", (i, 2)))
               for m, i in zip(macs(rng, 40), indices, strict=True)]
    p4.write(Update.INSERT, entries)
    got = p4.rig.client.read_table_entries(p4.table("meter_color"))
    assert sorted(int.from_bytes(e.action.action.params[0].value, "big") for e in got) == sorted(indices)
    p4.write(Update.DELETE, entries)


def lpf_spec(rng, kind: int | None = None):
    from p4sim.tna.extern_messages import LPF_TYPE_RATE, LPF_TYPE_SAMPLE, LpfSpecMsg

    gain = round(rng.uniform(1, 1000), 2)
    return LpfSpecMsg(type=kind if kind is not None else rng.choice([LPF_TYPE_RATE, LPF_TYPE_SAMPLE]),
                      gain_time_constant_ns=gain, decay_time_constant_ns=gain,
                      output_scale_down_factor=rng.randint(1, 31))


def wred_spec(rng):
    from p4sim.tna.extern_messages import WredSpecMsg

    low = rng.randint(20, 500)
    return WredSpecMsg(time_constant_ns=round(rng.uniform(1, 1000), 2), min_thresh_cells=low,
                       max_thresh_cells=low + rng.randint(50, 200), max_probability=round(rng.uniform(0.1, 1), 2))


def test_tna_meter_lpf_wred_lpfs_as_its_ptf_tests_check(lpf_wred_rig) -> None:
    """IndirectLPFTest / IndirectLPFIteratorTest: ``lpf_match_tbl`` entries keep their
    ``lpf_idx``; 500 ``simple_lpf`` cells get random RATE/SAMPLE specs (time constants, scale
    1..31) and read back as written, then reset to the default (SAMPLE, 0 ns, 0 ns, scale 0).
    DirectLPFTest: ``direct_lpf_match_tbl`` entries get RATE specs that read back per entry."""
    import random

    from p4.v1 import p4runtime_pb2

    from p4sim.tna import extern_messages as xm

    Update = p4runtime_pb2.Update
    p4, rng = P4(lpf_wred_rig), random.Random(6)
    lpf_id = p4.extern(xm.LPF_TYPE_ID, "simple_lpf")
    indices = rng.sample(range(1, 101), 30)
    entries = [entity(table_entry=p4.entry("lpf_match_tbl", ip, 4, "set_rate", (i, 2)))
               for ip, i in zip(rng.sample(range(1 << 24, 1 << 32), 30), indices, strict=True)]
    p4.write(Update.INSERT, entries)
    got = p4.rig.client.read_table_entries(p4.table("lpf_match_tbl"))
    assert sorted(int.from_bytes(e.action.action.params[0].value, "big") for e in got) == sorted(indices)
    p4.write(Update.DELETE, entries)

    specs = {x: lpf_spec(rng) for x in range(500)}
    cells = []
    for x, spec in specs.items():
        cell = xm.LpfEntry(spec=spec)
        cell.index.index = x
        cells.append(extern_entity(xm.LPF_TYPE_ID, lpf_id, cell))
    p4.write(Update.MODIFY, cells)
    got = [unpacked(g, xm.LpfEntry) for g in p4.read(extern_entity(xm.LPF_TYPE_ID, lpf_id))]
    assert [(g.index.index, g.spec) for g in got] == list(specs.items())
    resets = []
    for x in specs:
        cell = xm.LpfEntry()
        cell.index.index = x
        resets.append(extern_entity(xm.LPF_TYPE_ID, lpf_id, cell))
    p4.write(Update.MODIFY, resets)
    got = [unpacked(g, xm.LpfEntry) for g in p4.read(extern_entity(xm.LPF_TYPE_ID, lpf_id))]
    assert len(got) == 500 and all(g.spec == xm.LpfSpecMsg() for g in got)          # SAMPLE, 0, 0, 0

    dlpf_id = p4.extern(xm.DIRECT_LPF_TYPE_ID, "direct_lpf")
    ips = rng.sample(range(1 << 24, 1 << 32), 30)
    p4.write(Update.INSERT, [entity(table_entry=p4.entry("direct_lpf_match_tbl", ip, 4, "set_rate_direct"))
                             for ip in ips])
    specs = {ip: lpf_spec(rng, xm.LPF_TYPE_RATE) for ip in ips}
    p4.write(Update.MODIFY, [extern_entity(xm.DIRECT_LPF_TYPE_ID, dlpf_id, xm.LpfEntry(
        table_entry=p4.entry("direct_lpf_match_tbl", ip, 4), spec=spec)) for ip, spec in specs.items()])
    got = [unpacked(g, xm.LpfEntry) for g in p4.read(extern_entity(xm.DIRECT_LPF_TYPE_ID, dlpf_id))]
    assert {int.from_bytes(g.table_entry.match[0].exact.value, "big"): g.spec for g in got} == specs
    p4.write(Update.DELETE, [entity(table_entry=p4.entry("direct_lpf_match_tbl", ip, 4)) for ip in ips])


def test_tna_meter_lpf_wred_wreds_as_its_ptf_tests_check(lpf_wred_rig) -> None:
    """IndirectWREDTest: ``wred_match_tbl`` entries keep their ``wred_idx``.
    IndirectWREDIteratorTest: 500 ``simple_wred`` cells get random specs (time constant,
    min/max thresholds in cells, max probability) that read back as written, then reset to the
    driver's default (thresholds 0xff000000, probability 0). DirectWREDTest:
    ``wred_direct_match_tbl`` entries get random specs that read back per entry."""
    import random

    from p4.v1 import p4runtime_pb2

    from p4sim.tna import extern_messages as xm

    Update = p4runtime_pb2.Update
    p4, rng = P4(lpf_wred_rig), random.Random(7)
    indices = rng.sample(range(1, 101), 30)
    entries = [entity(table_entry=p4.entry("wred_match_tbl", ip, 4, "mark_wred", (i, 2)))
               for ip, i in zip(rng.sample(range(1 << 24, 1 << 32), 30), indices, strict=True)]
    p4.write(Update.INSERT, entries)
    got = p4.rig.client.read_table_entries(p4.table("wred_match_tbl"))
    assert sorted(int.from_bytes(e.action.action.params[0].value, "big") for e in got) == sorted(indices)
    p4.write(Update.DELETE, entries)

    wred_id = p4.extern(xm.WRED_TYPE_ID, "simple_wred")
    specs = {x: wred_spec(rng) for x in range(500)}
    cells = []
    for x, spec in specs.items():
        cell = xm.WredEntry(spec=spec)
        cell.index.index = x
        cells.append(extern_entity(xm.WRED_TYPE_ID, wred_id, cell))
    p4.write(Update.MODIFY, cells)
    got = [unpacked(g, xm.WredEntry) for g in p4.read(extern_entity(xm.WRED_TYPE_ID, wred_id))]
    assert [(g.index.index, g.spec) for g in got] == list(specs.items())
    resets = []
    for x in specs:
        cell = xm.WredEntry()
        cell.index.index = x
        resets.append(extern_entity(xm.WRED_TYPE_ID, wred_id, cell))
    p4.write(Update.MODIFY, resets)
    got = [unpacked(g, xm.WredEntry).spec for g in p4.read(extern_entity(xm.WRED_TYPE_ID, wred_id))]
    assert len(got) == 500 and all((s.time_constant_ns, s.min_thresh_cells, s.max_thresh_cells, s.max_probability)
                                   == (0, 0xFF000000, 0xFF000000, 0) for s in got)

    dwred_id = p4.extern(xm.DIRECT_WRED_TYPE_ID, "simple_direct_wred")
    ips = rng.sample(range(1 << 24, 1 << 32), 60)
    p4.write(Update.INSERT, [entity(table_entry=p4.entry("wred_direct_match_tbl", ip, 4, "mark_direct_wred"))
                             for ip in ips])
    specs = {ip: wred_spec(rng) for ip in ips}
    p4.write(Update.MODIFY, [extern_entity(xm.DIRECT_WRED_TYPE_ID, dwred_id, xm.WredEntry(
        table_entry=p4.entry("wred_direct_match_tbl", ip, 4), spec=spec)) for ip, spec in specs.items()])
    got = [unpacked(g, xm.WredEntry) for g in p4.read(extern_entity(xm.DIRECT_WRED_TYPE_ID, dwred_id))]
    assert {int.from_bytes(g.table_entry.match[0].exact.value, "big"): g.spec for g in got} == specs
    p4.write(Update.DELETE, [entity(table_entry=p4.entry("wred_direct_match_tbl", ip, 4)) for ip in ips])


# ---- RegisterParam and the port-metadata table over P4Runtime -------------------------------------

def param_update(param_id: int, value: bytes, kind: int | None = None):
    from p4.v1 import p4runtime_pb2

    from p4sim.tna import extern_messages as xm

    cell = xm.RegisterParamEntry()
    cell.data.bitstring = value
    update = p4runtime_pb2.Update(type=kind or p4runtime_pb2.Update.MODIFY)
    update.entity.CopyFrom(extern_entity(xm.REGISTER_PARAM_TYPE_ID, param_id, cell))
    return update


def test_tna_register_register_params_are_written_by_the_control_plane() -> None:
    """Second half of tna_register's IndirectRegisterSyncTest, over P4Runtime: with ``test_reg``
    cell (lo, hi) and n packets the cell becomes (lo + n, hi + 100 n) (``test_asn`` 1,
    ``test_cdn`` 100000000); after the control plane sets ``test_cdn`` 100 and ``test_asn`` 10,
    m more packets leave (lo + n + 10 m, hi + 100 n) (hi is no longer below cdn); the reset
    writes the initial values back. P4Info lists both as bf-p4c does (type 0x8D, the register
    their RegisterAction runs on as ``table_id``). Bad writes change nothing."""
    import grpc
    from p4.v1 import p4runtime_pb2

    from controller.errors import WriteError
    from p4sim.tna import extern_messages as xm

    rig = served("tna_register")
    try:
        p4 = P4(rig)
        (ext,) = [e for e in p4.info.externs if e.extern_type_id == xm.REGISTER_PARAM_TYPE_ID]
        assert ext.extern_type_name == "RegisterParam"
        params = {i.preamble.name.rsplit(".", 1)[1]: i for i in ext.instances}
        reg_id = next(r.preamble.id for r in p4.info.registers if r.preamble.name == "pipe.SwitchIngress.test_reg")
        for name, initial in (("test_asn", 1), ("test_cdn", 100000000)):
            info = xm.BarefootRegisterParam()
            assert params[name].info.Unpack(info)
            assert (info.initial_value, info.table_id, info.data_field_name) == (initial, reg_id, f"SwitchIngress.{name}")
            assert info.type_spec.bitstring.bit.bitwidth == 32
        asn, cdn = params["test_asn"].preamble.id, params["test_cdn"].preamble.id

        def value(param_id: int) -> int:
            (got,) = p4.read(extern_entity(xm.REGISTER_PARAM_TYPE_ID, param_id))
            return int.from_bytes(unpacked(got, xm.RegisterParamEntry).data.bitstring, "big")

        def cell(idx: int) -> tuple[int, int]:
            entry = p4runtime_pb2.RegisterEntry(register_id=reg_id)
            entry.index.index = idx
            (got,) = p4.read(entity(register_entry=entry))
            v = int.from_bytes(got.register_entry.data.bitstring, "big")
            return v >> 32, v & 0xFFFFFFFF

        assert (value(asn), value(cdn)) == (1, 100000000)
        # as the PTF test: bool_register_table filled with 0 (its RegisterAction then answers
        # ~0 = 1: bypass_egress), here one write without an index (every cell)
        bools = p4runtime_pb2.RegisterEntry(register_id=next(
            r.preamble.id for r in p4.info.registers if r.preamble.name == "pipe.SwitchIngress.bool_register_table"))
        bools.data.bitstring = b"\x00"
        p4.write(p4runtime_pb2.Update.MODIFY, [entity(register_entry=bools)])
        idx, lo, hi = 321, 1234, 56789
        write = p4runtime_pb2.RegisterEntry(register_id=reg_id)
        write.index.index = idx
        write.data.bitstring = ((lo << 32) | hi).to_bytes(6, "big")             # canonical: no leading zero
        p4.write(p4runtime_pb2.Update.MODIFY, [entity(register_entry=write)])
        p4.write(p4runtime_pb2.Update.INSERT, [entity(table_entry=p4.entry(
            "reg_match", mac("00:11:22:33:44:55"), 6, "register_action", (idx, 4)))])
        pkt = tcp_packet()
        for _ in range(3):
            assert rig.send_and_collect(pkt, 5.0, port=1) == [pkt]
        assert cell(idx) == (lo + 3, hi + 300)
        rig.client.write([param_update(cdn, (100).to_bytes(1, "big")), param_update(asn, (10).to_bytes(1, "big"))])
        assert (value(asn), value(cdn)) == (10, 100)
        for _ in range(4):
            assert rig.send_and_collect(pkt, 5.0, port=1) == [pkt]
        assert cell(idx) == (lo + 3 + 40, hi + 300)
        for update, reason in ((param_update(asn, b"\x05", p4runtime_pb2.Update.INSERT), "can only be modified"),
                               (param_update(asn, (1 << 32).to_bytes(5, "big")), "does not fit in 32 bits"),
                               (param_update(asn + 1 if asn + 1 != cdn else asn + 2, b"\x05"), "unknown RegisterParam id")):
            with pytest.raises(WriteError, match=reason):
                rig.client.write([update])
        request = p4runtime_pb2.WriteRequest(device_id=rig.client.device_id,
                                             atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
        request.election_id.low = rig.client.election_id
        request.updates.extend([param_update(asn, b"\x07"), param_update(cdn, b"\x01\x00\x00\x00\x00")])
        with pytest.raises(grpc.RpcError):
            rig.client._require_stub().Write(request)
        assert (value(asn), value(cdn)) == (10, 100)                    # the batch was undone
        rig.client.write([param_update(cdn, (100000000).to_bytes(4, "big")), param_update(asn, b"\x01")])
        assert (value(asn), value(cdn)) == (1, 100000000)
    finally:
        rig.close()


def port_md_update(pm_id: int, kind: int, port: int, data: bytes | None = None):
    from p4.v1 import p4runtime_pb2

    from p4sim.tna import extern_messages as xm

    entry = xm.PortMetadataEntry(ingress_port=port)
    if data is not None:
        entry.data.bitstring = data
    update = p4runtime_pb2.Update(type=kind)
    update.entity.CopyFrom(extern_entity(xm.PORT_METADATA_TYPE_ID, pm_id, entry))
    return update


def test_tna_resubmit_port_metadata_comes_from_the_control_plane_table() -> None:
    """tna_resubmit's NoResubmitTest with the port metadata written over P4Runtime into the
    ``$PORT_METADATA`` table (bf-p4c: type 0x90, keyed by ``ig_intr_md`` ingress port, data the
    ``port_metadata`` header): the parser's ``port_metadata_unpack`` finds (f1, f2), ``pass_one``
    (port, f1, f2) hits ``no_resub`` and the packet leaves port 1 with the MAC rewrite. Another
    f2 (MODIFY) or no entry (DELETE: zeros) misses ``pass_one``: dropped. Writes to a present or
    absent port, an out-of-range port or too wide data are refused with the reason; an atomic
    batch that fails leaves the table as it was."""
    import grpc
    from p4.v1 import p4runtime_pb2

    from controller.errors import WriteError
    from p4sim.tna import extern_messages as xm

    Update = p4runtime_pb2.Update
    rig = served("tna_resubmit")
    try:
        p4 = P4(rig)
        (ext,) = [e for e in p4.info.externs if e.extern_type_id == xm.PORT_METADATA_TYPE_ID]
        (inst,) = ext.instances
        assert (ext.extern_type_name, inst.preamble.name) == ("PortMetadata", "pipe.SwitchIngressParser.$PORT_METADATA")
        info = xm.BarefootPortMetadata()
        assert inst.info.Unpack(info) and info.key_name == "ig_intr_md"
        assert info.type_spec.header.name == "port_metadata"
        assert [m.name for m in p4.info.type_info.headers["port_metadata"].members] == ["f1", "f2"]
        pm = inst.preamble.id

        def table() -> dict[int, int]:
            got = p4.read(extern_entity(xm.PORT_METADATA_TYPE_ID, pm))
            return {e.ingress_port: int.from_bytes(e.data.bitstring, "big")
                    for e in (unpacked(g, xm.PortMetadataEntry) for g in got)}

        f1, f2 = 0x11223344, 0x55667788
        key = p4runtime_pb2.TableEntry(table_id=p4.table("pass_one"))
        for fid, (v, n) in enumerate(((1, 2), (f1, 4), (f2, 4)), 1):
            key.match.add(field_id=fid).exact.value = v.to_bytes(n, "big")
        key.action.action.action_id = p4.action("no_resub")
        p4.write(Update.INSERT, [entity(table_entry=key)])
        pkt = bytes(Ether(dst="00:01:02:03:04:05", src="00:06:07:08:09:0a") / IP(src="192.168.0.1", dst="192.168.0.2"))
        assert rig.send_and_collect(pkt, 1.0, port=1) == []                     # zeros: pass_one misses
        rig.client.write([port_md_update(pm, Update.INSERT, 1, ((f1 << 32) | f2).to_bytes(8, "big"))])
        assert table() == {1: (f1 << 32) | f2}
        (out,) = rig.send_and_collect(pkt, 5.0, port=1)
        assert (Ether(out).dst, Ether(out).src) == ("00:00:00:00:00:01", "00:00:00:00:00:00")
        rig.client.write([port_md_update(pm, Update.MODIFY, 1, ((f1 << 32) | 9).to_bytes(8, "big"))])
        assert rig.send_and_collect(pkt, 1.0, port=1) == []
        cases = [(port_md_update(pm, Update.INSERT, 1, b"\x01"), "ingress port 1 already has an entry"),
                 (port_md_update(pm, Update.MODIFY, 2, b"\x01"), "no entry for ingress port 2"),
                 (port_md_update(pm, Update.DELETE, 2), "no entry for ingress port 2"),
                 (port_md_update(pm, Update.INSERT, 600, b"\x01"), "ingress port 600 outside 0..511"),
                 (port_md_update(pm, Update.INSERT, 3, bytes([1] * 9)), "does not fit in 64 bits"),
                 (port_md_update(pm, Update.INSERT, 3), "data must be a bitstring")]
        for update, reason in cases:
            with pytest.raises(WriteError, match=reason):
                rig.client.write([update])
        request = p4runtime_pb2.WriteRequest(device_id=rig.client.device_id,
                                             atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
        request.election_id.low = rig.client.election_id
        request.updates.extend([port_md_update(pm, Update.INSERT, 3, b"\x03"), port_md_update(pm, Update.DELETE, 1),
                                port_md_update(pm, Update.MODIFY, 4, b"\x04")])
        with pytest.raises(grpc.RpcError):
            rig.client._require_stub().Write(request)
        assert table() == {1: (f1 << 32) | 9}                                   # port 3 gone, port 1 back
        rig.client.write([port_md_update(pm, Update.DELETE, 1)])
        assert table() == {}
        assert rig.send_and_collect(pkt, 1.0, port=1) == []
    finally:
        rig.close()


def test_tna_meter_lpf_wred_compiles_with_its_filters() -> None:
    """tna_meter_lpf_wred's Lpf, DirectLpf, Wred and DirectWred are modelled (were refused)."""
    pipeline, _ = path_of(compile_example("tna_meter_lpf_wred"))
    assert sorted(n for n in pipeline.tna_externs if not n.endswith("$PORT_METADATA")) == [
        "pipe.SwitchIngress.direct_lpf", "pipe.SwitchIngress.simple_direct_wred", "pipe.SwitchIngress.simple_lpf",
        "pipe.SwitchIngress.simple_wred"]
