"""The P4Info index: names to ids, "did you mean", entries built by name with width checks."""

from __future__ import annotations

import pytest
from ctl_support import P4INFO

from controller import dlcp_tables as api
from controller.errors import ControllerError, NameNotFound, ValueError_
from controller.p4info_index import P4InfoIndex, load_p4info


def test_fixture_has_every_contract_name(index):
    for name in (api.IPV4_ROUTES, api.NEXTHOPS, api.ECMP_GROUPS, api.ECMP_MEMBERS, api.PRIORITY_MAP,
                 api.DROP_THRESHOLDS):
        assert index.table(name).preamble.name == name
    for name in (api.PORT_QUEUE_TX, api.SELECTIVE_DROPS, api.ECN_MARKS, api.MALFORMED, api.EGRESS_SAFETY_DROPS):
        assert index.counter(name).spec.unit == 3  # BOTH
    assert index.direct_counter(api.ECMP_MEMBER_PACKETS).direct_table_id == index.table(api.ECMP_MEMBERS).preamble.id
    assert index.table(api.UDP_PORTS).size == 4
    assert index.register(api.QUEUE_DEPTH_REG).size == 4096


def test_alias_and_id_lookup(index):
    table = index.table("nexthops")
    assert table.preamble.name == "DlcpIngress.nexthops"
    assert index.name_of(table.preamble.id) == "DlcpIngress.nexthops"


def test_unknown_names_suggest(index):
    with pytest.raises(NameNotFound, match=r"unknown table 'DlcpIngress.nexthop'; did you mean 'DlcpIngress.nexthops'\?"):
        index.table("DlcpIngress.nexthop")
    with pytest.raises(NameNotFound, match=r"table DlcpIngress.nexthops: unknown match field 'nexthop'; did you mean 'nexthop_id'"):
        index.build_table_entry(api.NEXTHOPS, {"nexthop": 1}, "DlcpIngress.set_nexthop", {})
    with pytest.raises(NameNotFound, match=r"action DlcpIngress.set_nexthop: unknown action parameter 'dmacc'"):
        index.build_table_entry(api.NEXTHOPS, {"nexthop_id": 1}, "DlcpIngress.set_nexthop",
                                {"port": 1, "smac": 0, "dmac": 0, "dmacc": 1})


def test_build_entry_encodes_by_name(index):
    entry = api.nexthop(index, 7, 3, "02:00:00:00:01:00", "00:00:00:00:00:01")
    assert entry.table_id == index.table(api.NEXTHOPS).preamble.id
    assert [fm.exact.value for fm in entry.match] == [b"\x07"]
    assert [p.value for p in entry.action.action.params] == [b"\x03", b"\x02\x00\x00\x00\x01\x00", b"\x01"]
    assert index.action_text(entry) == "set_nexthop(port=3, smac=02:00:00:00:01:00, dmac=00:00:00:00:00:01)"
    assert index.describe(entry) == "table DlcpIngress.nexthops match nexthop_id=7"


def test_value_too_wide_names_table_action_param(index):
    with pytest.raises(ValueError_) as err:
        api.nexthop(index, 1, 600, 0, 0)
    assert str(err.value) == ("table DlcpIngress.nexthops action DlcpIngress.set_nexthop param port: "
                              "value 600 does not fit in 9 bits (max 511)")
    with pytest.raises(ValueError_, match="field mag_class: value 16 does not fit in 4 bits"):
        api.threshold(index, 1, 16, 10, 5)


def test_action_must_belong_to_table_and_priority_rules(index):
    with pytest.raises(ValueError_, match="is not an action of this table"):
        index.build_table_entry(api.NEXTHOPS, {"nexthop_id": 1}, "DlcpIngress.set_queue", {"queue": 1})
    with pytest.raises(ValueError_, match="need a priority"):
        index.build_table_entry(api.PRIORITY_MAP, {"is_dlcp": 1}, "DlcpIngress.set_queue", {"queue": 1})
    with pytest.raises(ValueError_, match="take no priority"):
        index.build_table_entry(api.NEXTHOPS, {"nexthop_id": 1}, "DlcpIngress.drop", priority=3)
    with pytest.raises(ValueError_, match="needs parameter 'ecn_depth'"):
        index.build_table_entry(api.DROP_THRESHOLDS, {"queue": 1, "mag_class": 0}, "DlcpIngress.set_thresholds",
                                {"drop_depth": 4})


def test_udp_port_entry(index):
    entry = api.udp_port(index, 9291)
    assert [m.exact.value for m in entry.match] == [b"\x24\x4b"]
    assert index.action_text(entry) == "dlcp_port()"
    with pytest.raises(ValueError_):
        api.udp_port(index, 70000)


def test_load_p4info_text_binary_and_garbage(tmp_path):
    p4info = load_p4info(P4INFO)
    binary = tmp_path / "dlcp.p4info.bin"
    binary.write_bytes(p4info.SerializeToString())
    assert P4InfoIndex.from_file(binary).table("ipv4_routes").size == 16384
    bad = tmp_path / "bad.txtpb"
    bad.write_text("tables { nonsense")
    with pytest.raises(ControllerError, match="bad.txtpb: not a P4Info"):
        load_p4info(bad)
    with pytest.raises(ControllerError, match="cannot read P4Info"):
        load_p4info(tmp_path / "missing.txtpb")
