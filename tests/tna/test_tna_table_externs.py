"""The TNA externs attached to tables or to the deparsers, each on a small program of our own written
the way the public tna_* examples use them (tna_counter, tna_meter_lpf_wred, tna_action_selector,
tna_digest, tna_mirror, tna_resubmit, tna_register's direct form), with the behaviour tofino1_base.p4
documents: DirectCounter counts where an action calls count() (less adjust_byte_count bytes), Meter
and DirectMeter colour with the program's encodings (GREEN 0, YELLOW 1, RED 3 by default), an
ActionProfile/ActionSelector resolves members and groups set through P4Runtime, DirectRegisterAction
keeps one cell per entry, Digest.pack reaches the control plane, ParserCounter counts in the parser,
Mirror copies the packet to a clone session behind its mirror header, Resubmit re-runs ingress once
with resubmit_flag set and its header in place of the port metadata.
"""

from __future__ import annotations

import pytest

from p4sim.runtime.tables import ActionCall, Exact, TableEntry
from tests.tna.test_tna_externs import PROGRAM as BASE

HEAD = """
#include <core.p4>
#include <tna.p4>
header eth_h { bit<48> dst; bit<48> src; bit<16> type; }
header mirror_h { bit<8> tag; bit<8> port; }
header resub_h { bit<8> tag; bit<8> seen; bit<48> pad; }
struct hdr_t { mirror_h mirror; eth_h eth; }
struct md_t { resub_h resub; bit<8> color; bit<8> dcolor; bit<32> hits; bit<8> tlvs; }
struct digest_t { bit<48> src; bit<9> port; }
"""

INGRESS_PARSER = """
parser IP_(packet_in pkt, out hdr_t hdr, out md_t md, out ingress_intrinsic_metadata_t ig_intr_md) {
    ParserCounter() pc;
    state start {
        pkt.extract(ig_intr_md);
        md.color = 0; md.dcolor = 0; md.hits = 0; md.tlvs = 0;
        transition select(ig_intr_md.resubmit_flag) {
            1: resubmitted;
            default: port_md;
        }
    }
    state resubmitted { pkt.extract(md.resub); transition eth; }
    state port_md { pkt.advance(PORT_METADATA_SIZE); transition eth; }
    state eth {
        pkt.extract(hdr.eth);
        pc.set(hdr.eth.type[7:0]);          /* the number of one-byte TLVs that follow */
        transition select(pc.is_zero()) {
            true: accept;
            false: tlv;
        }
    }
    state tlv {
        pkt.advance(8);
        md.tlvs = md.tlvs + 1;
        pc.decrement(1);
        transition select(pc.is_zero()) {
            true: accept;
            false: tlv;
        }
    }
}
"""

