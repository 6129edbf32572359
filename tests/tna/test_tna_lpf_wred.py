"""Tofino's Lpf, DirectLpf, Wred and DirectWred on a small TNA program of our own, with numbers
derived by hand from the filter's definition (docs/p4sim.md, p4sim/tna/lpf_wred.py):

* ``k = e^(-Δt/τ)``; SAMPLE ``V' = V k + D (1 - k)`` (gain τ when ``D > V``, else decay τ);
  RATE ``V' = V k + D``; the first sample of a cell is taken as is; ``V`` is rounded to the
  nearest integer; the output is ``V' >> output_scale_down_factor`` cut to the result's width.
* The time constants are chosen so that one microsecond (p4sim's clock step) gives round
  factors: ``τ = 1000 / ln 2`` ns makes ``k = 1/2`` per µs, ``τ = 1000 / ln 4`` ns ``k = 1/4``.
* WRED: the smoothed depth ``V`` drops with probability 0 up to ``min``, ``max_probability
  (V - min) / (max - min)`` up to ``max``, 1 above.

The old model refused every one of these programs at compile time (``unsupported: extern
instance of Lpf``), so each test fails on it. Budget: about 4 s.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from p4sim.runtime.tables import ActionCall, Exact, TableEntry
from p4sim.tna.lpf_wred import LPF_RATE, LPF_SAMPLE, LpfSpec, WredSpec

TAU_HALF = 1000 / math.log(2)          # k = 0.5 per microsecond
TAU_QUARTER = 1000 / math.log(4)       # k = 0.25 per microsecond

PROGRAM = """
#include <core.p4>
#include <tna.p4>
header eth_h { bit<48> dst; bit<48> src; bit<16> type; }
/* idx: the Lpf/Wred cell; x: the sample; lpf, dlpf, dwred: what the filters answered */
header p_h { bit<8> idx; bit<8> x; bit<8> lpf; bit<8> dlpf; bit<8> dwred; }
struct hdr_t { eth_h eth; p_h p; }
struct md_t { }

parser IP_(packet_in pkt, out hdr_t hdr, out md_t md, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.eth);
        pkt.extract(hdr.p);
        transition accept;
    }
}

control I(inout hdr_t hdr, inout md_t md, in ingress_intrinsic_metadata_t ig_intr_md,
          in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
          inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
          inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Lpf<bit<8>, bit<8>>(4) lpf;
    DirectLpf<bit<8>>() dlpf;
    DirectWred<bit<8>>(8w1, 8w0) dwred;
    action smooth() { hdr.p.dlpf = dlpf.execute(hdr.p.x); }
    table per_src { key = { hdr.eth.src : exact; } actions = { smooth; } filters = dlpf; size = 16; }
    action judge() { hdr.p.dwred = dwred.execute(hdr.p.x); }
    table per_dst { key = { hdr.eth.dst : exact; } actions = { judge; } filters = dwred; size = 16; }
    apply {
        hdr.p.lpf = lpf.execute(hdr.p.x, hdr.p.idx);
        per_src.apply();
        per_dst.apply();
        ig_tm_md.ucast_egress_port = 2;
    }
}

