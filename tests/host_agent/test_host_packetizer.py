"""Packetizer layout: whole elements per packet, offsets/counts/lengths, payload bytes, dtypes."""

from __future__ import annotations

import numpy as np
import pytest

from host_agent import protocol as P
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy

POL = TagPolicy()


@pytest.mark.parametrize("mtu,dtype,epp", [(1500, np.float32, 362), (1500, np.float16, 724),
                                           (1500, np.int8, 1448), (9000, np.float32, 2237)])
def test_layout_and_payload(mtu, dtype, epp):
    n = epp * 3 + 5
    t = (np.arange(n) % 100).astype(dtype)
    pt = packetize(t, tensor_id=2, policy=POL, job_id=1, worker_id=7, iteration=9, mtu=mtu)
    assert pt.elems_per_packet == epp and pt.n_packets == 4 and pt.full_packets == 3
    esize = np.dtype(dtype).itemsize
    rebuilt = bytearray()
    for i in range(pt.n_packets):
        raw = bytes(pt.packet(i))
        h = P.DlcpHeader.unpack(raw)
        assert (h.version, h.msg_type, h.job_id, h.worker_id, h.iteration, h.tensor_id, h.seq) == \
            (1, P.MSG_DATA, 1, 7, 9, 2, i)
        assert h.offset == i * epp and h.count == (epp if i < 3 else 5)
        assert len(raw) == P.DLCP_HEADER_LEN + h.count * esize
        assert 20 + P.data_udp_length(h.count, h.dtype) <= mtu
        rebuilt += raw[P.DLCP_HEADER_LEN:]
    assert bytes(rebuilt) == t.tobytes()
    assert bytes(pt.run(0, 3)) == b"".join(bytes(pt.packet(i)) for i in range(3))   # GSO run layout


def test_retransmit_marks_flag_and_new_seq():
    pt = packetize(np.ones(1000, np.float32), tensor_id=1, policy=POL)
    pt.mark_retransmit(1, 77)
    h = pt.header(1)
    assert h.flags & P.FLAG_RETX and h.seq == P.retx_seq(77, bool(pt.critical[1])) and h.offset == 362
    assert h.seq >> 1 == 77


def test_promoted_retransmission_is_critical_but_counts_as_its_original_class():
    g = np.random.default_rng(3).standard_normal(362 * 40).astype(np.float32)
    pt = packetize(g, tensor_id=1, policy=TagPolicy(critical_share=0.1))
    crit, plain = int(np.flatnonzero(pt.critical)[0]), int(np.flatnonzero(~pt.critical)[0])
    for i in (crit, plain):
        pt.mark_retransmit(i, 5, promote=True)
        h = pt.header(i)
        assert h.flags & P.FLAG_CRITICAL and h.flags & P.FLAG_RETX      # the switch spares both
        assert P.counts_as_critical(h.flags, h.seq) == (i == crit)     # the receiver tells them apart
    first = pt.header(int(np.flatnonzero(~pt.critical)[1]))
    assert not P.counts_as_critical(first.flags, first.seq)


def test_descriptor_matches_packets():
    pt = packetize(np.random.default_rng(0).standard_normal(10_000).astype(np.float32), tensor_id=1,
                   policy=TagPolicy(critical_share=0.1, loss_bound=0.25))
    d = pt.descriptor()
    assert (d.n_elements, d.elems_per_packet, d.n_packets, d.n_critical, d.loss_bound_ppm) == (
        10_000, 362, 28, 3, 250_000)
    assert P.TensorDescriptor.unpack(d.pack()) == d


def test_bad_tensors_rejected():
    with pytest.raises(ValueError, match="empty"):
        packetize(np.zeros(0, np.float32), tensor_id=1, policy=POL)
    with pytest.raises(ValueError, match="unsupported tensor dtype float64"):
        packetize(np.zeros(4), tensor_id=1, policy=POL)
    with pytest.raises(ValueError, match="bfloat16"):
        packetize(np.zeros(4, np.float32), tensor_id=1, policy=POL, bfloat16=True)


def test_multidimensional_tensor_is_flattened_in_c_order():
    t = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    pt = packetize(t, tensor_id=1, policy=POL)
    assert bytes(pt.packet(0))[P.DLCP_HEADER_LEN:] == t.tobytes()


def test_torch_tensor_is_accepted():
    torch = pytest.importorskip("torch", reason="torch is optional and not installed")
    t = torch.arange(1000, dtype=torch.float32)
    pt = packetize(t, tensor_id=1, policy=POL)
    assert pt.n_elements == 1000 and bytes(pt.packet(0))[24:] == t.numpy()[:362].tobytes()
    b = torch.ones(10, dtype=torch.bfloat16)
    pb = packetize(b, tensor_id=2, policy=POL, bfloat16=True)
    assert pb.dtype == P.DTYPE_BFLOAT16 and bytes(pb.packet(0))[24:26] == b"\x80\x3f"


def test_packetize_into_a_reused_buffer_builds_the_same_packets():
    from host_agent.packetizer import records_bytes
    x = np.random.default_rng(5).standard_normal(10_000).astype(np.float32)
    ref = packetize(x, tensor_id=3, policy=TagPolicy(), mtu=1500)
    buf = np.full(records_bytes(x.size, 1500) + 100, 0xAB, np.uint8)     # dirty, larger than needed
    got = packetize(x, tensor_id=3, policy=TagPolicy(), mtu=1500, buffer=buf)
    assert np.shares_memory(got.records, buf)
    assert got.n_packets == ref.n_packets
    assert all(bytes(got.packet(i)) == bytes(ref.packet(i)) for i in range(ref.n_packets))
    small = np.empty(records_bytes(x.size, 1500) - 1, np.uint8)          # too small: a fresh array
    other = packetize(x, tensor_id=3, policy=TagPolicy(), mtu=1500, buffer=small)
    assert not np.shares_memory(other.records, small)
    assert bytes(other.packet(ref.n_packets - 1)) == bytes(ref.packet(ref.n_packets - 1))


def test_copy_is_the_same_packets_as_a_separate_transfer():
    x = np.random.default_rng(6).standard_normal(5_000).astype(np.float32)
    ref = packetize(x, tensor_id=4, policy=TagPolicy(), pull=True, kind=P.KIND_PARAMETER, iteration=3)
    a = packetize(x, tensor_id=4, policy=TagPolicy(), pull=True, kind=P.KIND_PARAMETER, iteration=3)
    b = a.copy()
    assert not np.shares_memory(a.records, b.records)
    assert all(bytes(b.packet(i)) == bytes(ref.packet(i)) for i in range(ref.n_packets))
    assert b.descriptor() == ref.descriptor() and b.layer_class == ref.layer_class
    a.seal(0x1234)                                    # one transfer's token and retransmission ...
    a.mark_retransmit(1, a.n_packets, promote=True)
    assert all(bytes(b.packet(i)) == bytes(ref.packet(i)) for i in range(ref.n_packets))   # ... not the other's
    b.seal(0x99)
    assert int(b.records["seq"][2]) == 2 ^ 0x99 and int(a.records["seq"][2]) == 2 ^ 0x1234
