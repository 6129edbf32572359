"""TNA externs on small programs of our own (written the way the public tna_* examples use them):
RegisterAction's apply body as one read-modify-write per packet with its return value, Hash,
Counter, and a clear ``unsupported`` error with the location for externs p4sim does not model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4sim.errors import P4CompileError

PROGRAM = """
#include <core.p4>
#include <tna.p4>
header eth_h { bit<48> dst; bit<48> src; bit<16> type; }
struct hdr_t { eth_h eth; }
struct md_t { bit<32> seen; }

parser IP_(packet_in pkt, out hdr_t hdr, out md_t md, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control I(inout hdr_t hdr, inout md_t md, in ingress_intrinsic_metadata_t ig_intr_md,
          in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
          inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
          inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<bit<32>, bit<8>>(256) packets_per_port;
    /* count up, saturating at 3; return the count before this packet */
    RegisterAction<bit<32>, bit<8>, bit<32>>(packets_per_port) count_upto3 = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if (value < 3) {
                value = value + 1;
            }
        }
    };
    Hash<bit<16>>(HashAlgorithm_t.CRC16) h;
    Counter<bit<32>, bit<9>>(512, CounterType_t.PACKETS) rx;
    apply {
        rx.count(ig_intr_md.ingress_port);
        md.seen = count_upto3.execute(ig_intr_md.ingress_port[7:0]);
        hdr.eth.type = h.get({hdr.eth.dst});
        hdr.eth.src = (bit<48>)md.seen;
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port + 1;
        ig_tm_md.bypass_egress = 1;
        if (md.seen == 2) {
            ig_dprsr_md.drop_ctl = 1;
        }
    }
}

control ID(packet_out pkt, inout hdr_t hdr, in md_t md, in ingress_intrinsic_metadata_for_deparser_t d) {
    apply { pkt.emit(hdr); }
}
parser EP(packet_in pkt, out hdr_t hdr, out md_t md, out egress_intrinsic_metadata_t eg_intr_md) {
    state start { pkt.extract(eg_intr_md); transition accept; }
}
control E(inout hdr_t hdr, inout md_t md, in egress_intrinsic_metadata_t eg_intr_md,
          in egress_intrinsic_metadata_from_parser_t a, inout egress_intrinsic_metadata_for_deparser_t b,
          inout egress_intrinsic_metadata_for_output_port_t c) { apply { } }
control ED(packet_out pkt, inout hdr_t hdr, in md_t md, in egress_intrinsic_metadata_for_deparser_t d) {
    apply { }
}
Pipeline(IP_(), I(), ID(), EP(), E(), ED()) pipe;
Switch(pipe) main;
"""


def compile_text(tmp_path: Path, text: str, arch: str = "tna"):
    from p4sim.tna.program import compile_tna

    path = tmp_path / "prog.p4"
    path.write_text(text)
    return compile_tna(str(path), [], arch)


def test_register_action_is_one_read_modify_write_with_its_return_value(tmp_path: Path) -> None:
    from p4sim.runtime.hashes import compute
    from p4sim.tna.pipeline import TnaPath

    program = compile_text(tmp_path, PROGRAM)
    pipeline = program.instantiate()
    path = TnaPath(pipeline)
    frame = bytes.fromhex("0000000000aa" "000000000000" "0800") + b"payload"
    seen = []
    for _ in range(5):
        out = path.process(frame, 7)
        seen.append(None if not out else int.from_bytes(out[0][1][6:12], "big"))
        if out:
            assert out[0][0] == 8                                                  # ucast_egress_port
            assert out[0][1][12:14] == (compute("crc16", frame[:6]) & 0xFFFF).to_bytes(2, "big")
    assert seen == [0, 1, None, 3, 3]           # the value before each packet, saturating; 2 dropped
    assert pipeline.registers["pipe.I.packets_per_port"].read(7) == 3
    assert pipeline.counters["pipe.I.rx"].cells[7][0] == 5


@pytest.mark.parametrize("decl, what", [
    ("CRCPolynomial<bit<16>>(16w0x1021, false, false, false, 16w0, 16w0) poly;", "extern instance of CRCPolynomial"),
    ("ParserPriority() prio;", "extern instance of ParserPriority"),
    ("Hash<bit<16>>(HashAlgorithm_t.CRC64) h64;", "Hash h64 with algorithm CRC64"),
])
def test_unmodelled_externs_are_refused_with_their_location(tmp_path: Path, decl: str, what: str) -> None:
    text = PROGRAM.replace("    Hash<bit<16>>(HashAlgorithm_t.CRC16) h;", "    Hash<bit<16>>(HashAlgorithm_t.CRC16) h;\n    " + decl)
    with pytest.raises(P4CompileError) as info:
        compile_text(tmp_path, text)
    line = text[: text.index(decl)].count("\n") + 1
    assert str(info.value).startswith(f"{tmp_path / 'prog.p4'}:{line}:5: unsupported: {what}"), str(info.value)


def test_tna_include_needs_the_tofino1_or_2_target(tmp_path: Path) -> None:
    program = compile_text(tmp_path, PROGRAM, "t2na")      # tna.p4 compiles on Tofino2 too (SDE does)
    assert program.arch == "t2na"
    with pytest.raises(P4CompileError, match="t2na.p4.*#error"):
        compile_text(tmp_path, PROGRAM.replace("<tna.p4>", "<t2na.p4>"), "tna")
