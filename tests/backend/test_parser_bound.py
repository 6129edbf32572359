"""Issue 11: parser work per packet is bounded (``PARSER_STATE_LIMIT`` state visits over the
top-level parser and its sub-parsers). A state that loops without advancing used to spin the
packet thread forever; now the packet is dropped and counted as ``parser_loop`` at once, the
next packet is processed normally, and a legitimate long parse (a 9,000-byte frame walked one
byte per state) is unaffected."""

from __future__ import annotations

import time

from p4sim.backend.rt import PARSER_STATE_LIMIT
from tests.backend.helpers import needs_frontend, path_for, simple_program

HEADER = "bit<8> a;"
FORWARD = "apply { sm.egress_spec = 1; }"


def timed(path, data: bytes):
    start = time.perf_counter()
    out = path.process(data, 0)
    return out, time.perf_counter() - start


@needs_frontend
def test_state_looping_without_advancing_is_dropped_and_counted(tmp_path):
    parser = """state start { transition select(pkt.lookahead<bit<8>>()) { 0: start; default: go; } }
                state go { pkt.extract(hdr.h); transition accept; }"""
    path = path_for(simple_program(tmp_path, HEADER, FORWARD, parser=parser))
    out, seconds = timed(path, bytes([0, 1]))
    assert out == []
    assert path.drops["parser_loop"] == 1
    assert seconds < 5, seconds        # bounded: the old code never returned
    assert path.process(bytes([7, 1]), 0) == [(1, bytes([7, 1]))]    # the switch carries on


@needs_frontend
def test_sub_parser_loop_counts_against_the_same_budget(tmp_path):
    extra = """
    header hh_t { bit<8> a; }
    parser Sub(packet_in pkt, inout bit<8> x) {
        state start { x = x + 1; transition select(pkt.lookahead<bit<8>>()) { 0: start; default: accept; } }
    }"""
    parser = """Sub() sub; bit<8> n = 0;
                state start { sub.apply(pkt, n); transition select(pkt.lookahead<bit<8>>()) { 0: start; default: go; } }
                state go { pkt.extract(hdr.h); transition accept; }"""
    path = path_for(simple_program(tmp_path, HEADER, FORWARD, parser=parser, extra=extra))
    out, seconds = timed(path, bytes([0, 1]))
    assert out == [] and path.drops["parser_loop"] == 1
    assert seconds < 5, seconds


@needs_frontend
def test_long_legitimate_parse_is_not_cut_short(tmp_path):
    parser = """state start { transition select(pkt.lookahead<bit<8>>()) { 0xFF: go; default: skip; } }
                state skip { pkt.advance(8); transition select(pkt.lookahead<bit<8>>()) { 0xFF: go; default: skip; } }
                state go { pkt.extract(hdr.h); transition accept; }"""
    path = path_for(simple_program(tmp_path, HEADER, FORWARD, parser=parser))
    data = bytes(9000) + b"\xff"
    assert 9000 < PARSER_STATE_LIMIT
    out = path.process(data, 0)
    assert out == [(1, b"\xff")]
    assert not path.drops


@needs_frontend
def test_huge_extern_arrays_are_refused_at_compile_time(tmp_path):
    """``register<bit<8>>(1 << 30)`` in a pushed config would allocate gigabytes at load."""
    import pytest

    from p4sim.errors import P4UnsupportedError

    for decl in ("register<bit<8>>(1 << 30) r;", "counter(1 << 23, CounterType.packets) r;",
                 "meter(1 << 31, MeterType.bytes) r;"):
        ingress = decl + " apply { sm.egress_spec = 1; }"
        with pytest.raises(P4UnsupportedError, match=r"\.p4:\d+:\d+: unsupported: .* of size \d+ \(p4sim allows"):
            simple_program(tmp_path, HEADER, ingress)
