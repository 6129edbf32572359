"""Desired state from the topology and the diff that reconciliation writes."""

from __future__ import annotations

import textwrap

import pytest
from p4.v1 import p4runtime_pb2

from controller import desired, netconfig, reconcile, wire
from controller import dlcp_tables as api


def _rows(index, entries, table):
    tid = index.table(table).preamble.id
    return sorted((tuple(index.entry_fields(e).values()), index.action_text(e)) for e in entries if e.table_id == tid)


def test_routes_nexthops_and_ecmp_derived_from_topology(index, net_yaml):
    net = netconfig.load(net_yaml)
    s1 = desired.build_switch(net, index, "s1")
    assert _rows(index, s1.entries, api.NEXTHOPS) == [
        (("1",), "set_nexthop(port=1, smac=02:00:00:00:01:00, dmac=00:00:00:00:00:01)"),
        (("2",), "set_nexthop(port=2, smac=02:00:00:00:01:00, dmac=02:00:00:00:03:00)"),
        (("3",), "set_nexthop(port=3, smac=02:00:00:00:01:00, dmac=02:00:00:00:03:00)"),
    ]
    assert _rows(index, s1.entries, api.IPV4_ROUTES) == [
        (("10.0.0.1/32",), "route_to_nexthop(nexthop_id=1)"),
        (("10.0.0.2/32",), "route_to_group(group_id=1)"),
    ]
    assert _rows(index, s1.entries, api.ECMP_GROUPS) == [(("1",), "set_ecmp_group(num_members=2, spray=1)")]
    assert _rows(index, s1.entries, api.ECMP_MEMBERS) == [
        (("1", "0"), "route_to_nexthop(nexthop_id=2)"), (("1", "1"), "route_to_nexthop(nexthop_id=3)")]
    s3 = desired.build_switch(net, index, "s3")
    # s3 reaches h1 over two parallel links to s1: an ECMP group; h2 over one link.
    assert _rows(index, s3.entries, api.IPV4_ROUTES) == [
        (("10.0.0.1/32",), "route_to_group(group_id=1)"), (("10.0.0.2/32",), "route_to_nexthop(nexthop_id=3)")]


def test_policy_entries_and_udp_ports(index, net_yaml):
    net = netconfig.load(net_yaml)
    s1 = desired.build_switch(net, index, "s1")
    prio = [e for e in s1.entries if e.table_id == index.table(api.PRIORITY_MAP).preamble.id]
    assert len(prio) == len(net.policy.priority_map)
    assert [e.priority for e in prio] == [r.priority for r in net.policy.priority_map]
    thr = [e for e in s1.entries if e.table_id == index.table(api.DROP_THRESHOLDS).preamble.id]
    assert len(thr) == len(net.policy.thresholds)
    # DLCP's UDP ports are table entries (BMv2's P4Runtime server cannot write value sets)
    assert _rows(index, s1.entries, api.UDP_PORTS) == [(("9290",), "dlcp_port()")]
    assert s1.value_sets == []


def test_explicit_route_overrides_and_spray_off(index, tmp_path):
    from ctl_support import three_switch_yaml
    text = three_switch_yaml([1, 2, 3], extra=textwrap.dedent("""\
        routes:
          - {switch: s1, prefix: 10.0.0.2/32, ports: [2, 3], spray: false}
          - {switch: s1, prefix: 192.168.0.0/16, ports: [2]}
        """))
    path = tmp_path / "net.yaml"
    path.write_text(text)
    s1 = desired.build_switch(netconfig.load(path), index, "s1")
    assert _rows(index, s1.entries, api.ECMP_GROUPS) == [(("1",), "set_ecmp_group(num_members=2, spray=0)")]
    assert (("192.168.0.0/16",), "route_to_nexthop(nexthop_id=2)") in _rows(index, s1.entries, api.IPV4_ROUTES)


def _current(entries):
    return {reconcile.entry_key(e): e for e in entries}


def test_diff_empty_when_in_sync_even_with_padded_bytes(index, net_yaml):
    net = netconfig.load(net_yaml)
    want = desired.build_switch(net, index, "s1")
    padded = []
    for e in want.entries:   # a switch may return non-canonical (width-padded) bytes
        c = p4runtime_pb2.TableEntry()
        c.CopyFrom(wire.as_proto(e))
        for p in c.action.action.params:
            p.value = b"\x00\x00" + p.value
        for fm in c.match:
            if fm.HasField("exact"):
                fm.exact.value = b"\x00" + fm.exact.value
        c.match.reverse()
        padded.append(c)
    vs = {v.value_set_id: v for v in want.value_sets}
    plan = reconcile.diff("s1", _current(padded), want, index, vs)
    assert plan.empty(), plan.lines(index)