control ID(packet_out pkt, inout hdr_t hdr, in md_t md, in ingress_intrinsic_metadata_for_deparser_t d) {
    apply { pkt.emit(hdr); }
}
parser EP(packet_in pkt, out hdr_t hdr, out md_t md, out egress_intrinsic_metadata_t eg_intr_md) {
    state start { pkt.extract(eg_intr_md); pkt.extract(hdr.eth); pkt.extract(hdr.p); transition accept; }
}
/* WRED on the packet's queue depth, as Tofino programs use it: drop when it says drop */
control E(inout hdr_t hdr, inout md_t md, in egress_intrinsic_metadata_t eg_intr_md,
          in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
          inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
          inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    Wred<bit<19>, bit<8>>(4, 8w0xDD, 8w0x11) wred;
    apply {
        if (wred.execute(eg_intr_md.enq_qdepth, hdr.p.idx) == 0xDD) {
            eg_dprsr_md.drop_ctl = 1;
        }
    }
}
control ED(packet_out pkt, inout hdr_t hdr, in md_t md, in egress_intrinsic_metadata_for_deparser_t d) {
    apply { pkt.emit(hdr); }
}
Pipeline(IP_(), I(), ID(), EP(), E(), ED()) pipe;
Switch(pipe) main;
"""

SRC_A, SRC_B, DST_A, DST_B = 0xA, 0xB, 0xDA, 0xDB


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    from p4sim.tna.program import compile_tna

    path = tmp_path_factory.mktemp("lpf") / "prog.p4"
    path.write_text(PROGRAM)
    return compile_tna(str(path), [], "tna")


@pytest.fixture
def rig(program):
    from p4sim.tna.pipeline import TnaPath

    pipeline = program.instantiate()
    return pipeline, TnaPath(pipeline)


def frame(idx: int, x: int, src: int = 0x1, dst: int = 0x2) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + b"\x88\xb5" + bytes([idx, x, 0, 0, 0]) + bytes(20)


def run(path, idx: int, x: int, now_us: int, *, qdepth: int = 0, src: int = 0x1, dst: int = 0x2) -> dict | None:
    """The filters' answers for one packet (None: dropped)."""
    out = path.process(frame(idx, x, src, dst), 1, now_us, qdepth=qdepth)
    if not out:
        return None
    (port, data), = out
    assert port == 2
    return {"lpf": data[16], "dlpf": data[17], "dwred": data[18]}


def lpf_outputs(path, idx: int, samples: list[tuple[int, int]]) -> list[int]:
    return [run(path, idx, x, t)["lpf"] for t, x in samples]


def test_sample_lpf_is_a_moving_average_with_rise_and_fall_time_constants(rig) -> None:
    """Gain k = 1/2, decay k = 1/4 per µs. 100 (first: taken as is); 200 rising: 100/2 + 200/2
    = 150; 200: 75 + 100 = 175; 0 falling: 175/4 = 43.75 -> 44. Scale-down 1 halves each."""
    pipeline, path = rig
    lpf = pipeline.tna_externs["pipe.I.lpf"]
    lpf.configure(0, LpfSpec(LPF_SAMPLE, TAU_HALF, TAU_QUARTER, 0))
    lpf.configure(1, LpfSpec(LPF_SAMPLE, TAU_HALF, TAU_QUARTER, 1))
    samples = [(0, 100), (1, 200), (2, 200), (3, 0)]
    assert lpf_outputs(path, 0, samples) == [100, 150, 175, 44]
    assert lpf_outputs(path, 1, samples) == [50, 75, 87, 22]
    assert lpf.cells[0].value == 44 and lpf.cells[1].value == 44      # the state is unscaled


def test_rate_lpf_sums_its_input_with_decay(rig) -> None:
    """RATE, k = 1/2 per µs, 100 every µs: 100, 150, 175, 187.5 -> 188, 94 + 100 = 194 (towards
    D / (1 - k) = 200); a second packet in the same µs adds without decay: 294, whose low 8 bits
    are 38; after 100 µs (k = 2^-100) only the new sample is left."""
    pipeline, path = rig
    pipeline.tna_externs["pipe.I.lpf"].configure(2, LpfSpec(LPF_RATE, TAU_HALF, TAU_HALF, 0))
    assert lpf_outputs(path, 2, [(t, 100) for t in range(5)]) == [100, 150, 175, 188, 194]
    assert lpf_outputs(path, 2, [(4, 100), (104, 100)]) == [294 & 0xFF, 100]
    assert pipeline.tna_externs["pipe.I.lpf"].cells[2].value == 100


def test_unconfigured_lpf_passes_its_input_and_out_of_range_cells_give_zero(rig) -> None:
    """The driver's default spec (SAMPLE, τ 0, scale 0) makes k = 0: the output is the input,
    even for packets in the same µs; an index past the Lpf's 4 cells gives 0."""
    _, path = rig
    assert lpf_outputs(path, 3, [(0, 7), (0, 250), (0, 3)]) == [7, 250, 3]
    assert lpf_outputs(path, 9, [(0, 7)]) == [0]


def test_reconfiguring_a_cell_restarts_its_filter(rig) -> None:
    pipeline, path = rig
    lpf = pipeline.tna_externs["pipe.I.lpf"]
    lpf.configure(0, LpfSpec(LPF_SAMPLE, TAU_HALF, TAU_HALF, 0))
    assert lpf_outputs(path, 0, [(0, 100), (1, 0)]) == [100, 50]
    lpf.configure(0, LpfSpec(LPF_SAMPLE, TAU_HALF, TAU_HALF, 0))
    assert lpf_outputs(path, 0, [(2, 0)]) == [0]                # first sample again: taken as is


