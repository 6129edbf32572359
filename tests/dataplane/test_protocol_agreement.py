"""P4 and Python agree on the DLCP wire format (docs/architecture.md, Contract 5).

p4src/include/constants.p4 + headers.p4 on one side, host_agent/protocol.py (the single
Python source of truth, owned by the host-agent engineer) on the other.
"""

from __future__ import annotations

import pytest

from host_agent import protocol
from tests.dataplane import p4text


def test_port_and_header_length() -> None:
    consts = p4text.constants()
    assert consts["DLCP_UDP_PORT_DEFAULT"][1] == protocol.DLCP_UDP_PORT
    assert consts["DLCP_HEADER_LEN"][1] == protocol.DLCP_HEADER_LEN
    assert consts["DLCP_VERSION"][1] == protocol.VERSION


@pytest.mark.parametrize("prefix", ["FLAG_", "MSG_", "DTYPE_"])
def test_named_values_agree_both_ways(prefix: str) -> None:
    p4 = {name[len("DLCP_"):]: value for name, (_, value) in p4text.constants().items()
          if name.startswith("DLCP_" + prefix)}
    py = {name: getattr(protocol, name) for name in dir(protocol)
          if name.startswith(prefix) and isinstance(getattr(protocol, name), int)
          and not name.endswith(("_BITS", "_DEFINED"))}
    assert p4, f"no DLCP_{prefix}* constants in constants.p4"
    assert p4 == py


def test_header_fields_agree_with_the_scapy_layer() -> None:
    layer = protocol.DLCP
    py = [(f.name, f.size if hasattr(f, "size") else 8 * f.sz) for f in layer.fields_desc]
    assert py == p4text.header_fields("dlcp_h")


def test_header_struct_round_trips_a_p4_layout() -> None:
    from tests.dataplane.packets import dlcp_header
    raw = dlcp_header(msg_type=4, layer_class=5, mag_class=12, flags=0x88, dtype=2, job_id=9,
                      worker_id=3, iteration=77, tensor_id=11, count=100, offset=4096, seq=31)
    pkt = protocol.DLCP(raw)
    assert (pkt.version, pkt.msg_type, pkt.layer_class, pkt.mag_class, int(pkt.flags), pkt.dtype) == \
        (1, 4, 5, 12, 0x88, 2)
    assert (pkt.job_id, pkt.worker_id, pkt.iteration, pkt.tensor_id, pkt.count, pkt.offset, pkt.seq) == \
        (9, 3, 77, 11, 100, 4096, 31)