def test_diff_one_threshold_is_one_modify(index, net_yaml):
    net = netconfig.load(net_yaml)
    want = desired.build_switch(net, index, "s1")
    current = _current(want.entries)
    changed = api.threshold(index, 1, 0, 99, 9)
    current[reconcile.entry_key(changed)] = changed
    plan = reconcile.diff("s1", current, want, index, {v.value_set_id: v for v in want.value_sets})
    assert plan.counts() == {"delete": 0, "modify": 1, "insert": 0}
    assert plan.lines(index) == ["~ table DlcpIngress.drop_thresholds match queue=1 mag_class=0 -> "
                                 "set_thresholds(drop_depth=16, ecn_depth=8) (was set_thresholds(drop_depth=99, ecn_depth=9))"]


def test_diff_orders_deletes_routes_first_and_inserts_nexthops_first(index, net_yaml):
    net = netconfig.load(net_yaml)
    want = desired.build_switch(net, index, "s1")
    stale = [api.nexthop(index, 9, 9, 0, 0), api.route(index, "10.9.0.0/16", nexthop=9)]
    plan = reconcile.diff("s1", _current(stale), want, index, {})
    assert [index.name_of(c.entry.table_id) for c in plan.deletes] == [api.IPV4_ROUTES, api.NEXTHOPS]
    order = [index.name_of(c.entry.table_id) for c in plan.inserts]
    assert order.index(api.NEXTHOPS) < order.index(api.ECMP_GROUPS) < order.index(api.IPV4_ROUTES)
    assert order[0] == api.UDP_PORTS and plan.counts()["insert"] == len(want.entries)


def test_raw_write_request_encoding_equals_protobuf(index, net_yaml):
    from controller.p4rt_client import encode_write_request
    net = netconfig.load(net_yaml)
    want = desired.build_switch(net, index, "s1")
    header = p4runtime_pb2.WriteRequest(device_id=3, role="r")
    header.election_id.low = 7
    pairs = [(p4runtime_pb2.Update.INSERT, e) for e in want.entries[:20]]
    pairs += [(p4runtime_pb2.Update.MODIFY, _value_set(7, [9290])), (p4runtime_pb2.Update.DELETE, want.entries[0])]
    expected = p4runtime_pb2.WriteRequest()
    expected.CopyFrom(header)
    for kind, msg in pairs:
        up = expected.updates.add(type=kind)
        if isinstance(msg, (p4runtime_pb2.TableEntry, wire.WireEntry)):
            up.entity.table_entry.CopyFrom(wire.as_proto(msg))
        else:
            up.entity.value_set_entry.CopyFrom(msg)
    raw = encode_write_request(header, pairs)
    assert p4runtime_pb2.WriteRequest.FromString(raw) == expected
    assert raw == expected.SerializeToString()


def _value_set(value_set_id: int, values: list[int]) -> p4runtime_pb2.ValueSetEntry:
    """A parser value set's content (other programs may have them; DLCP's programs do not)."""
    entry = p4runtime_pb2.ValueSetEntry(value_set_id=value_set_id)
    for v in values:
        entry.members.add().match.add(field_id=1).exact.value = v.to_bytes(2, "big")
    return entry


def test_unreadable_value_set_is_not_rewritten_every_apply(index, net_yaml):
    net = netconfig.load(net_yaml)
    want = desired.build_switch(net, index, "s1")
    want.value_sets.append(_value_set(7, [9290]))
    vs_id = want.value_sets[0].value_set_id
    plan = reconcile.diff("s1", _current(want.entries), want, index, {vs_id: reconcile.UNREADABLE})
    assert plan.empty()
    plan = reconcile.diff("s1", _current(want.entries), want, index, {})
    assert plan.counts() == {"delete": 0, "modify": 1, "insert": 0}