def delivered(path, idx: int, depth: int, n: int, start: int = 0) -> int:
    return sum(run(path, idx, 0, start + t, qdepth=depth) is not None for t in range(n))


def test_wred_drops_with_the_linear_red_probability_of_the_queue_depth(rig) -> None:
    """min 10, max 20, max probability 1/2, no smoothing (τ 0): depth 10 never drops, 21 always;
    15 drops (15 - 10) / (20 - 10) / 2 = 1/4 of the packets, 20 half (4000 packets each: 5.8
    standard deviations of slack at ±0.04); an unconfigured cell never drops."""
    pipeline, path = rig
    wred = pipeline.tna_externs["pipe.E.wred"]
    wred.rng.seed(15)
    wred.configure(0, WredSpec(0.0, 10, 20, 0.5))
    assert delivered(path, 0, 10, 300) == 300
    assert delivered(path, 0, 21, 300) == 0
    n = 4000
    assert 0.71 <= delivered(path, 0, 15, n) / n <= 0.79
    assert 0.46 <= delivered(path, 0, 20, n) / n <= 0.54
    assert delivered(path, 1, (1 << 19) - 1, 300) == 300


def test_wred_judges_the_smoothed_depth(rig) -> None:
    """τ with k = 1/2 per µs, min 10, max 15, max probability 0 (no early drops): depths 0, 28,
    28, 0 smooth to 0, 14, 21, 10.5 -> 11: only the third packet is above max and dropped. A
    filter-less WRED would have dropped the second too (28 > 15)."""
    pipeline, path = rig
    pipeline.tna_externs["pipe.E.wred"].configure(2, WredSpec(TAU_HALF, 10, 15, 0.0))
    got = [run(path, 2, 0, t, qdepth=d) is not None for t, d in enumerate([0, 28, 28, 0])]
    assert got == [True, True, False, True]
    assert pipeline.tna_externs["pipe.E.wred"].cells[2].value == 11


def test_direct_filters_have_one_cell_per_entry(rig) -> None:
    """DirectLpf on per_src: entry A configured (SAMPLE, k = 1/2) smooths 100, 0 to 100, 50; entry
    B unconfigured passes 100, 0; A deleted and re-added starts unconfigured. DirectWred on
    per_dst: entry configured min 10, max 20, τ 0 answers its drop value 1 for 30 and the
    no-drop value 0 for 5; an unconfigured entry never drops."""
    pipeline, path = rig
    per_src, per_dst = pipeline.tables["pipe.I.per_src"], pipeline.tables["pipe.I.per_dst"]
    a = TableEntry(match=(Exact(SRC_A),), action=ActionCall("pipe.I.smooth", ()))
    per_src.insert(a)
    per_src.insert(TableEntry(match=(Exact(SRC_B),), action=ActionCall("pipe.I.smooth", ())))
    dlpf = pipeline.tna_externs["pipe.I.dlpf"]
    dlpf.configure(a, LpfSpec(LPF_SAMPLE, TAU_HALF, TAU_HALF, 0))
    assert [run(path, 0, x, t, src=SRC_A)["dlpf"] for t, x in ((0, 100), (1, 0))] == [100, 50]
    assert [run(path, 0, x, t, src=SRC_B)["dlpf"] for t, x in ((0, 100), (1, 0))] == [100, 0]
    per_src.delete(a)
    a2 = TableEntry(match=(Exact(SRC_A),), action=ActionCall("pipe.I.smooth", ()))
    per_src.insert(a2)
    assert dlpf.spec(a2) == LpfSpec()
    assert [run(path, 0, x, t, src=SRC_A)["dlpf"] for t, x in ((2, 100), (3, 0))] == [100, 0]

    d = TableEntry(match=(Exact(DST_A),), action=ActionCall("pipe.I.judge", ()))
    per_dst.insert(d)
    per_dst.insert(TableEntry(match=(Exact(DST_B),), action=ActionCall("pipe.I.judge", ())))
    pipeline.tna_externs["pipe.I.dwred"].configure(d, WredSpec(0.0, 10, 20, 1.0))
    assert [run(path, 0, x, t, dst=DST_A)["dwred"] for t, x in ((0, 30), (1, 5))] == [1, 0]
    assert [run(path, 0, x, t, dst=DST_B)["dwred"] for t, x in ((0, 255), (1, 255))] == [0, 0]


