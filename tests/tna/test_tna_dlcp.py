"""p4src/tofino/dlcp.p4 runs on p4sim's TNA model (Tofino1 and Tofino2), packets built with scapy.

What it shows: the architecture plumbing a TNA program depends on -- intrinsic metadata and port
metadata in front of the packet, the bridged header between the pipes, qid as the TM queue,
drop_ctl, the deparser checksum, Register/RegisterAction, Counter, Hash -- by the program's own
observable behaviour.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4sim.v1model.pipeline import QueueMetadata
from tests.dataplane.packets import dlcp_packet, host_ip, routed, udp_packet
from tests.dataplane.tables import DlcpTables

ROOT = Path(__file__).resolve().parents[2]
TOFINO = str(ROOT / "p4src" / "tofino" / "dlcp.p4")
INCLUDE = [str(ROOT / "p4src" / "include")]


def ip_int(addr: str) -> int:
    a, b, c, d = (int(x) for x in addr.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


@pytest.fixture(scope="module", params=["tna", "t2na"])
def program(request):
    from p4sim.tna.program import compile_tna

    return compile_tna(TOFINO, INCLUDE, request.param)


@pytest.fixture
def switch(program):
    from p4sim.tna.pipeline import TnaPath

    pipeline = program.instantiate()
    tables = DlcpTables(pipeline)
    for port in range(2, 7):
        tables.nexthop(port, port)
        tables.route(ip_int(host_ip(port)) & 0xFFFFFF00, 24, port)
    return TnaPath(pipeline, cpu_port=192), tables


def test_arch_and_target_macro(program) -> None:
    assert program.p4info.pkg_info.arch == program.arch
    # Tofino2 only: the ghost-thread register and table exist (selected by __TARGET_TOFINO__ == 2)
    assert ("ghost_qdepth" in program.instantiate().registers) == (program.arch == "t2na")


def test_routed_udp_is_rewritten_and_checksummed(switch) -> None:
    path, _tables = switch
    data = udp_packet(dst_port=3, ttl=9, dscp=10)
    sent = path.process(data, 1)
    assert sent == [(3, routed(data, 3))]     # bridged header gone, MACs/TTL/checksum as the spec says


def test_qid_is_the_tm_queue_and_dscp_mirrors_it(switch) -> None:
    path, tables = switch
    tables.priority_rule(6, 10, is_dlcp=(1, 1), layer_class=(7, 7))
    out = path.ingress(dlcp_packet(layer_class=7), 1, 0)
    assert [(q.egress_port, q.priority) for q in out] == [(2, 6)]
    assert [q.priority for q in path.ingress(udp_packet(), 1, 0)] == [0]
    (port, data), = path.process(dlcp_packet(layer_class=7, ecn=1), 1)
    assert port == 2 and Ether(data)[IP].tos == (6 << 5) | 1 and Ether(data)[UDP].dport == 9290


def test_ttl_one_and_unrouted_are_dropped_by_drop_ctl(switch) -> None:
    path, _tables = switch
    assert path.process(udp_packet(ttl=1), 1) == []
    assert path.process(udp_packet(dst_port=40), 1) == []
    assert path.drops["ingress_drop"] == 2


def test_bad_checksum_and_truncated_dlcp(switch) -> None:
    path, tables = switch
    data = bytearray(udp_packet())
    data[24] ^= 0xFF                       # IPv4 header checksum byte
    assert path.process(bytes(data), 1) == []
    # truncated DLCP on the DLCP port: the parser error reaches ingress as parser_err and is counted
    assert path.process(dlcp_packet()[:50], 1) == []
    assert tables.pipeline.counters["DlcpIngress.malformed"].cells[0][0] == 1


def test_egress_records_depth_with_register_action(switch, program) -> None:
    path, tables = switch
    tables.priority_rule(3, 10, is_dlcp=(1, 1))
    (qp,) = path.ingress(dlcp_packet(), 1, 0)
    path.egress(qp, QueueMetadata(0, 7, 11, 0, qp.priority), 0)
    reg = tables.pipeline.registers["queue_depth_reg"]
    assert reg.read(2 * 8 + 3) == 11                  # deq_qdepth of (port 2, queue 3)
    tx = tables.pipeline.counters["DlcpEgress.port_queue_tx"]
    assert tx.cells[2 * 8 + 3][0] == 1


def test_threshold_drop_and_ecn_never_critical(switch, program) -> None:
    path, tables = switch
    tables.priority_rule(4, 10, is_dlcp=(1, 1))
    tables.thresholds(4, 2, 10, 5)
    if program.arch == "t2na":      # Tofino2: ingress reads the ghost thread's queue length
        tables._insert("DlcpIngress.ghost_queue_base", (tables.rt.Exact(2),),
                       "pipe.DlcpIngress.selective_drop.set_ghost_queue_base", (16,))
        path.ghost(16 + 4, 50)
    assert path.process(dlcp_packet(mag_class=2), 1, qdepth=50) == []
    (port, data), = path.process(dlcp_packet(mag_class=2, flags=0x80), 1, qdepth=50)   # critical
    assert port == 2
    (port, data), = path.process(dlcp_packet(mag_class=2, flags=0x80 | 0x08, ecn=1), 1, qdepth=50)
    assert Ether(data)[IP].tos & 3 == 3          # ECN-capable critical: marked CE, not dropped
    assert tables.pipeline.counters["DlcpIngress.selective_drops"].cells[4 * 16 + 2][0] == 1
    # below the thresholds nothing happens
    if program.arch == "t2na":
        path.ghost(16 + 4, 1)
    (port, data), = path.process(dlcp_packet(mag_class=2, flags=0x08, ecn=1), 1, qdepth=1)
    assert Ether(data)[IP].tos & 3 == 1


def test_p4info_names_are_bf_p4c_style_and_match_the_bmv2_contract(program) -> None:
    """Absolute @name(".x") names as written, others pipe-qualified (pipe.DlcpIngress...); every
    table the controller installs on BMv2 exists on Tofino with the same keys and actions."""
    from tests.dataplane.targets import compiled

    tna = program.p4info
    names = {t.preamble.name for t in tna.tables}
    assert "pipe.DlcpIngress.routing.ecmp_member_select" in names        # not annotated: qualified
    assert "pipe.DlcpIngress.selective_drop.set_ghost_queue_base" in {a.preamble.name for a in tna.actions} \
        or program.arch == "tna"

    def shape(info, table):
        actions = {a.preamble.id: a for a in info.actions}
        keys = [(m.name, m.bitwidth, m.match_type) for m in table.match_fields]
        acts = sorted((actions[r.id].preamble.name, tuple((p.name, p.bitwidth) for p in actions[r.id].params))
                      for r in table.action_refs)
        return keys, acts

    bmv2 = compiled("bmv2").p4info
    tna_tables = {t.preamble.name: t for t in tna.tables}
    shared = [t for t in bmv2.tables if t.preamble.name in tna_tables]
    assert {t.preamble.name for t in shared} >= {
        "DlcpIngress.ipv4_routes", "DlcpIngress.ecmp_groups", "DlcpIngress.ecmp_members", "DlcpIngress.nexthops",
        "DlcpIngress.priority_map", "DlcpIngress.drop_thresholds", "DlcpIngress.dlcp_udp_ports",
        "DlcpIngress.depth_settings", "DlcpEgress.port_drain"}
    for t in shared:
        assert shape(tna, tna_tables[t.preamble.name]) == shape(bmv2, t), t.preamble.name
