"""Meters in generated code: indexed meters and direct meters colour packets through the
runtime's trTCM (0 GREEN, 1 YELLOW, 2 RED); unconfigured meters colour GREEN."""

from __future__ import annotations

from .helpers import needs_frontend, path_for, simple_program

pytestmark = needs_frontend

INGRESS = """
    meter(4, MeterType.packets) m;
    direct_meter<bit<8>>(MeterType.packets) dm;
    action color_it() { dm.read(hdr.h.dcolor); }
    table t {
        key = { hdr.h.k: exact; }
        actions = { color_it; NoAction; }
        meters = dm;
    }
    apply {
        sm.egress_spec = 1;
        m.execute_meter((bit<32>)hdr.h.k, hdr.h.color);
        t.apply();
    }
"""


def test_indexed_and_direct_meters_turn_red_when_the_burst_is_spent(tmp_path):
    from p4sim.runtime.tables import ActionCall, Exact, TableEntry

    p = path_for(simple_program(tmp_path, "bit<8> k; bit<8> color; bit<8> dcolor;", INGRESS))
    pipe = p.pipeline
    assert p.process(bytes([1, 9, 9]), 0, now_us=10) == [(1, bytes([1, 0, 9]))]   # unconfigured: GREEN; miss
    pipe.meters["I.m"].set_config(1, 0.000001, 1, 0.000001, 1)                      # 1-packet bursts
    entry = TableEntry((Exact(1),), ActionCall("I.color_it", ()))
    pipe.tables["I.t"].insert(entry)
    pipe.direct_meters["I.dm"].set_config(entry, 0.000001, 1, 0.000001, 1)
    assert p.process(bytes([1, 9, 9]), 0, now_us=20) == [(1, bytes([1, 0, 0]))]   # first packet fits
    assert p.process(bytes([1, 9, 9]), 0, now_us=20) == [(1, bytes([1, 2, 2]))]   # second one: RED
    assert p.process(bytes([2, 9, 9]), 0, now_us=20) == [(1, bytes([2, 0, 9]))]   # other cell, table miss
