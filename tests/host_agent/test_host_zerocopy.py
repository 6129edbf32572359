"""Zero-copy send (issue 12): packets sent as header + payload straight from the tensor's memory.

The layout must be byte-for-byte the records layout's (the wire format does not change), every
send path (single ``sendmsg``, GSO runs, retransmissions) must deliver the tensor bit-exactly over
real loopback sockets, and no payload byte may be copied into the records.
"""

from __future__ import annotations

import numpy as np
import pytest
from host_helpers import run_both

from host_agent import protocol as P
from host_agent.packetizer import packetize, records_bytes
from host_agent.policy import TagPolicy
from host_agent.relay import LossyRelay, drop_offsets

RNG = np.random.default_rng(12)


@pytest.mark.parametrize("mtu,dtype", [(1500, np.float32), (1500, np.float16), (9000, np.int8),
                                       (65535, np.float32)])
def test_zero_copy_packets_are_the_records_packets(mtu, dtype):
    t = (RNG.standard_normal(50_001) * 50).astype(dtype)
    kw = dict(tensor_id=5, policy=TagPolicy(critical_share=0.2, loss_bound=0.1), job_id=3, worker_id=2,
              iteration=7, mtu=mtu)
    ref = packetize(t, **kw)
    zc = packetize(t, zero_copy=True, **kw)
    assert zc.zero_copy and not ref.zero_copy
    assert zc.records.dtype.itemsize == P.DLCP_HEADER_LEN                  # headers only
    assert np.shares_memory(zc.payload, t)                                  # payloads stay in place
    assert zc.stride == ref.stride and zc.full_packets == ref.full_packets
    assert np.array_equal(zc.critical, ref.critical) and np.array_equal(zc.lengths, ref.lengths)
    for i in range(ref.n_packets):
        assert bytes(zc.packet(i)) == bytes(ref.packet(i))
        assert b"".join(zc.buffers(i)) == bytes(ref.packet(i))
    k = min(3, ref.full_packets)
    assert b"".join(zc.run_buffers(0, k)) == bytes(ref.run(0, k)) == bytes(zc.run(0, k))
    zc.mark_retransmit(1, 9, promote=True)
    ref.mark_retransmit(1, 9, promote=True)
    assert bytes(zc.packet(1)) == bytes(ref.packet(1))


def test_zero_copy_records_buffer_is_headers_only():
    t = RNG.standard_normal(40_000).astype(np.float32)
    need = records_bytes(t.size, 65535, zero_copy=True)
    assert need == -(-t.size // P.max_elements_per_packet(65535, P.DTYPE_FLOAT32)) * P.DLCP_HEADER_LEN
    buf = np.empty(need, np.uint8)
    pt = packetize(t, tensor_id=1, policy=TagPolicy(), mtu=65535, buffer=buf, zero_copy=True)
    assert np.shares_memory(pt.records, buf)


@pytest.mark.parametrize("mtu,offload", [(65535, "auto"), (1500, "on"), (1500, "off")])
def test_zero_copy_transfer_is_bit_exact(endpoints, mtu, offload):
    """Single sendmsg per packet (64 KB), GSO runs of interleaved header/payload buffers, plain."""
    tx = endpoints(job_id=2, worker_id=1, offload=offload)
    rx = endpoints(job_id=2, worker_id=0)
    g = RNG.standard_normal(300_007).astype(np.float32)
    pt = packetize(g, tensor_id=4, policy=TagPolicy(), job_id=2, worker_id=1, iteration=3, mtu=mtu,
                   zero_copy=True)
    out = np.full_like(g, np.nan)
    r = rx.expect(1, 3, 4, out)
    s = tx.send(pt, rx.address)
    run_both(tx, [s], rx, [r])
    assert out.tobytes() == g.tobytes()
    assert s.stats.retransmitted == 0 and r.stats.received == pt.n_packets
    assert not rx.drops


def test_zero_copy_retransmissions_read_the_tensor(endpoints):
    """Dropped CRITICAL packets are sent again from the tensor's memory and arrive exactly."""
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = RNG.standard_normal(362 * 60).astype(np.float32)
    pt = packetize(g, tensor_id=3, policy=TagPolicy(critical_share=0.2, loss_bound=0.5), job_id=1,
                   worker_id=2, iteration=5, zero_copy=True)
    crit = np.flatnonzero(pt.critical)
    dropped = {(3, int(i) * 362) for i in crit[:3]}
    out = np.zeros_like(g)
    with LossyRelay(rx.address, drop_offsets(dropped)) as relay:
        r = rx.expect(2, 5, 3, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
    assert relay.dropped["DATA_critical"] == 3
    assert s.stats.retransmitted == 3
    assert np.array_equal(out, g) and r.stats.zero_filled_packets == 0
