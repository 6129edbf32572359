"""Wire-format tests: the Python header layout, the scapy layer and the fixed contract agree."""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.packet import raw

from host_agent import protocol as P


def test_constants_match_contract():
    assert P.DLCP_UDP_PORT == 9290
    assert P.DLCP_HEADER_LEN == 24 == P.HEADER_STRUCT.size
    assert P.VERSION == 1
    assert (P.MSG_DATA, P.MSG_PROBE, P.MSG_BITMAP, P.MSG_DONE, P.MSG_CONTROL) == (0, 1, 2, 3, 4)
    assert (P.FLAG_CRITICAL, P.FLAG_LAST, P.FLAG_RETX, P.FLAG_PULL, P.FLAG_ECN_CAPABLE) == (
        0x80, 0x40, 0x20, 0x10, 0x08)
    assert P.DTYPE_SIZES == {0: 4, 1: 2, 2: 2, 3: 1}
    widths = [P.VERSION_BITS, P.MSG_TYPE_BITS, P.LAYER_CLASS_BITS, P.RESERVED0_BITS, P.MAG_CLASS_BITS,
              P.FLAGS_BITS, P.DTYPE_BITS, P.RESERVED1_BITS, P.JOB_ID_BITS, P.WORKER_ID_BITS,
              P.ITERATION_BITS, P.TENSOR_ID_BITS, P.COUNT_BITS, P.OFFSET_BITS, P.SEQ_BITS]
    assert sum(widths) == 8 * P.DLCP_HEADER_LEN


def test_header_pack_puts_fields_at_contract_bytes():
    h = P.DlcpHeader(msg_type=P.MSG_BITMAP, layer_class=5, mag_class=9, flags=P.FLAG_CRITICAL | P.FLAG_LAST,
                     dtype=P.DTYPE_INT8, job_id=0x0102, worker_id=0x0304, iteration=0x05060708,
                     tensor_id=0x090A, count=0x0B0C, offset=0x0D0E0F10, seq=0x11121314)
    b = h.pack()
    assert b[0] == 0x12                    # version 1, msg_type 2
    assert b[1] == (5 << 5) | 9            # layer_class bits 7..5, reserved0, mag_class 3..0
    assert b[2] == 0xC0
    assert b[3] == 0x30                    # dtype 3 in bits 7..4
    assert b[4:] == bytes(range(1, 0x15))
    assert P.DlcpHeader.unpack(b) == h


def test_scapy_layer_dissects_python_header_and_binds_to_port():
    h = P.DlcpHeader(layer_class=7, mag_class=15, flags=P.FLAG_CRITICAL | P.FLAG_ECN_CAPABLE, job_id=3,
                     worker_id=4, iteration=99, tensor_id=12, count=2, offset=724, seq=2)
    pkt = IP(raw(IP(dst="127.0.0.1") / UDP(sport=1234, dport=P.DLCP_UDP_PORT) / (h.pack() + b"\0" * 8)))
    d = pkt[P.DLCP]
    assert (d.version, d.msg_type, d.layer_class, d.mag_class) == (1, 0, 7, 15)
    assert d.flags.CRITICAL and d.flags.ECN_CAPABLE and not d.flags.RETX
    assert (d.job_id, d.worker_id, d.iteration, d.tensor_id, d.count, d.offset, d.seq) == (3, 4, 99, 12, 2, 724, 2)
    built = raw(P.DLCP(layer_class=7, mag_class=15, flags="CRITICAL+ECN_CAPABLE", job_id=3, worker_id=4,
                       iteration=99, tensor_id=12, count=2, offset=724, seq=2))
    assert built == h.pack()
    assert pkt[UDP].len == P.data_udp_length(2, P.DTYPE_FLOAT32)


def test_other_port_is_not_dissected():
    pkt = IP(raw(IP() / UDP(sport=1, dport=9999) / P.DlcpHeader().pack()))
    assert P.DLCP not in pkt


def test_unpack_rejects_short_and_descriptor_checks():
    with pytest.raises(ValueError):
        P.DlcpHeader.unpack(b"\x10" * 23)
    d = P.TensorDescriptor(n_elements=1000, elems_per_packet=362, n_packets=3, n_critical=1, loss_bound_ppm=100000)
    assert P.TensorDescriptor.unpack(d.pack()) == d
    bad = P.TensorDescriptor(n_elements=1000, elems_per_packet=362, n_packets=4, n_critical=1, loss_bound_ppm=0)
    with pytest.raises(ValueError):
        P.TensorDescriptor.unpack(bad.pack())
    with pytest.raises(ValueError):
        P.TensorDescriptor.unpack(d.pack()[:10])


def test_max_elements_per_packet():
    assert P.max_elements_per_packet(1500, P.DTYPE_FLOAT32) == 362
    assert P.max_elements_per_packet(1500, P.DTYPE_INT8) == 1448
    with pytest.raises(ValueError):
        P.max_elements_per_packet(50, P.DTYPE_FLOAT32)