INGRESS = """
control I(inout hdr_t hdr, inout md_t md, in ingress_intrinsic_metadata_t ig_intr_md,
          in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
          inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
          inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    DirectCounter<bit<32>>(CounterType_t.PACKETS_AND_BYTES) by_dst;
    DirectMeter(MeterType_t.PACKETS) dst_meter;
    Meter<bit<8>>(16, MeterType_t.PACKETS) port_meter;
    Counter<bit<64>, bit<8>>(16, CounterType_t.PACKETS_AND_BYTES) port_bytes;
    DirectRegister<bit<32>>() dst_hits;
    DirectRegisterAction<bit<32>, bit<32>>(dst_hits) bump = {
        void apply(inout bit<32> value, out bit<32> rv) {
            value = value + 1;
            rv = value;
        }
    };
    Hash<bit<16>>(HashAlgorithm_t.CRC16) sel_hash;
    ActionProfile(64) members;
    ActionSelector(members, sel_hash, SelectorMode_t.FAIR, 16, 4) selector;

    action counted(bit<9> port) {
        by_dst.count(14);                   /* count the frame less its Ethernet header */
        md.dcolor = dst_meter.execute();
        md.hits = bump.execute();
        ig_tm_md.ucast_egress_port = port;
    }
    action uncounted(bit<9> port) { ig_tm_md.ucast_egress_port = port; }
    table dst {
        key = { hdr.eth.dst : exact; }
        actions = { counted; uncounted; }
        counters = by_dst;
        meters = dst_meter;
        size = 16;
    }
    action to(bit<9> port) { ig_tm_md.ucast_egress_port = port; }
    table spread {
        key = { hdr.eth.type : exact; hdr.eth.src : selector; }
        actions = { to; }
        implementation = selector;
        size = 16;
    }
    apply {
        if (ig_intr_md.resubmit_flag == 0 && hdr.eth.src == 0xeeeeeeeeeeee) {
            md.resub.setValid();
            md.resub.tag = 0x5e;
            md.resub.seen = (bit<8>)ig_intr_md.ingress_port;
            ig_dprsr_md.resubmit_type = 1;
        } else {
            if (ig_intr_md.resubmit_flag == 1) {
                hdr.eth.src = 48w0x5e00000000 | (bit<48>)md.resub.seen;
            }
            md.color = port_meter.execute(ig_intr_md.ingress_port[7:0]);
            port_bytes.count(ig_intr_md.ingress_port[7:0], 4);      /* less the FCS, say */
            if (!dst.apply().hit) {
                spread.apply();
            }
            hdr.eth.type = md.color ++ md.dcolor;
            if (hdr.eth.dst == 0xdddddddddddd) {
                ig_dprsr_md.digest_type = 1;
            }
            if (hdr.eth.dst == 0xcccccccccccc) {
                ig_dprsr_md.mirror_type = 1;
                hdr.mirror.setValid();
                hdr.mirror.tag = 0x4d;
                hdr.mirror.port = (bit<8>)ig_intr_md.ingress_port;
            }
        }
        ig_tm_md.bypass_egress = 1;
    }
}

control ID(packet_out pkt, inout hdr_t hdr, in md_t md, in ingress_intrinsic_metadata_for_deparser_t d) {
    Digest<digest_t>() learn;
    Mirror() mirror;
    Resubmit() resubmit;
    apply {
        if (d.digest_type == 1) {
            learn.pack({hdr.eth.src, 9w5});
        }
        if (d.mirror_type == 1) {
            mirror.emit<mirror_h>(10w7, hdr.mirror);
        }
        if (d.resubmit_type == 1) {
            resubmit.emit<resub_h>(md.resub);
        }
        pkt.emit(hdr.eth);
    }
}
"""

EGRESS = BASE[BASE.index("parser EP("):]     # an empty egress, as in test_tna_externs

PROGRAM = HEAD + INGRESS_PARSER + INGRESS + EGRESS


def mac(value: int) -> bytes:
    return value.to_bytes(6, "big")


def frame(dst: int, src: int = 0x0000000000AA, tlvs: int = 0) -> bytes:
    return mac(dst) + mac(src) + bytes([0, tlvs]) + bytes(range(1, tlvs + 1)) + b"payload-bytes"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    from p4sim.tna.program import compile_tna

    path = tmp_path_factory.mktemp("tna") / "externs.p4"
    path.write_text(PROGRAM)
    return compile_tna(str(path), [], "tna")


@pytest.fixture
def switch(compiled):
    from p4sim.tna.pipeline import TnaPath

    pipeline = compiled.instantiate()
    return pipeline, TnaPath(pipeline)


def add_dst(pipeline, dst: int, action: str, port: int) -> TableEntry:
    entry = TableEntry(match=(Exact(dst),), action=ActionCall(f"pipe.I.{action}", (port,)))
    pipeline.tables["pipe.I.dst"].insert(entry)
    return entry


def test_direct_counter_counts_where_the_action_calls_count_less_the_adjustment(switch) -> None:
    pipeline, path = switch
    counted = add_dst(pipeline, 0xA1, "counted", 3)
    uncounted = add_dst(pipeline, 0xA2, "uncounted", 4)
    for _ in range(3):
        assert path.process(frame(0xA1), 1)[0][0] == 3
    assert path.process(frame(0xA2), 1)[0][0] == 4
    size = len(frame(0xA1))
    assert (counted.packets, counted.bytes) == (3, 3 * (size - 14))
    assert (uncounted.packets, uncounted.bytes) == (0, 0)         # hit, but its action does not count
    assert pipeline.counters["pipe.I.port_bytes"].cells[1] == [4, 4 * (size - 4)]   # indexed, adjusted
    assert "pipe.I.by_dst" in pipeline.direct_counters


