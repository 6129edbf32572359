"""dlcp.p4 driven through P4Runtime end to end: a p4sim switch (SwitchDevice, virtual ports)
serving gRPC on an ephemeral loopback port, programmed by the controller's P4Runtime client
and entry builders (controller/dlcp_tables.py). A drop threshold changed at run time with a
P4Runtime MODIFY applies to the very next packet; counters read over P4Runtime match what
was sent and received.

The observed depth is set directly in the per-(port, queue) counts ingress reads
(enq_count_reg - deq_count_reg at (port 2, queue 6); tests/dataplane/test_congestion.py produces
them with real queues).  Each forwarded packet leaves port 2 empty, which resyncs the counts
to 0, so every step sets the depth again.
"""

from __future__ import annotations

import pytest
from p4.v1 import p4runtime_pb2

from tests.dataplane.p4rt_rig import Rig
from tests.dataplane.packets import SWITCH_MAC, dlcp_packet, host_mac

QUEUE, LOW, HIGH = 6, 0, 15
DEPTH_INDEX = 2 * 8 + QUEUE
PORT = 2


class QueueDepth:
    """Sets the counts ingress reads for (PORT, QUEUE): ``depth`` packets queued."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig

    def write(self, index: int, depth: int) -> None:
        regs = self.rig.device.pipeline.registers
        with self.rig.device.lock:
            regs["enq_count_reg"].write(index, depth)
            regs["deq_count_reg"].write(index, 0)


@pytest.fixture
def rig(dlcp_program):
    r = Rig(dlcp_program)
    yield r
    r.close()


def test_threshold_modified_over_p4runtime_applies_to_next_packet(rig) -> None:
    from controller import dlcp_tables as dt

    ix = rig.index
    rig.write(p4runtime_pb2.Update.INSERT, [
        dt.nexthop(ix, 2, 2, int(SWITCH_MAC.replace(":", ""), 16), int(host_mac(2).replace(":", ""), 16)),
        dt.route(ix, "10.0.2.0/24", nexthop=2),
        dt.priority_rule(ix, {"is_dlcp": (1, 1)}, QUEUE, 10),
        dt.threshold(ix, QUEUE, LOW, 10, 5),
    ])
    rig.write(p4runtime_pb2.Update.MODIFY, [ix.build_table_entry(
        "DlcpIngress.depth_settings", action="DlcpIngress.set_depth_max_age",
        params={"max_age_us": 60_000_000}, is_default=True)])
    depth = QueueDepth(rig)

    depth.write(DEPTH_INDEX, 20)
    assert rig.send_and_collect(dlcp_packet(mag_class=LOW, seq=1), timeout=0.5) == []
    depth.write(DEPTH_INDEX, 20)
    assert len(rig.send_and_collect(dlcp_packet(mag_class=HIGH, seq=2), timeout=5.0)) == 1
    assert rig.counter(dt.SELECTIVE_DROPS, QUEUE * 16 + LOW)[0] == 1

    rig.write(p4runtime_pb2.Update.MODIFY, [dt.threshold(ix, QUEUE, LOW, 30, 25)])
    depth.write(DEPTH_INDEX, 20)
    got = rig.send_and_collect(dlcp_packet(mag_class=LOW, seq=3), timeout=5.0)
    assert len(got) == 1 and got[0][0x3E + 0:0x3E + 4] == (3).to_bytes(4, "big")

    rig.write(p4runtime_pb2.Update.MODIFY, [dt.threshold(ix, QUEUE, LOW, 19, 5)])
    depth.write(DEPTH_INDEX, 20)
    assert rig.send_and_collect(dlcp_packet(mag_class=LOW, seq=4), timeout=0.5) == []

    assert rig.counter(dt.SELECTIVE_DROPS, QUEUE * 16 + LOW)[0] == 2
    tx_packets, tx_bytes = rig.counter(dt.PORT_QUEUE_TX, DEPTH_INDEX)
    assert tx_packets == 2
    assert tx_bytes == 2 * len(dlcp_packet(mag_class=LOW))
