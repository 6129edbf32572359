"""The P4Info p4sim produces for dlcp.p4 is exactly the control API of docs/contracts-dlcp.md:
table keys (name, width, match kind), actions and parameter widths, defaults, counters and
their sizes, the direct counter, the register, the UDP-port table and the controller headers. The
controller engineer codes against these names; this test is what keeps them stable, for the BMv2
program and the Tofino one (Tofino1, Tofino2) alike; the few inherent differences are named.
"""

from __future__ import annotations

import pytest
from p4.config.v1 import p4info_pb2

MK = p4info_pb2.MatchField
TABLES = {
    "DlcpIngress.ipv4_routes": ([("ipv4_dst", 32, MK.LPM)],
                                {"DlcpIngress.route_to_nexthop", "DlcpIngress.route_to_group", "DlcpIngress.drop"}),
    "DlcpIngress.nexthops": ([("nexthop_id", 16, MK.EXACT)], {"DlcpIngress.set_nexthop", "DlcpIngress.drop"}),
    "DlcpIngress.ecmp_groups": ([("group_id", 16, MK.EXACT)], {"DlcpIngress.set_ecmp_group", "DlcpIngress.drop"}),
    "DlcpIngress.ecmp_members": ([("group_id", 16, MK.EXACT), ("member_index", 8, MK.EXACT)],
                                 {"DlcpIngress.route_to_nexthop", "DlcpIngress.drop"}),
    "DlcpIngress.priority_map": ([("is_dlcp", 1, MK.TERNARY), ("msg_type", 4, MK.TERNARY),
                                  ("layer_class", 3, MK.TERNARY), ("mag_class", 4, MK.TERNARY),
                                  ("flags", 8, MK.TERNARY)], {"DlcpIngress.set_queue"}),
    "DlcpIngress.drop_thresholds": ([("queue", 3, MK.EXACT), ("mag_class", 4, MK.EXACT)],
                                    {"DlcpIngress.set_thresholds", "NoAction"}),
    # a table, not a parser value_set: P4Runtime on BMv2 (PI) and Tofino cannot write value sets
    "DlcpIngress.dlcp_udp_ports": ([("udp_dst_port", 16, MK.EXACT)], {"DlcpIngress.dlcp_port", "NoAction"}),
}
ACTIONS = {
    "DlcpIngress.route_to_nexthop": [("nexthop_id", 16)],
    "DlcpIngress.route_to_group": [("group_id", 16)],
    "DlcpIngress.drop": [],
    "DlcpIngress.set_nexthop": [("port", 9), ("smac", 48), ("dmac", 48)],
    "DlcpIngress.set_ecmp_group": [("num_members", 8), ("spray", 1)],
    "DlcpIngress.set_queue": [("queue", 3)],
    "DlcpIngress.set_thresholds": [("drop_depth", 19), ("ecn_depth", 19)],
    "DlcpIngress.dlcp_port": [],
}
COUNTERS = {
    "DlcpEgress.port_queue_tx": 512 * 8,
    "DlcpIngress.selective_drops": 8 * 16,
    "DlcpIngress.ecn_marks": 8 * 16,
    "DlcpIngress.malformed": 4,
    "DlcpEgress.egress_safety_drops": 8 * 16,
}


@pytest.fixture(scope="module", params=["bmv2", "tna", "t2na"])
def p4info(request):
    """The P4Info of each program: the BMv2 one and the Tofino one (p4sim's TNA model, named
    as bf-p4c names objects) carry the same control API."""
    from tests.dataplane.targets import compiled

    return compiled(request.param).p4info


def program_of(p4info):
    from tests.dataplane.targets import compiled

    return compiled({"v1model": "bmv2"}.get(p4info.pkg_info.arch, p4info.pkg_info.arch))


def by_name(items) -> dict:
    return {i.preamble.name: i for i in items}


def test_tables_keys_and_actions(p4info) -> None:
    tables = by_name(p4info.tables)
    actions = {a.preamble.id: a.preamble.name for a in p4info.actions}
    assert set(TABLES) <= set(tables)
    for name, (keys, acts) in TABLES.items():
        t = tables[name]
        assert [(m.name, m.bitwidth, m.match_type) for m in t.match_fields] == keys, name
        assert {actions[r.id] for r in t.action_refs} == acts, name


def test_action_parameters(p4info) -> None:
    actions = by_name(p4info.actions)
    for name, params in ACTIONS.items():
        assert [(p.name, p.bitwidth) for p in actions[name].params] == params, name


def test_default_actions(p4info) -> None:
    """Contract defaults: drop for routing tables, set_queue(0), and no thresholds."""
    pipeline = program_of(p4info).instantiate()
    defaults = {name: pipeline.tables[name].default_action for name in TABLES}
    for name in ("DlcpIngress.ipv4_routes", "DlcpIngress.nexthops", "DlcpIngress.ecmp_groups",
                 "DlcpIngress.ecmp_members"):
        assert defaults[name].name == "DlcpIngress.drop", name
    assert (defaults["DlcpIngress.priority_map"].name, tuple(defaults["DlcpIngress.priority_map"].args)) == \
        ("DlcpIngress.set_queue", (0,))
    assert defaults["DlcpIngress.drop_thresholds"].name == "NoAction"
    assert defaults["DlcpIngress.dlcp_udp_ports"].name == "NoAction"
    assert pipeline.tables["DlcpIngress.dlcp_udp_ports"].default_is_const   # a miss is never DLCP
    # the controller may change the others' defaults
    assert not any(pipeline.tables[name].default_is_const for name in TABLES if name != "DlcpIngress.dlcp_udp_ports")