def test_meters_colour_with_the_tna_encodings(switch) -> None:
    pipeline, path = switch
    entry = add_dst(pipeline, 0xA1, "counted", 3)
    # 1 packet/s committed and peak, bursts of 1 and 2 packets: green, yellow, then red
    pipeline.meters["pipe.I.port_meter"].set_config(1, 1.0, 1, 1.0, 2)
    pipeline.direct_meters["pipe.I.dst_meter"].set_config(entry, 1.0, 1, 1.0, 2)
    colours = []
    for _ in range(3):
        (_, data), = path.process(frame(0xA1), 1, now_us=5)
        colours.append((data[12], data[13]))          # (Meter, DirectMeter) in eth.type
    assert colours == [(0, 0), (1, 1), (3, 3)]         # GREEN 0, YELLOW 1, RED 3 (MeterColor_t)
    (_, data), = path.process(frame(0xA1), 2, now_us=5)   # port 2's meter cell is not configured
    assert data[12] == 0


def test_direct_register_action_keeps_one_cell_per_entry(switch) -> None:
    pipeline, path = switch
    first = add_dst(pipeline, 0xA1, "counted", 3)
    second = add_dst(pipeline, 0xA3, "counted", 5)
    for dst in (0xA1, 0xA1, 0xA3, 0xA1):
        path.process(frame(dst), 1)
    cells = pipeline.direct_registers["pipe.I.dst_hits"]
    assert (cells.read(first), cells.read(second)) == (3, 1)


def test_action_selector_spreads_a_group_by_the_selector_key_hash(switch) -> None:
    from p4sim.runtime.hashes import compute

    pipeline, path = switch
    profile = pipeline.action_profiles["pipe.I.selector"]
    for member, port in enumerate((6, 7, 8)):
        profile.add_member(member, ActionCall("pipe.I.to", (port,)))
    profile.add_group(1, [0, 1, 2])
    pipeline.tables["pipe.I.spread"].insert(TableEntry(match=(Exact(0),), action=None, group_id=1))
    ports = {}
    for src in range(0x10, 0x40):
        (port, _), = path.process(frame(0xB0, src), 1)
        ports[src] = port
        assert port == (6, 7, 8)[compute("crc16", mac(src)) % 3]
    assert set(ports.values()) == {6, 7, 8}


def test_digest_pack_reaches_the_control_plane(switch) -> None:
    pipeline, path = switch
    seen = []
    pipeline.digest_sink = lambda name, values: seen.append((name, values))
    add_dst(pipeline, 0xDDDDDDDDDDDD, "uncounted", 3)
    path.process(frame(0xDDDDDDDDDDDD, 0x1234), 1)
    path.process(frame(0xA9), 1)
    assert seen == [("digest_t", (0x1234, 5))]


def test_parser_counter_walks_the_tlvs(switch) -> None:
    pipeline, path = switch
    add_dst(pipeline, 0xA2, "uncounted", 4)
    for tlvs in (0, 1, 3):
        (_, data), = path.process(frame(0xA2, tlvs=tlvs), 1)
        assert data[14:] == b"payload-bytes"        # exactly eth.type's count of TLV bytes skipped


def test_mirror_copies_the_arriving_packet_to_the_session_behind_its_header(switch) -> None:
    pipeline, path = switch
    add_dst(pipeline, 0xCCCCCCCCCCCC, "uncounted", 3)
    pipeline.pre.mirroring_add(7, 9)
    original = frame(0xCCCCCCCCCCCC)
    out = sorted(path.process(original, 2))
    assert [port for port, _ in out] == [3, 9]
    assert out[1][1] == bytes([0x4D, 2]) + original        # mirror header, then the packet as it came
    assert out[0][1][:12] == original[:12]                # the original still goes to its port


def test_resubmit_reruns_ingress_once_with_its_header(switch) -> None:
    pipeline, path = switch
    add_dst(pipeline, 0xA2, "uncounted", 4)
    (port, data), = path.process(frame(0xA2, 0xEEEEEEEEEEEE), 6)
    assert port == 4
    assert data[6:12] == mac(0x5E00000006)                # the resubmit header carried the port
    assert path.drops["resubmit_again"] == 0