def test_depth_max_age_is_a_default_entry_modify(index, tmp_path):
    from ctl_support import three_switch_yaml
    path = tmp_path / "net.yaml"
    path.write_text(three_switch_yaml([1, 2, 3], extra="policy:\n  depth_max_age_us: 500\n"))
    want = desired.build_switch(netconfig.load(path), index, "s1")
    assert [index.action_text(e) for e in want.defaults] == ["set_depth_max_age(max_age_us=500)"]
    table_id = index.table(api.DEPTH_SETTINGS).preamble.id
    vs = {v.value_set_id: v for v in want.value_sets}
    plan = reconcile.diff("s1", _current(want.entries), want, index, vs, {table_id: api.depth_max_age(index, 2000)})
    assert plan.lines(index) == ["~ table DlcpIngress.depth_settings default action -> "
                                 "set_depth_max_age(max_age_us=500) (was set_depth_max_age(max_age_us=2000))"]
    assert reconcile.diff("s1", _current(want.entries), want, index, vs, {table_id: want.defaults[0]}).empty()
    path.write_text(three_switch_yaml([1, 2, 3]))   # no depth_max_age_us: the compiled default stays
    assert desired.build_switch(netconfig.load(path), index, "s1").defaults == []


def test_port_drain_from_known_port_rates(index, tmp_path):
    """BMv2 estimates a queue's depth from its packets' wait x the port's drain rate: the
    controller installs DlcpEgress.port_drain for every port whose rate it knows."""
    from ctl_support import three_switch_yaml
    path = tmp_path / "net.yaml"
    path.write_text(three_switch_yaml([1, 2, 3], extra="queues: {rate_pps: 1666}\n"))
    want = desired.build_switch(netconfig.load(path), index, "s1")
    assert _rows(index, want.entries, api.PORT_DRAIN) == [
        ((str(p),), "set_port_drain(pkts_per_s=1666)") for p in (1, 2, 3)]
    path.write_text(three_switch_yaml([1, 2, 3]))   # no rate known: the compiled-in default stays
    assert _rows(index, desired.build_switch(netconfig.load(path), index, "s1").entries, api.PORT_DRAIN) == []


def _drain_and_thresholds(index, path):
    want = desired.build_switch(netconfig.load(path), index, "s1")
    return _rows(index, want.entries, api.PORT_DRAIN), _rows(index, want.entries, api.DROP_THRESHOLDS)


def test_link_speed_sets_port_drain(index, tmp_path):
    """Issue 10 item 6: the network YAML's link rate (Mbit/s), not the compiled-in 20 Mbit/s,
    is what each port drains at; a per-port rate overrides the network's; a queue rate limit
    (rate_pps) below the link speed wins.  (Thresholds in packets: delay thresholds, like the
    shipped default's, put the switch's fastest rate on every port.)"""
    from ctl_support import three_switch_yaml
    path = tmp_path / "net.yaml"
    packets = "policy:\n  thresholds: [{queues: [1], mag_classes: [0], drop_depth: 3, ecn_depth: 1}]\n"
    path.write_text(three_switch_yaml([1, 2, 3], extra="queues: {rate_mbps: 100}\n" + packets).replace(
        '  s1: {grpc', '  s1: {ports: {2: {rate_mbps: 1000}, 3: {rate_mbps: 1000, rate_pps: 5000}}, grpc'))
    drains, _ = _drain_and_thresholds(index, path)
    assert drains == [(("1",), "set_port_drain(pkts_per_s=8333)"), (("2",), "set_port_drain(pkts_per_s=83333)"),
                      (("3",), "set_port_drain(pkts_per_s=5000)")]


DELAY_POLICY = """policy:
  thresholds:
    - {queues: [1], mag_classes: [0, 1], drop_delay_us: 1200, ecn_delay_us: 600}
    - {queues: [2], mag_classes: [0], drop_delay_us: 4000000000, ecn_delay_us: 0}
"""