def test_counters_direct_counter_register_value_set(p4info) -> None:
    counters = by_name(p4info.counters)
    for name, size in COUNTERS.items():
        assert counters[name].size == size, name
        assert counters[name].spec.unit == p4info_pb2.CounterSpec.BOTH, name
    reg = by_name(p4info.registers)["queue_depth_reg"]
    if p4info.pkg_info.arch == "v1model":
        direct = by_name(p4info.direct_counters)["DlcpIngress.ecmp_member_packets"]
        assert direct.spec.unit == p4info_pb2.CounterSpec.BOTH
        tables = {t.preamble.id: t.preamble.name for t in p4info.tables}
        assert tables[direct.direct_table_id] == "DlcpIngress.ecmp_members"
        assert reg.size == 512 * 8 and reg.type_spec.bitstring.bit.bitwidth == 19
    else:   # Tofino (docs/dataplane.md): an indexed member counter, 32-bit depth cells
        assert counters["DlcpIngress.ecmp_member_packets"].size == 256 * 16
        assert reg.size == 512 * 8 and reg.type_spec.bitstring.bit.bitwidth == 32
    # nothing the controller must write is a value set (BMv2's PI: "ValueSet writes are not supported")
    assert list(p4info.value_sets) == []
    ports = by_name(p4info.tables)["DlcpIngress.dlcp_udp_ports"]
    assert ports.size == 4 and not ports.is_const_table


def test_controller_packet_metadata(p4info) -> None:
    meta = by_name(p4info.controller_packet_metadata)
    assert [(m.name, m.bitwidth) for m in meta["packet_in"].metadata] == [("ingress_port", 9), ("_pad", 7)]
    assert [(m.name, m.bitwidth) for m in meta["packet_out"].metadata] == [("egress_port", 9), ("_pad", 7)]


def test_depth_freshness_objects(p4info) -> None:
    """docs/dataplane.md "Queue-depth freshness": the per-port display record, its timestamp, and the
    controller-tunable max age in a keyless table whose default entry the controller modifies
    (Tofino keeps the table for API symmetry; it observes depths, it records none)."""
    dlcp_program = program_of(p4info)
    regs = by_name(p4info.registers)
    if p4info.pkg_info.arch == "v1model":
        assert regs["port_depth_reg"].size == 512
        assert regs["port_depth_reg"].type_spec.bitstring.bit.bitwidth == 19
        assert regs["port_depth_ts_reg"].size == 512
        assert regs["port_depth_ts_reg"].type_spec.bitstring.bit.bitwidth == 48
    table = by_name(p4info.tables)["DlcpIngress.depth_settings"]
    actions = {a.preamble.id: a for a in p4info.actions}
    assert list(table.match_fields) == []
    assert [actions[r.id].preamble.name for r in table.action_refs] == ["DlcpIngress.set_depth_max_age"]
    action = by_name(p4info.actions)["DlcpIngress.set_depth_max_age"]
    assert [(p.name, p.bitwidth) for p in action.params] == [("max_age_us", 32)]
    default = dlcp_program.instantiate().tables["DlcpIngress.depth_settings"]
    assert not default.default_is_const
    assert (default.default_action.name, tuple(default.default_action.args)) == \
        ("DlcpIngress.set_depth_max_age", (2000,))


def test_per_queue_depth_objects(p4info) -> None:
    """docs/dataplane.md "Per-queue depth": BMv2's per-(port, queue) packet counts (in at
    ingress, out at egress; no timed record any more) and the controller-installed port drain
    table (keyed by egress port, NoAction default; API symmetry on every target now)."""
    dlcp_program = program_of(p4info)
    regs = by_name(p4info.registers)
    if p4info.pkg_info.arch == "v1model":
        for name in ("enq_count_reg", "deq_count_reg"):
            assert regs[name].size == 512 * 8, name
            assert regs[name].type_spec.bitstring.bit.bitwidth == 32, name
        assert "queue_depth_ts_reg" not in regs
    table = by_name(p4info.tables)["DlcpEgress.port_drain"]
    actions = {a.preamble.id: a.preamble.name for a in p4info.actions}
    assert [(m.name, m.bitwidth, m.match_type) for m in table.match_fields] == [("egress_port", 9, MK.EXACT)]
    assert {actions[r.id] for r in table.action_refs} == {"DlcpEgress.set_port_drain", "NoAction"}
    action = by_name(p4info.actions)["DlcpEgress.set_port_drain"]
    assert [(p.name, p.bitwidth) for p in action.params] == [("pkts_per_s", 32)]
    assert table.size == 512
    assert dlcp_program.instantiate().tables["DlcpEgress.port_drain"].default_action.name == "NoAction"
