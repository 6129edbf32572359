"""Table application in generated code: keys, action data, defaults, hit/miss, action_run,
const entries with priorities, direct counters."""

from __future__ import annotations

import pytest

from .helpers import needs_frontend, path_for, simple_program

pytestmark = needs_frontend

HEADER = "bit<8> k; bit<8> t; bit<8> out; bit<8> hit;"

INGRESS = """
    direct_counter(CounterType.packets_and_bytes) cnt;
    action set_out(bit<8> v, bit<9> port) { hdr.h.out = v; sm.egress_spec = port; }
    action other() { hdr.h.out = 0xEE; sm.egress_spec = 3; }
    action drop() { mark_to_drop(sm); }
    table exact_t {
        key = { hdr.h.k: exact; }
        actions = { set_out; other; drop; }
        default_action = drop();
        counters = cnt;
    }
    table tern_t {
        key = { hdr.h.t: ternary; }
        actions = { set_out; NoAction; }
        const entries = {
            0x10 &&& 0xF0 : set_out(0x11, 4);
            0x12 &&& 0xFF : set_out(0x22, 5);   // listed later: lower priority
            _ : set_out(0x33, 6);
        }
    }
    apply {
        if (hdr.h.t != 0) {
            tern_t.apply();
            return;
        }
        switch (exact_t.apply().action_run) {
            set_out: { hdr.h.hit = 1; }
            other: { hdr.h.hit = 2; }
            default: { hdr.h.hit = 3; }
        }
    }
"""


@pytest.fixture()
def path(tmp_path):
    from p4sim.runtime.tables import ActionCall, Exact, TableEntry

    p = path_for(simple_program(tmp_path, HEADER, INGRESS))
    t = p.pipeline.tables["I.exact_t"]
    t.insert(TableEntry((Exact(7),), ActionCall("I.set_out", (0x42, 2))))
    t.insert(TableEntry((Exact(8),), ActionCall("I.other", ())))
    return p


def test_hit_runs_action_with_its_data_and_action_run(path):
    out = path.process(bytes([7, 0, 0, 0]), 0)
    assert out == [(2, bytes([7, 0, 0x42, 1]))]
    out = path.process(bytes([8, 0, 0, 0]), 0)
    assert out == [(3, bytes([8, 0, 0xEE, 2]))]


def test_miss_runs_default_action(path):
    assert path.process(bytes([9, 0, 0, 0]), 0) == []
    assert path.drops["ingress_drop"] == 1


def test_default_action_can_be_changed_by_the_control_plane(path):
    from p4sim.runtime.tables import ActionCall

    path.pipeline.tables["I.exact_t"].set_default(ActionCall("I.set_out", (0x99, 1)))
    # action_run names the action that ran, also when it ran as the default
    assert path.process(bytes([9, 0, 0, 0]), 0) == [(1, bytes([9, 0, 0x99, 1]))]


def test_direct_counter_counts_hits_only(path):
    path.process(bytes([7, 0, 0, 0]), 0)
    path.process(bytes([7, 0, 0, 0, 0, 0]), 0)
    path.process(bytes([9, 0, 0, 0]), 0)
    from p4sim.runtime.tables import Exact
    e = path.pipeline.tables["I.exact_t"].find((Exact(7),), 0)
    assert (e.packets, e.bytes) == (2, 10)


def test_const_entries_first_listed_wins_and_wildcard(path):
    assert path.process(bytes([0, 0x12, 0, 0]), 0) == [(4, bytes([0, 0x12, 0x11, 0]))]
    assert path.process(bytes([0, 0x22, 0, 0]), 0) == [(6, bytes([0, 0x22, 0x33, 0]))]


def test_signed_action_data_is_sign_extended(tmp_path):
    from p4sim.runtime.tables import ActionCall, Exact, TableEntry

    ingress = """
    action neg(int<8> d) { hdr.h.out = (d < 0) ? 8w1 : 8w2; hdr.h.hit = (bit<8>)(d >> 1); sm.egress_spec = 1; }
    table t { key = { hdr.h.k: exact; } actions = { neg; } }
    apply { t.apply(); }
    """
    p = path_for(simple_program(tmp_path, HEADER, ingress))
    p.pipeline.tables["I.t"].insert(TableEntry((Exact(1),), ActionCall("I.neg", (0xFE,))))   # -2
    # -2 < 0, and -2 >> 1 is -1 (arithmetic shift) = 0xFF
    assert p.process(bytes([1, 5, 0, 0]), 0) == [(1, bytes([1, 5, 1, 0xFF]))]