def test_thresholds_as_queueing_delay_hold_at_any_link_speed(index, tmp_path):
    """A delay threshold is converted with the switch's fastest port rate R, which every port's
    port_drain then holds: T * R / 10^6 full-size packets (to the nearest), the counted depth above which
    the queue holds more than T of queueing at R."""
    from ctl_support import three_switch_yaml
    path = tmp_path / "net.yaml"
    for mbps, pps in ((20, 1667), (1000, 83333)):
        path.write_text(three_switch_yaml([1, 2, 3], extra=f"queues: {{rate_mbps: {mbps}}}\n" + DELAY_POLICY))
        drains, thresholds = _drain_and_thresholds(index, path)
        assert {a for _, a in drains} == {f"set_port_drain(pkts_per_s={pps})"} and len(drains) == 3
        drop, ecn = round(1200 * pps / 1e6), round(600 * pps / 1e6)
        assert thresholds == [(("1", "0"), f"set_thresholds(drop_depth={drop}, ecn_depth={ecn})"),
                              (("1", "1"), f"set_thresholds(drop_depth={drop}, ecn_depth={ecn})"),
                              (("2", "0"), "set_thresholds(drop_depth=524287, ecn_depth=0)")]   # saturates: never
    # mixed speeds: every port drains at the fastest rate so one threshold means one delay everywhere
    path.write_text(three_switch_yaml([1, 2, 3], extra="queues: {rate_mbps: 20}\n" + DELAY_POLICY).replace(
        '  s1: {grpc', '  s1: {ports: {2: {rate_mbps: 100}}, grpc'))
    drains, _ = _drain_and_thresholds(index, path)
    assert {a for _, a in drains} == {"set_port_drain(pkts_per_s=8333)"}


@pytest.mark.parametrize("mbps, low, mid, high, top_ecn", [
    (20, (16, 8), (32, 16), (48, 24), 32),               # the old packet policy, exactly
    (100, (80, 40), (160, 80), (240, 120), 160),
    (1000, (800, 400), (1600, 800), (2400, 1200), 1600),
    (None, (16, 8), (32, 16), (48, 24), 32),             # no rate in the YAML: 20 Mbit/s assumed
])
def test_shipped_policy_thresholds_follow_the_link_speed(index, tmp_path, mbps, low, mid, high, top_ecn):
    """Issue 10 item 6: the shipped default policy gives delays, so the packets installed scale
    with --link-mbps (queues.rate_mbps); a YAML without rates keeps the 20 Mbit/s thresholds
    and gets no port_drain entry it did not ask for."""
    from ctl_support import three_switch_yaml
    path = tmp_path / "net.yaml"
    path.write_text(three_switch_yaml([1, 2, 3], extra=f"queues: {{rate_mbps: {mbps}}}\n" if mbps else ""))
    net = netconfig.load(path)
    assert net.policy.threshold_unit == "us" and net.policy.thresholds_shipped
    drains, thresholds = _drain_and_thresholds(index, path)
    got = {tuple(int(x) for x in key): action for key, action in thresholds}
    assert got[(1, 0)] == got[(6, 3)] == f"set_thresholds(drop_depth={low[0]}, ecn_depth={low[1]})"
    assert got[(2, 4)] == f"set_thresholds(drop_depth={mid[0]}, ecn_depth={mid[1]})"
    assert got[(3, 11)] == f"set_thresholds(drop_depth={high[0]}, ecn_depth={high[1]})"
    assert got[(4, 15)] == f"set_thresholds(drop_depth=524287, ecn_depth={top_ecn})"
    assert len(got) == 6 * 16 and (0, 0) not in got and (7, 0) not in got
    assert (drains == []) == (mbps is None)


@pytest.mark.parametrize("extra,fragment", [
    (DELAY_POLICY, "s1 port 1 is unknown: set it, or queues.rate_mbps"),     # no rate anywhere
    ("queues: {rate_mbps: 0}\n", "queues.rate_mbps"),
    ("queues: {rate_mbps: 100}\npolicy:\n  thresholds:\n    - {queues: [1], mag_classes: [0], drop_depth: 3, "
     "ecn_delay_us: 5}\n", "not a mix"),
    ("queues: {rate_mbps: 100}\npolicy:\n  thresholds:\n    - {queues: [1], mag_classes: [0], drop_depth: 3, "
     "ecn_depth: 1}\n    - {queues: [2], mag_classes: [0], drop_delay_us: 3, ecn_delay_us: 1}\n",
     "every block must give thresholds the same way"),
])
def test_rate_and_delay_errors_are_one_line(index, tmp_path, extra, fragment):
    from ctl_support import three_switch_yaml

    from controller.errors import ConfigError
    path = tmp_path / "net.yaml"
    path.write_text(three_switch_yaml([1, 2, 3], extra=extra))
    with pytest.raises(ConfigError) as err:
        desired.build_switch(netconfig.load(path), index, "s1")
    assert fragment in str(err.value) and "\n" not in str(err.value) and str(err.value).startswith(str(path))
