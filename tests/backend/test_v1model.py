"""v1model architecture semantics (BMv2 simple_switch): default port 0, drops, multicast with
egress_rid, I2E/E2E clones, resubmit, recirculate (instance_type values), truncate, digest,
log_msg, registers, counters, hash."""

from __future__ import annotations

from .helpers import needs_frontend, path_for, simple_program

pytestmark = needs_frontend

HEADER = "bit<8> op; bit<8> itype; bit<8> rid; bit<8> n;"
META = "@field_list(1) bit<8> kept; bit<8> lost;"

INGRESS = """
    register<bit<8>>(4) reg;
    counter(4, CounterType.packets) pkts;
    apply {
        hdr.h.itype = (bit<8>)sm.instance_type;
        pkts.count((bit<32>)hdr.h.op & 3);
        if (hdr.h.op == 0) {
            // untouched egress_spec: port 0
        } else if (hdr.h.op == 1) {
            mark_to_drop(sm);
        } else if (hdr.h.op == 2) {
            sm.mcast_grp = 5;
        } else if (hdr.h.op == 3) {
            sm.egress_spec = 1;
            clone(CloneType.I2E, 7);
        } else if (hdr.h.op == 4) {
            if (sm.instance_type == 0) {
                meta.kept = 0x55; meta.lost = 0x66;
                resubmit_preserving_field_list(1);
            } else {
                hdr.h.n = meta.kept | meta.lost;
                sm.egress_spec = 2;
            }
        } else if (hdr.h.op == 5) {
            if (sm.instance_type == 4) {
                hdr.h.n = meta.kept;
                sm.egress_spec = 3;
            } else {
                meta.kept = 0x77;
                sm.egress_spec = 4;
            }
        } else if (hdr.h.op == 6) {
            bit<8> old;
            reg.read(old, 1);
            reg.write(1, old + 1);
            hdr.h.n = old;
            sm.egress_spec = 1;
        } else if (hdr.h.op == 7) {
            digest(1, meta);
            log_msg("op={} n={}", {hdr.h.op, hdr.h.n});
            truncate(2);
            sm.egress_spec = 1;
        } else if (hdr.h.op == 8) {
            bit<16> h16;
            hash(h16, HashAlgorithm.crc16, 16w0, {hdr.h.n}, 32w65536);
            hdr.h.itype = h16[7:0];
            hdr.h.n = h16[15:8];
            sm.egress_spec = 1;
        } else if (hdr.h.op == 9) {
            sm.egress_spec = 1;
        }
    }
"""

EGRESS = """
    apply {
        hdr.h.rid = (bit<8>)sm.egress_rid;
        if (hdr.h.op == 5 && hdr.h.n == 0) {
            recirculate_preserving_field_list(1);
        }
        if (hdr.h.op == 9 && sm.instance_type == 0) {
            clone_preserving_field_list(CloneType.E2E, 8, 1);
        }
        if (hdr.h.op == 9 && sm.instance_type == 2) {
            hdr.h.n = 0xE2;
        }
        if (hdr.h.op == 3 || hdr.h.op == 9 || hdr.h.op == 2) {
            hdr.h.itype = hdr.h.itype + (bit<8>)sm.instance_type * 16;
        }
    }
"""


def make(tmp_path):
    return path_for(simple_program(tmp_path, HEADER, INGRESS, meta=META, egress=EGRESS))


def test_untouched_egress_spec_goes_to_port_0_and_drop(tmp_path):
    p = make(tmp_path)
    assert p.process(bytes([0, 0, 0, 0, 0xAB]), 9) == [(0, bytes([0, 0, 0, 0, 0xAB]))]
    assert p.process(bytes([1, 0, 0, 0]), 9) == []
    assert p.drops["ingress_drop"] == 1
    assert p.pipeline.counters["I.pkts"].read_cell(0)[0] == 1
    assert p.pipeline.counters["I.pkts"].read_cell(1)[0] == 1


def test_multicast_replicas_carry_egress_rid_and_instance_type_5(tmp_path):
    p = make(tmp_path)
    pre = p.pipeline.pre
    pre.mc_mgrp_create(5)
    pre.mc_node_associate(5, pre.mc_node_create(3, [1, 2]))
    pre.mc_node_associate(5, pre.mc_node_create(4, [6]))
    out = sorted(p.process(bytes([2, 0, 0, 0]), 0))
    assert out == [(1, bytes([2, 0x50, 3, 0])), (2, bytes([2, 0x50, 3, 0])), (6, bytes([2, 0x50, 4, 0]))]


def test_ingress_clone_is_the_original_packet_with_instance_type_1(tmp_path):
    p = make(tmp_path)
    p.pipeline.pre.mirroring_add(7, 9)
    out = sorted(p.process(bytes([3, 0, 0, 0]), 0))
    assert out == [(1, bytes([3, 0, 0, 0])), (9, bytes([3, 0x10, 0, 0]))]


def test_resubmit_keeps_field_list_only(tmp_path):
    p = make(tmp_path)
    assert p.process(bytes([4, 0, 0, 0]), 0) == [(2, bytes([4, 6, 0, 0x55]))]


