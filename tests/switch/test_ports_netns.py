"""AF_PACKET ports on real veths: frames in, frames out, our own transmissions never read back."""

from __future__ import annotations

import os
import time

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4sim.switch.ports import AfPacketPort, PortError, parse_interface_spec
from tests.switch.netns import HostSocket, VethTopology, have_netns, sh

pytestmark = pytest.mark.skipif(not have_netns(), reason="needs root and iproute2 for network namespaces")


def frame(i: int, size: int = 100) -> bytes:
    pkt = Ether(src="02:77:00:00:00:01", dst="02:77:00:00:00:02") / IP(src="10.77.0.1", dst="10.77.0.2") / \
        UDP(sport=1000 + i, dport=2000)
    return bytes(pkt) + bytes(max(0, size - len(pkt)))


def recv_until(port: AfPacketPort, n: int, timeout: float = 2.0) -> list[bytes]:
    out: list[bytes] = []
    end = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < end:
        out.extend(port.recv_batch(64))
        time.sleep(0.005)
    return out


def test_af_packet_port_receives_burst_and_ignores_own_transmissions():
    with VethTopology(1) as topo:
        port = AfPacketPort(1, topo.switch_ifaces[0])
        try:
            assert port._ring is not None, "PACKET_MMAP ring should be available on veth"
            sent = [frame(i) for i in range(200)]

            with HostSocket(topo.hosts[0]) as host:
                for f in sent:
                    host.send(f)
            got = recv_until(port, 200)
            assert got == sent
            # what the port transmits reaches the host, and is not read back by the port
            with HostSocket(topo.hosts[0]) as host:
                out = frame(999, 300)
                port.send(out)
                assert host.recv(2.0) == out
                time.sleep(0.05)
                assert port.recv_batch(64) == []
        finally:
            port.close()


def test_ring_wraps_around():
    with VethTopology(1) as topo:
        port = AfPacketPort(1, topo.switch_ifaces[0], ring_frames=64)
        try:
            total = 0
            for burst in range(5):
                sent = [frame(burst * 40 + i) for i in range(40)]
                with HostSocket(topo.hosts[0]) as host:
                    for f in sent:
                        host.send(f)
                got = recv_until(port, 40)
                assert got == sent
                total += len(got)
            assert total == 200
        finally:
            port.close()


def test_interface_spec_errors_are_one_line():
    with pytest.raises(PortError, match="expected PORT@IFACE"):
        parse_interface_spec("veth0")
    with pytest.raises(PortError, match="not a number"):
        parse_interface_spec("x@lo")
    with pytest.raises(PortError, match="no interface named 'nope0'"):
        parse_interface_spec("1@nope0")
    assert parse_interface_spec("3@lo") == (3, "lo")


def test_link_down_does_not_spin_and_port_recovers():
    import resource

    from p4sim.switch.device import SwitchDevice

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    with VethTopology(1, tag=f"p4d{os.getpid() % 10000}") as topo:
        sw_if = topo.switch_ifaces[0]
        dev = SwitchDevice(name="s-down")
        dev.add_interface(1, sw_if)
        dev.start()
        try:
            sh("ip", "link", "set", sw_if, "down")
            before = cpu()
            time.sleep(0.6)
            assert cpu() - before < 0.3, "the packet loop spins on a down link"
            assert dev.counters["port_errors"] >= 1
            sh("ip", "link", "set", sw_if, "up")
            time.sleep(0.2)
            with HostSocket(topo.hosts[0]) as host:
                host.send(frame(1))
            deadline = time.monotonic() + 2
            while dev.counters["rx"] < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert dev.counters["rx"] == 1
        finally:
            dev.stop()


def test_vlan_tag_survives_the_ring():
    """The kernel moves 802.1Q tags into packet metadata (VLAN offload); the port puts them back."""
    from scapy.layers.l2 import Dot1Q

    with VethTopology(1, tag=f"p4v{os.getpid() % 10000}") as topo:
        port = AfPacketPort(1, topo.switch_ifaces[0])
        try:
            tagged = bytes(Ether(src="02:77:00:00:00:01", dst="02:77:00:00:00:02") / Dot1Q(vlan=42, prio=5) /
                           IP(src="10.77.0.1", dst="10.77.0.200") / UDP(sport=1, dport=2) / bytes(30))
            with HostSocket(topo.hosts[0]) as host:
                host.send(tagged)
            assert recv_until(port, 1) == [tagged]
        finally:
            port.close()


def test_ring_hole_left_by_the_kernel_is_skipped():
    """The kernel can claim a ring slot and then drop the packet (several CPUs filling the ring),
    leaving a kernel-owned slot before ready ones. The port must not stall there until the ring
    wraps (replaying ~1024 stale frames): it skips the hole once it has persisted."""
    import struct

    with VethTopology(1, tag=f"p4h{os.getpid() % 10000}") as topo:
        port = AfPacketPort(1, topo.switch_ifaces[0], ring_frames=64)
        try:
            sent = [frame(i) for i in range(5)]
            with HostSocket(topo.hosts[0]) as host:
                for f in sent:
                    host.send(f)
            deadline = time.monotonic() + 2
            while not port._ring[4 * port._frame_size] & 1 and time.monotonic() < deadline:
                time.sleep(0.005)
            struct.pack_into("=I", port._ring, 0, 0)       # slot 0: claimed, never filled
            assert port.recv_batch(64) == []                # could still be in flight: wait
            time.sleep(0.001)
            assert port.recv_batch(64) == sent[1:]
            assert port.ring_holes == 1
            with HostSocket(topo.hosts[0]) as host:         # and the ring keeps going from there
                host.send(sent[0])
            assert recv_until(port, 1) == [sent[0]]
        finally:
            port.close()


def test_kernel_ring_overflow_is_counted():
    """Frames the kernel drops because the port's ring is full (the switch did not read) show in
    the port's rx_dropped / kernel_drops (issue 11: 1.38 M frames offered, rx_dropped 2)."""
    with VethTopology(1) as topo:
        port = AfPacketPort(1, topo.switch_ifaces[0], ring_frames=64)
        try:
            with HostSocket(topo.hosts[0]) as host:
                for i in range(600):           # nobody reads: the 64-slot ring overflows
                    host.send(frame(i))
            time.sleep(0.2)
            port.read_kernel_stats()
            assert port.kernel_drops >= 600 - 64 - 8, port.kernel_drops
            assert port.rx_dropped >= port.kernel_drops
            got = recv_until(port, 64)
            assert 0 < len(got) <= 64
            before = port.kernel_drops
            port.read_kernel_stats()           # the kernel's counter resets on read: no double count
            assert port.kernel_drops == before
        finally:
            port.close()
