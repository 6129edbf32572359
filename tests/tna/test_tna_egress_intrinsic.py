"""An egress parser that extracts nothing: the egress intrinsic metadata Tofino puts in front of
the packet never reaches the wire (issue 15's loose end).

Why this exists: p4sim prepends ``egress_intrinsic_metadata_t`` for the egress parser; a parser
that did not extract it (Intel's ``EmptyEgressParser`` in open-p4studio's p4_16_programs/common/
util.p4, used with egress not bypassed) sent those 27 bytes out in front of the packet. The
generated code now starts such a parser's payload after them; a parser that extracts them first,
directly or through a sub-parser as the TNA templates do, is left as it was. The program is
test_tna_externs' with egress run (not bypassed) and an egress deparser that emits the headers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4sim.frontend import ast
from p4sim.tna.parser_check import extracts_first
from tests.tna.test_tna_externs import PROGRAM

# test_tna_externs' program with egress NOT bypassed and a deparser that emits what egress parsed
INGRESS = PROGRAM.replace("ig_tm_md.bypass_egress = 1;", "").replace(
    "in egress_intrinsic_metadata_for_deparser_t d) {\n    apply { }", "in egress_intrinsic_metadata_for_deparser_t d) {\n    apply { pkt.emit(hdr); }")
INGRESS = INGRESS[:INGRESS.index("parser EP(")] + INGRESS[INGRESS.index("control E("):INGRESS.index("Pipeline(")]
assert "bypass_egress" not in INGRESS and INGRESS.count("pkt.emit(hdr)") == 2

EGRESS_PARSERS = {
    # Intel's EmptyEgressParser: extracts nothing
    "nothing": "parser EP(packet_in pkt, out hdr_t hdr, out md_t md, out egress_intrinsic_metadata_t eg_intr_md) {"
               " state start { transition accept; } }",
    # the TNA templates: the metadata first, then the packet's own headers
    "direct": "parser EP(packet_in pkt, out hdr_t hdr, out md_t md, out egress_intrinsic_metadata_t eg_intr_md) {"
              " state start { pkt.extract(eg_intr_md); transition parse_eth; }"
              " state parse_eth { pkt.extract(hdr.eth); transition accept; } }",
    # open-p4studio's TofinoEgressParser sub-parser
    "subparser": "parser TofinoEgressParser(packet_in pkt, out egress_intrinsic_metadata_t eg_intr_md) {"
                 " state start { pkt.extract(eg_intr_md); transition accept; } }\n"
                 "parser EP(packet_in pkt, out hdr_t hdr, out md_t md, out egress_intrinsic_metadata_t eg_intr_md) {"
                 " TofinoEgressParser() tofino_parser;"
                 " state start { tofino_parser.apply(pkt, eg_intr_md); pkt.extract(hdr.eth); transition accept; } }",
}
MAIN = PROGRAM[PROGRAM.index("Pipeline("):]


def compiled(tmp_path: Path, which: str, arch: str = "tna"):
    from p4sim.tna.program import compile_tna

    path = tmp_path / f"{which}.p4"
    path.write_text(INGRESS + EGRESS_PARSERS[which] + "\n" + MAIN)
    return compile_tna(str(path), [], arch)


@pytest.mark.parametrize("arch", ["tna", "t2na"])
@pytest.mark.parametrize("which", list(EGRESS_PARSERS))
def test_the_packet_leaves_without_the_egress_intrinsic_metadata(tmp_path: Path, which: str, arch: str) -> None:
    from p4sim.runtime.hashes import compute
    from p4sim.tna.pipeline import TnaPath

    path = TnaPath(compiled(tmp_path, which, arch).instantiate())
    frame = bytes.fromhex("0000000000aa" "0000000000bb" "0800") + b"payload bytes"
    # ingress: out on port 2, eth.src = packets seen before (0), eth.type = CRC16 of eth.dst
    rewritten = frame[:6] + bytes(6) + (compute("crc16", frame[:6]) & 0xFFFF).to_bytes(2, "big") + frame[14:]
    assert path.process(frame, 1) == [(2, rewritten)]


def test_only_a_parser_that_does_not_extract_it_first_pays_the_extra_step(tmp_path: Path) -> None:
    for which, direct in (("nothing", False), ("direct", True), ("subparser", True)):
        program = compiled(tmp_path, which)
        parser = next(d for d in program.ast.decls if isinstance(d, ast.ParserDecl) and d.name == "EP")
        assert extracts_first(parser, "egress_intrinsic_metadata_t") is direct
        wrapped = program.module.blocks["egress_parser"].endswith("past_intrinsic")
        assert wrapped is not direct, which