def test_recirculate_reenters_with_instance_type_4_and_field_list(tmp_path):
    p = make(tmp_path)
    assert p.process(bytes([5, 0, 0, 0]), 0) == [(3, bytes([5, 4, 0, 0x77]))]


def test_egress_clone_has_instance_type_2_and_egress_headers(tmp_path):
    p = make(tmp_path)
    p.pipeline.pre.mirroring_add(8, 7)
    out = sorted(p.process(bytes([9, 0, 0, 0]), 0))
    # original: itype 0 in ingress; clone: egress runs again with instance_type 2 on the
    # headers as the first egress left them (itype already 0 + 0*16)
    assert out == [(1, bytes([9, 0, 0, 0])), (7, bytes([9, 0x20, 0, 0xE2]))]


def test_register_state_persists_across_packets(tmp_path):
    p = make(tmp_path)
    assert p.process(bytes([6, 0, 0, 0]), 0) == [(1, bytes([6, 0, 0, 0]))]
    assert p.process(bytes([6, 0, 0, 0]), 0) == [(1, bytes([6, 0, 0, 1]))]
    assert p.pipeline.registers["I.reg"].read(1) == 2


def test_digest_log_and_truncate(tmp_path):
    p = make(tmp_path)
    digests, logs = [], []
    p.pipeline.digest_sink = lambda name, values: digests.append((name, values))
    p.pipeline.log = logs.append
    assert p.process(bytes([7, 0, 0, 3, 9, 9]), 0) == [(1, bytes([7, 0]))]
    assert digests == [("meta_t", (0, 0))]
    assert logs == ["op=7 n=3"]


def test_hash_crc16_matches_bmv2(tmp_path):
    from p4sim.runtime.hashes import compute

    p = make(tmp_path)
    expected = compute("crc16", bytes([0x42]))
    out = p.process(bytes([8, 0, 0, 0x42]), 0)
    assert out == [(1, bytes([8, expected & 0xFF, 0, expected >> 8]))]


def test_alias_bound_user_metadata_mirrors_intrinsic_fields(tmp_path):
    meta = '@alias("intrinsic_metadata.mcast_grp") bit<16> grp; @alias("standard_metadata.ingress_port") bit<9> inp;'
    ingress = "apply { hdr.h.n = (bit<8>)meta.inp; meta.grp = 3; }"
    egress = "apply { hdr.h.rid = (bit<8>)sm.egress_rid; }"
    p = path_for(simple_program(tmp_path, HEADER, ingress, meta=meta, egress=egress))
    pre = p.pipeline.pre
    pre.mc_mgrp_create(3)
    pre.mc_node_associate(3, pre.mc_node_create(9, [4]))
    assert p.process(bytes([0, 0, 0, 0]), 6) == [(4, bytes([0, 0, 9, 6]))]


def test_register_read_out_of_range_reads_zero(tmp_path):
    """simple_switch 1.15.5 writes 0 to the destination (measured; v1model.p4: unspecified)."""
    ingress = """
    register<bit<8>>(2) r;
    apply { sm.egress_spec = 1; hdr.h.n = 0x77; r.read(hdr.h.n, (bit<32>)hdr.h.op); r.write(5, 1); }
    """
    p = path_for(simple_program(tmp_path, HEADER, ingress))
    assert p.process(bytes([9, 0, 0, 0]), 0) == [(1, bytes([9, 0, 0, 0]))]
    assert p.process(bytes([1, 0, 0, 0]), 0) == [(1, bytes([1, 0, 0, 0]))]


def test_register_read_write_in_and_out_of_range(tmp_path):
    """Register accesses (inlined in the generated code) keep simple_switch's semantics: an index
    >= size reads 0 and a write there does nothing; a write is truncated to the cell width; the
    cells are the ones the control plane sees."""
    ingress = """
    register<bit<4>>(3) reg;
    apply {
        bit<4> v;
        reg.read(v, (bit<32>)hdr.h.idx);
        hdr.h.got = (bit<8>)v;
        reg.write((bit<32>)hdr.h.idx, (bit<4>)hdr.h.val);
        sm.egress_spec = 1;
    }
    """
    prog = simple_program(tmp_path, "bit<8> idx; bit<8> val; bit<8> got;", ingress)
    p = path_for(prog)
    reg = next(iter(p.pipeline.registers.values()))
    assert p.process(bytes([2, 0x1F, 0xAA]), 0) == [(1, bytes([2, 0x1F, 0]))]
    assert reg.cells == [0, 0, 0xF]                       # 0x1F truncated to bit<4>
    assert p.process(bytes([2, 3, 0]), 0) == [(1, bytes([2, 3, 0xF]))]
    assert p.process(bytes([3, 7, 0]), 0) == [(1, bytes([3, 7, 0]))]     # out of range: reads 0
    assert p.process(bytes([200, 7, 0]), 0) == [(1, bytes([200, 7, 0]))]
    assert reg.cells == [0, 0, 3]                         # ... and the writes did nothing
    reg.set_cell(0, 9)                                    # control plane write, seen by the program
    assert p.process(bytes([0, 1, 0]), 0) == [(1, bytes([0, 1, 9]))]
    reg.reset()                                           # reset replaces the cells list
    assert p.process(bytes([0, 2, 0]), 0) == [(1, bytes([0, 2, 0]))]
    assert reg.cells == [2, 0, 0]