@pytest.mark.parametrize(("spec", "reason"), [
    (LpfSpec("FAST", 1.0, 1.0, 0), "LPF type 'FAST'"),
    (LpfSpec(LPF_SAMPLE, -1.0, 1.0, 0), "gain_time_constant_ns -1.0"),
    (LpfSpec(LPF_RATE, 1.0, float("nan"), 0), "decay_time_constant_ns nan"),
    (LpfSpec(LPF_RATE, 1.0, 1.0, 32), "output_scale_down_factor 32"),
    (WredSpec(1.0, 20, 10, 0.5), "thresholds min 20, max 10"),
    (WredSpec(1.0, 10, 20, 1.5), "max_probability 1.5"),
])
def test_bad_specs_are_refused_with_the_field_and_leave_the_cell_alone(rig, spec, reason) -> None:
    from p4sim.errors import UserError

    pipeline, _ = rig
    target = pipeline.tna_externs["pipe.I.lpf" if isinstance(spec, LpfSpec) else "pipe.E.wred"]
    before = target.specs[1]
    with pytest.raises(UserError, match=reason):
        target.configure(1, spec)
    assert target.specs[1] == before


def test_p4info_lists_the_filters_as_bf_p4c_does(program) -> None:
    from p4sim.tna import extern_messages as xm

    p4info = program.p4info
    by_type = {e.extern_type_id: e for e in p4info.externs}
    tables = {t.preamble.name: t for t in p4info.tables}
    (lpf,) = by_type[xm.LPF_TYPE_ID].instances
    (dlpf,) = by_type[xm.DIRECT_LPF_TYPE_ID].instances
    (wred,) = by_type[xm.WRED_TYPE_ID].instances
    (dwred,) = by_type[xm.DIRECT_WRED_TYPE_ID].instances
    assert [by_type[t].extern_type_name for t in (0x89, 0x8A, 0x87, 0x88)] == ["Lpf", "DirectLpf", "Wred", "DirectWred"]
    assert (lpf.preamble.name, dlpf.preamble.name, wred.preamble.name, dwred.preamble.name) == (
        "pipe.I.lpf", "pipe.I.dlpf", "pipe.E.wred", "pipe.I.dwred")
    assert lpf.preamble.id >> 24 == 0x89 and wred.preamble.id >> 24 == 0x87
    info = xm.BarefootLpf()
    assert lpf.info.Unpack(info) and info.size == 4
    info = xm.BarefootWred()
    assert wred.info.Unpack(info) and (info.size, info.spec.drop_value, info.spec.no_drop_value) == (4, 0xDD, 0x11)
    info = xm.BarefootDirectWred()
    assert dwred.info.Unpack(info) and (info.spec.drop_value, info.spec.no_drop_value) == (1, 0)
    assert info.direct_table_id == tables["pipe.I.per_dst"].preamble.id
    assert dwred.preamble.id in tables["pipe.I.per_dst"].direct_resource_ids
    info = xm.BarefootDirectLpf()
    assert dlpf.info.Unpack(info) and info.direct_table_id == tables["pipe.I.per_src"].preamble.id
    assert dlpf.preamble.id in tables["pipe.I.per_src"].direct_resource_ids
    (pm,) = by_type[xm.PORT_METADATA_TYPE_ID].instances
    assert pm.preamble.name == "pipe.IP_.$PORT_METADATA"


def test_direct_filter_outside_its_tables_action_is_refused_with_the_location(tmp_path: Path) -> None:
    from p4sim.errors import P4CompileError
    from p4sim.tna.program import compile_tna

    text = PROGRAM.replace("        hdr.p.lpf = lpf.execute(hdr.p.x, hdr.p.idx);",
                           "        hdr.p.lpf = dlpf.execute(hdr.p.x);")
    path = tmp_path / "prog.p4"
    path.write_text(text)
    line = text[: text.index("hdr.p.lpf = dlpf")].count("\n") + 1
    with pytest.raises(P4CompileError, match=rf"prog.p4:{line}:\d+: unsupported: DirectLpf.execute outside an action"):
        compile_tna(str(path), [], "tna")
