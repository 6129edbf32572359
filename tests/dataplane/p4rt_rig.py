"""A p4sim switch serving P4Runtime on an ephemeral loopback port, driven by the controller's
client and entry builders: the end-to-end rig of the P4Runtime data-plane tests.

Why this exists: several tests need the same device + gRPC server + primary client set-up and
clean teardown; they differ only in what they install and send.
"""

from __future__ import annotations

import time

from p4.v1 import p4runtime_pb2


class Rig:
    """Device with virtual ports 1..6, P4Runtime server, primary client, dlcp.p4 pushed."""

    def __init__(self, program) -> None:
        from controller.p4info_index import P4InfoIndex
        from controller.p4rt_client import P4RuntimeClient
        from p4sim.p4runtime_server.server import P4RuntimeServer
        from p4sim.switch.device import SwitchDevice

        self.program = program
        self.device = SwitchDevice(name="dlcp-p4rt", priority_queues=8)
        self.peers = {p: self.device.add_virtual_port(p) for p in range(1, 7)}
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

    def send_and_collect(self, frame: bytes, timeout: float, port: int = 2) -> list[bytes]:
        """Send ``frame`` on port 1; the first frame out of ``port`` within ``timeout`` (or none)."""
        self.peers[1].send(frame)
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            f = self.peers[port].recv(left)
            if f is not None:
                return [f]
        return []

    def received_on(self, ports: list[int], n: int, timeout: float) -> dict[int, int]:
        """Frames received per port until ``n`` in total arrived (or ``timeout``)."""
        counts = {p: 0 for p in ports}
        end = time.monotonic() + timeout
        while sum(counts.values()) < n and time.monotonic() < end:
            for p in ports:
                for _ in self.peers[p].recv_all(timeout=0.01):
                    counts[p] += 1
        return counts

    def close(self) -> None:
        self.client.close()
        self.server.stop()
        self.device.stop()
