"""The generated TNA parsers leave out literal stores that would give a fresh object's field the
value it already holds (p4sim.tna.parser_check.fresh_default_stores), and only those.

Why this exists: TNA parsers zero their metadata first (``md = {0, ...}``: 26 stores per packet in
p4src/tofino/dlcp.p4) into objects ``_FRESH_<pipe>()`` has just built with those values; leaving
them out must never leave a value another statement wrote (before it in the start state, in a
sub-parser, or in an earlier pass through a start state the parser loops back to).
"""

from __future__ import annotations

from pathlib import Path

import pytest

HEAD = """#include <core.p4>
#include <tna.p4>
header eth_h { bit<48> dst; bit<48> src; bit<16> type; }
struct hdr_t { eth_h eth; }
struct md_t { bit<8> x; bit<8> y; }
parser Sub(packet_in pkt, inout md_t md) { state start { md.x = 3; transition accept; } }
"""
# the ingress control reports (md.x, md.y) in the source MAC; egress is bypassed
TAIL = """
control I(inout hdr_t hdr, inout md_t md, in ingress_intrinsic_metadata_t ig_intr_md,
          in ingress_intrinsic_metadata_from_parser_t p, inout ingress_intrinsic_metadata_for_deparser_t d,
          inout ingress_intrinsic_metadata_for_tm_t tm) {
    apply { hdr.eth.src = (bit<48>)(md.x ++ md.y); tm.ucast_egress_port = 2; tm.bypass_egress = 1; }
}
control ID(packet_out pkt, inout hdr_t hdr, in md_t md, in ingress_intrinsic_metadata_for_deparser_t d) {
    apply { pkt.emit(hdr); }
}
parser EP(packet_in pkt, out hdr_t hdr, out md_t md, out egress_intrinsic_metadata_t e) {
    state start { pkt.extract(e); transition accept; } }
control E(inout hdr_t hdr, inout md_t md, in egress_intrinsic_metadata_t e, in egress_intrinsic_metadata_from_parser_t a,
          inout egress_intrinsic_metadata_for_deparser_t b, inout egress_intrinsic_metadata_for_output_port_t c) { apply { } }
control ED(packet_out pkt, inout hdr_t hdr, in md_t md, in egress_intrinsic_metadata_for_deparser_t d) { apply { } }
Pipeline(IP_(), I(), ID(), EP(), E(), ED()) pipe;
Switch(pipe) main;
"""
START = "pkt.extract(ig_intr_md); pkt.advance(PORT_METADATA_SIZE); pkt.extract(hdr.eth);"
PARSERS = {
    # zeros first: left out; y = 9 stays
    "plain": ("state start { md = {0, 9}; " + START + " transition accept; }", (0, 9)),
    # a field written before the zeros: the whole-struct store must stay
    "written before": ("state start { md.x = 7; md = {0, 0}; " + START + " transition accept; }", (0, 0)),
    # a sub-parser writes md.x before md.x = 0: that store must stay
    "sub-parser": ("Sub() sub; state start { sub.apply(pkt, md); md.x = 0; " + START + " transition accept; }", (0, 0)),
    # the second pass through start must zero what the first pass's next state wrote
    "loop": ("state start { md.y = 0; transition select(md.x) { 0: mark; default: go; } } "
             "state mark { md.x = 1; md.y = 6; transition start; } "
             "state go { " + START + " transition accept; }", (1, 0)),
}


@pytest.mark.parametrize("which", list(PARSERS))
def test_only_stores_of_values_a_fresh_object_holds_already_are_left_out(tmp_path: Path, which: str) -> None:
    from p4sim.tna.pipeline import TnaPath
    from p4sim.tna.program import compile_tna

    body, (x, y) = PARSERS[which]
    parser = "parser IP_(packet_in pkt, out hdr_t hdr, out md_t md, out ingress_intrinsic_metadata_t ig_intr_md) {\n"
    path = tmp_path / "prog.p4"
    path.write_text(HEAD + parser + body + "\n}\n" + TAIL)
    frame = bytes.fromhex("0000000000aa" "0000000000bb" "0800") + b"payload"
    (out,) = TnaPath(compile_tna(str(path), [], "tna").instantiate()).process(frame, 1)
    assert out == (2, frame[:6] + ((x << 8) | y).to_bytes(6, "big") + frame[12:])
