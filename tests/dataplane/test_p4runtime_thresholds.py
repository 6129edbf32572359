"""dlcp.p4 driven through P4Runtime end to end: a p4sim switch (SwitchDevice, virtual ports)
serving gRPC on an ephemeral loopback port, programmed by the controller's P4Runtime client
and entry builders (controller/dlcp_tables.py). A drop threshold changed at run time with a
P4Runtime MODIFY applies to the very next packet; counters read over P4Runtime match what
was sent and received.

The observed queue depth is set directly in queue_depth_reg (what egress writes under
congestion; tests/dataplane/test_congestion.py produces it with real queues).
"""

from __future__ import annotations

import time

import pytest
from p4.v1 import p4runtime_pb2

from tests.dataplane.packets import SWITCH_MAC, dlcp_packet, host_mac

QUEUE, LOW, HIGH = 6, 0, 15
DEPTH_INDEX = 2 * 8 + QUEUE


class Rig:
    def __init__(self, program) -> None:
        from controller.p4info_index import P4InfoIndex
        from controller.p4rt_client import P4RuntimeClient
        from p4sim.p4runtime_server.server import P4RuntimeServer
        from p4sim.switch.device import SwitchDevice

        self.program = program
        self.device = SwitchDevice(name="dlcp-p4rt", priority_queues=8)
        self.peers = {p: self.device.add_virtual_port(p) for p in (1, 2)}
        self.device.start()
        self.server = P4RuntimeServer(self.device, "127.0.0.1:0")
        port = self.server.start()
        self.client = P4RuntimeClient("dlcp-p4rt", f"127.0.0.1:{port}", device_id=self.device.device_id)
        self.client.connect(timeout=10)
        self.client.require_primary()
        self.client.set_pipeline(program.p4info, program.device_config(), 1)
        self.index = P4InfoIndex(program.p4info)

    def write(self, kind: int, entries: list[p4runtime_pb2.TableEntry]) -> None:
        updates = []
        for e in entries:
            u = p4runtime_pb2.Update(type=kind)
            u.entity.table_entry.CopyFrom(e)
            updates.append(u)
        self.client.write(updates)

    def counter(self, name: str, index: int) -> tuple[int, int]:
        cid = self.index.counter(name).preamble.id
        for c in self.client.read_counter(cid):
            if c.index.index == index:
                return c.data.packet_count, c.data.byte_count
        return 0, 0

    def send_and_collect(self, frame: bytes, timeout: float) -> list[bytes]:
        self.peers[1].send(frame)
        out = []
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            f = self.peers[2].recv(left)
            if f is not None:
                out.append(f)
                break
        return out

    def close(self) -> None:
        self.client.close()
        self.server.stop()
        self.device.stop()


@pytest.fixture
def rig(dlcp_program):
    pytest.importorskip("controller.dlcp_tables", reason="controller entry builders not available")
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
    depth = rig.device.pipeline.registers["queue_depth_reg"]

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
