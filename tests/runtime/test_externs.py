"""Registers, counters, meters (BMv2 trTCM), action selectors and the replication engine."""

from __future__ import annotations

import pytest

from p4sim.runtime.action_profiles import ActionProfile, ActionProfileError
from p4sim.runtime.externs import (
    GREEN,
    RED,
    YELLOW,
    Counter,
    DirectCounter,
    DirectMeter,
    ExternError,
    Meter,
    Register,
)
from p4sim.runtime.pre import PacketReplicationEngine, PreError
from p4sim.runtime.tables import ActionCall, Exact, TableEntry


def test_register_read_write_truncates_and_ignores_out_of_range():
    r = Register("ingress.r", 4, 8)
    r.write(1, 0x1FF)
    assert r.read(1) == 0xFF
    r.write(4, 5)                      # out of range: BMv2 updates nothing
    assert r.cells == [0, 0xFF, 0, 0]
    assert r.read(9, default=42) == 42  # BMv2 leaves the destination unchanged
    r.reset()
    assert r.read(1) == 0
    with pytest.raises(ExternError, match="ingress.r: index 4 out of range 0..3"):
        r.set_cell(4, 1)
    with pytest.raises(ExternError, match="does not fit"):
        r.set_cell(0, 256)


def test_counter_counts_packets_and_bytes():
    c = Counter("ingress.c", 2, "packets")
    c.count(0, 64)
    c.count(0, 100)
    c.count(2, 64)                     # out of range: ignored
    assert c.cells[0] == [2, 164]
    c.write_cell(1, 5, 500)
    assert c.read_cell(1) == (5, 500)
    with pytest.raises(ExternError):
        Counter("x", 1, "widgets")


def test_direct_counter_counts_entry():
    e = TableEntry((Exact(1),), ActionCall("a"))
    DirectCounter("ingress.dc").count(e, 60)
    DirectCounter.count(None, 60)
    assert (e.packets, e.bytes) == (1, 60)


def test_meter_unconfigured_is_green():
    m = Meter("ingress.m", 1, "packets")
    assert [m.execute(0, 64, t) for t in range(5)] == [GREEN] * 5


def test_meter_packets_trtcm_colours():
    m = Meter("ingress.m", 2, "packets")
    # CIR 0.000001 pkt/us (1 pkt/s), CBS 2; PIR 0.000002 pkt/us, PBS 4: in a burst at one
    # instant, 2 packets green, the next 2 yellow (committed bucket empty), then red.
    m.set_config(0, 0.000001, 2, 0.000002, 4)
    colours = [m.execute(0, 64, 1_000) for _ in range(6)]
    assert colours == [GREEN, GREEN, YELLOW, YELLOW, RED, RED]


def test_meter_peak_checked_first_as_bmv2():
    m = Meter("ingress.m", 1, "packets")
    m.set_config(0, 0.000001, 1, 0.000001, 1)
    assert m.execute(0, 0, 10) == GREEN
    assert m.execute(0, 0, 10) == RED       # peak bucket short: RED, committed not consulted
    m2 = Meter("ingress.m2", 1, "packets")
    m2.set_config(0, 0.000001, 1, 0.000002, 3)
    assert m2.execute(0, 0, 10) == GREEN
    assert m2.execute(0, 0, 10) == YELLOW   # peak ok (1 left), committed empty
    assert m2.execute(0, 0, 10) == YELLOW   # peak now empty
    assert m2.execute(0, 0, 10) == RED


def test_meter_bytes_and_refill():
    m = Meter("ingress.mb", 1, "bytes")
    m.set_config(0, 1.0, 100, 2.0, 200)     # 1 byte/us committed, 2 byte/us peak
    assert m.execute(0, 100, 0) == GREEN
    assert m.execute(0, 100, 0) == YELLOW
    assert m.execute(0, 100, 0) == RED
    assert m.execute(0, 100, 100) == GREEN  # 100 us later: +100 committed, +200 peak
    with pytest.raises(ExternError, match="committed rate 3 exceeds peak rate 1"):
        m.set_config(0, 3, 1, 1, 1)


def test_meter_out_of_range_returns_default():
    m = Meter("ingress.m", 1, "packets")
    assert m.execute(5, 64, 0, default=7) == 7


def test_direct_meter_per_entry():
    dm = DirectMeter("ingress.dm", "packets")
    e = TableEntry((Exact(1),), ActionCall("a"))
    assert dm.execute(e, 64, 0) == GREEN
    dm.set_config(e, 0.000001, 1, 0.000001, 2)
    assert [dm.execute(e, 64, 5) for _ in range(3)] == [GREEN, YELLOW, RED]
    assert dm.execute(None, 64, 5) == GREEN


def test_selector_picks_sorted_member_by_hash_modulo():
    ap = ActionProfile("ingress.sel", with_selector=True)
    for mid, port in ((30, 3), (10, 1), (20, 2)):
        ap.add_member(mid, ActionCall("ingress.fwd", (port,)))
    ap.add_group(1, [30, 10, 20])
    assert [ap.select(1, h).args[0] for h in range(6)] == [1, 2, 3, 1, 2, 3]
    assert ap.select(2, 0) is None
    with pytest.raises(ActionProfileError, match="still in group 1"):
        ap.delete_member(10)
    ap.remove_member_from_group(1, 20)
    assert [ap.select(1, h).args[0] for h in range(2)] == [1, 3]
    with pytest.raises(ActionProfileError, match="no member 99"):
        ap.add_member_to_group(1, 99)
    plain = ActionProfile("ingress.ap")
    with pytest.raises(ActionProfileError, match="no groups"):
        plain.add_group(1)


def test_pre_multicast_node_order_and_ports_ascending():
    pre = PacketReplicationEngine()
    pre.mc_mgrp_create(1)
    h0 = pre.mc_node_create(5, [3, 1])
    h1 = pre.mc_node_create(6, [2])
    assert (h0, h1) == (0, 1)
    pre.mc_node_associate(1, h1)
    pre.mc_node_associate(1, h0)
    assert pre.replicate(1) == [(6, 2), (5, 1), (5, 3)]
    assert pre.replicate(9) == []
    with pytest.raises(PreError, match="group 7 does not exist"):
        pre.mc_node_associate(7, h0)
    pre.set_group(2, [(1, 4), (1, 5), (2, 4)])
    assert pre.replicate(2) == [(1, 4), (1, 5), (2, 4)]


def test_pre_clone_sessions():
    pre = PacketReplicationEngine()
    pre.mirroring_add(5, 7)
    assert pre.clone_targets(5) == [(0, 7)]
    pre.mc_mgrp_create(3)
    pre.mc_node_associate(3, pre.mc_node_create(9, [1, 2]))
    pre.mirroring_add_mc(6, 3)
    assert pre.clone_targets(6) == [(9, 1), (9, 2)]
    assert pre.clone_targets(8) == []


def test_pre_p4runtime_clone_session_forms():
    pre = PacketReplicationEngine()
    pre.set_clone_session(1, port=4, truncate=64)
    assert pre.clone_targets(1) == [(0, 4)]
    assert pre.session(1).truncate_length == 64
    pre.set_clone_session(2, replicas=[(1, 2), (1, 3)])
    assert pre.clone_targets(2) == [(1, 2), (1, 3)]
    pre.delete_clone_session(2)
    assert pre.clone_targets(2) == []
    with pytest.raises(PreError):
        pre.delete_clone_session(2)
