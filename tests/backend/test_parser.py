"""Parser semantics: select with masks/ranges/default, errors as BMv2 (the packet continues to
ingress with standard_metadata.parser_error set), header stacks, lookahead, advance, verify."""

from __future__ import annotations

from .helpers import needs_frontend, path_for, simple_program

pytestmark = needs_frontend

# error codes: core.p4 order
NO_ERROR, PACKET_TOO_SHORT, NO_MATCH, STACK_OUT_OF_BOUNDS = 0, 1, 2, 3

PARSER = """
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) {
            0x00 &&& 0xF0: accept;
            0x10 .. 0x1F: parse_stack;
            0x20: parse_la;
            0x30 &&& 0xF0: check;
        }
    }
    state parse_stack {
        pkt.extract(hdr.s.next);
        transition select(hdr.s.last.more) {
            1: parse_stack;
            default: accept;
        }
    }
    state parse_la {
        transition select(pkt.lookahead<bit<8>>()) {
            0xAA: skip;
            default: accept;
        }
    }
    state skip {
        pkt.advance(16);
        pkt.extract(hdr.s.next);
        transition accept;
    }
    state check {
        verify(hdr.h.kind == 0x31, error.NoMatch);
        transition accept;
    }
"""

INGRESS = """
    apply {
        hdr.h.err = 0;
        if (sm.parser_error == error.PacketTooShort) { hdr.h.err = 1; }
        if (sm.parser_error == error.NoMatch) { hdr.h.err = 2; }
        if (sm.parser_error == error.StackOutOfBounds) { hdr.h.err = 3; }
        hdr.h.depth = (bit<8>)(hdr.s.lastIndex + 1);
        sm.egress_spec = 1;
    }
"""

DEPARSER = "apply { pkt.emit(hdr.h); pkt.emit(hdr.s); }"


def make(tmp_path):
    return path_for(simple_program(
        tmp_path, "bit<8> kind; bit<8> err; bit<8> depth;", INGRESS, parser=PARSER,
        headers="hdr_t h; item_t[3] s;", extra="header item_t { bit<7> v; bit<1> more; }",
        deparser=DEPARSER))


def test_masked_case_accepts_and_payload_follows(tmp_path):
    p = make(tmp_path)
    assert p.process(bytes([0x05, 9, 9, 0xAB, 0xCD]), 0) == [(1, bytes([0x05, 0, 0, 0xAB, 0xCD]))]


def test_range_and_stack_next_last(tmp_path):
    p = make(tmp_path)
    out = p.process(bytes([0x15, 0, 0, 0x03, 0x05, 0x06, 0x77]), 0)
    assert out == [(1, bytes([0x15, 0, 3, 0x03, 0x05, 0x06, 0x77]))]


def test_stack_overflow_sets_stack_out_of_bounds_and_packet_continues(tmp_path):
    p = make(tmp_path)
    out = p.process(bytes([0x15, 0, 0, 1, 1, 1, 1, 0x55]), 0)
    # three elements extracted, the fourth raised StackOutOfBounds; its byte stays in the payload
    assert out == [(1, bytes([0x15, STACK_OUT_OF_BOUNDS, 3, 1, 1, 1, 1, 0x55]))]


def test_no_match_and_packet_too_short(tmp_path):
    p = make(tmp_path)
    assert p.process(bytes([0x40, 0, 0, 7]), 0) == [(1, bytes([0x40, NO_MATCH, 0, 7]))]
    out = p.process(bytes([0x15, 0, 0]), 0)
    assert out == [(1, bytes([0x15, PACKET_TOO_SHORT, 0]))]


def test_lookahead_does_not_consume_and_advance_skips(tmp_path):
    p = make(tmp_path)
    assert p.process(bytes([0x20, 0, 0, 0xAA, 0xBB, 0x04, 0x99]), 0) == \
        [(1, bytes([0x20, 0, 1, 0x04, 0x99]))]   # advance(16) drops AA BB: they were parsed
    assert p.process(bytes([0x20, 0, 0, 0x11]), 0) == [(1, bytes([0x20, 0, 0, 0x11]))]


def test_verify_sets_the_given_error(tmp_path):
    p = make(tmp_path)
    assert p.process(bytes([0x30, 0, 0]), 0) == [(1, bytes([0x30, NO_MATCH, 0]))]
    assert p.process(bytes([0x31, 0, 0]), 0) == [(1, bytes([0x31, 0, 0]))]
