"""Switch ports: the things the packet loop reads frames from and writes frames to.

Every port exposes a file descriptor the loop polls, ``recv_batch`` (all frames ready now, without
blocking) and ``send``. Kinds:

* ``AfPacketPort``: a real Linux interface through an AF_PACKET socket. Receive uses a
  PACKET_MMAP (TPACKET_V2) ring, so a burst of frames costs one ``poll`` and no copies through
  ``recv`` syscalls; frames the kernel shows us because *we* sent them (PACKET_OUTGOING) are skipped.
* ``VirtualPort``: an in-process port for tests, one end of a SOCK_SEQPACKET socketpair; the test
  holds the other end (``VirtualPortPeer``: ``send(bytes)``, ``recv(timeout)``).

An ``AfPacketPort`` also tells when the kernel put each frame it returns into the ring
(``rx_stamps``, TPACKET_V2's tp_sec/tp_nsec, CLOCK_REALTIME ns): the device measures from it how long
frames waited before the loop read them and before ingress ran on them (``WaitHistogram``, per port
and per DSCP class selector, ``dscp_class``). Ports without a kernel stamp report 0 (not measured).
"""

from __future__ import annotations

import logging
import mmap
import os
import select
import socket
import struct
import time

from p4sim.errors import UserError

log = logging.getLogger(__name__)

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_RX_RING = 5
PACKET_VERSION = 10
PACKET_IGNORE_OUTGOING = 23
PACKET_STATISTICS = 6
_TPACKET_STATS = struct.Struct("=II")          # struct tpacket_stats {tp_packets, tp_drops}
TPACKET_V2 = 1
PACKET_OUTGOING = 4
TP_STATUS_KERNEL = 0
TP_STATUS_USER = 1
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
_TPACKET2_HDR = struct.Struct("=IIIHHIIHH4x")   # 32 bytes
_SLL_PKTTYPE_OFFSET = 32 + 10                  # sockaddr_ll follows the aligned header
HOLE_WAIT_NS = 200_000
_HIST_BUCKETS = 128     # WaitHistogram: 4 buckets per octave of microseconds, up to ~2^33 us


def dscp_class(frame: bytes) -> int:
    """The DSCP class selector (DSCP >> 3, 0..7) of an IPv4 or IPv6 frame; 0 for anything else.
    A switch marks DLCP packets CS<queue> (p4src/include/constants.p4, DSCP_CS_SHIFT)."""
    if len(frame) < 16:
        return 0
    et = frame[12] << 8 | frame[13]
    if et == 0x0800:
        return frame[15] >> 5
    if et == 0x86DD:
        return (frame[14] & 0x0F) >> 1
    return 0


class WaitHistogram:
    """Waits (ns in, microseconds kept) in log buckets, 4 per octave: count, mean, p99 (bucket upper
    bound, at most the max) and max, with no per-packet objects."""

    __slots__ = ("counts", "n", "total_us", "max_us")

    def __init__(self) -> None:
        self.counts = [0] * _HIST_BUCKETS
        self.n = 0
        self.total_us = 0
        self.max_us = 0

    def add(self, wait_ns: int) -> None:
        us = wait_ns // 1000 if wait_ns > 0 else 0
        if us < 8:
            idx = us
        else:
            e = us.bit_length()
            idx = 4 * (e - 2) + ((us >> (e - 3)) & 3)
            if idx >= _HIST_BUCKETS:
                idx = _HIST_BUCKETS - 1
        self.counts[idx] += 1
        self.n += 1
        self.total_us += us
        if us > self.max_us:
            self.max_us = us

    @staticmethod
    def upper_us(idx: int) -> int:
        """Exclusive upper bound (us) of bucket ``idx``."""
        if idx < 8:
            return idx + 1
        e, m = idx // 4 + 2, idx % 4 + 4
        return (m + 1) << (e - 3)

    def quantile_us(self, q: float) -> int:
        """Upper bound of the bucket holding quantile ``q`` (never above the max seen)."""
        if not self.n:
            return 0
        need = q * self.n
        seen = 0
        for idx, c in enumerate(self.counts):
            seen += c
            if c and seen >= need:
                return min(self.upper_us(idx), self.max_us)
        return self.max_us

    def summary(self) -> dict:
        """count, mean/p99/max in ms, JSON-ready."""
        return {"n": self.n, "mean_ms": round(self.total_us / self.n / 1000, 3) if self.n else 0.0,
                "p99_ms": round(self.quantile_us(0.99) / 1000, 3), "max_ms": round(self.max_us / 1000, 3)}


class PortError(UserError):
    """A port that cannot be opened (no such interface, no permission, bad PORT@IFACE)."""


class Port:
    """Base class: ``port_no``, ``name``, ``fileno()``, ``recv_batch()``, ``send()``, ``close()``."""

    port_no: int
    name: str
    rx_dropped: int = 0     # frames the port could not take (full buffer, kernel ring) or truncated
    tx_dropped: int = 0
    kernel_drops: int = 0   # of rx_dropped: frames the kernel dropped before we could read them
    rx_stamps: list[int] = []   # per frame of the last recv_batch: kernel receive time (ns), 0 = unknown

    def read_kernel_stats(self) -> None:
        """Fold the kernel's receive-drop count into ``rx_dropped`` (ports that have one)."""

    def fileno(self) -> int:
        raise NotImplementedError

    def recv_batch(self, limit: int) -> list[bytes]:
        raise NotImplementedError

    def send(self, data: bytes) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def clear_error(self) -> int:
        """Read and clear a pending socket error (errno, 0 if none): the link went down, say."""
        return 0


class VirtualPortPeer:
    """The test's end of a virtual port: frames sent here enter the switch on that port."""

    def __init__(self, port_no: int, sock: socket.socket) -> None:
        self.port_no = port_no
        self._sock = sock

    def send(self, data: bytes) -> None:
        self._sock.sendall(bytes(data))

    def recv(self, timeout: float = 1.0) -> bytes | None:
        """Next frame the switch sent out of this port, or None after ``timeout`` seconds."""
        ready, _, _ = select.select([self._sock], [], [], timeout)
        if not ready:
            return None
        try:
            return self._sock.recv(65536)
        except OSError:
            return None

    def recv_all(self, timeout: float = 0.2) -> list[bytes]:
        """Every frame that arrives until ``timeout`` seconds pass with nothing new."""
        out = []
        while (frame := self.recv(timeout)) is not None:
            out.append(frame)
        return out

    def close(self) -> None:
        self._sock.close()


# The name the device contract uses for what add_virtual_port returns.
VirtualPort = VirtualPortPeer


class SocketPairPort(Port):
    """The switch's end of a virtual port."""

    def __init__(self, port_no: int, name: str | None = None, bufsize: int = 4 << 20) -> None:
        self.port_no = port_no
        self.name = name or f"vport{port_no}"
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        for s in (ours, theirs):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, bufsize)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, bufsize)
        ours.setblocking(False)
        self._sock = ours
        self.peer = VirtualPortPeer(port_no, theirs)

    def fileno(self) -> int:
        return self._sock.fileno()

    def recv_batch(self, limit: int) -> list[bytes]:
        out = []
        recv = self._sock.recv
        try:
            while len(out) < limit:
                data = recv(65536)
                if not data:
                    break
                out.append(data)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            pass
        return out

    def send(self, data: bytes) -> None:
        try:
            self._sock.send(data)
        except (BlockingIOError, OSError):
            self.tx_dropped += 1

    def close(self) -> None:
        self._sock.close()
        self.peer.close()


def _interface_mtu(ifname: str) -> int:
    try:
        with open(f"/sys/class/net/{ifname}/mtu") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 1500


class AfPacketPort(Port):
    """A Linux interface: AF_PACKET raw socket, PACKET_MMAP RX ring, ``send`` for TX."""

    def __init__(self, port_no: int, ifname: str, ring_frames: int = 1024) -> None:
        self.port_no = port_no
        self.name = ifname
        try:
            # protocol 0 until bound: no frames from other interfaces sneak in before bind()
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        except PermissionError as err:
            raise PortError(f"-i {port_no}@{ifname}: AF_PACKET needs root or CAP_NET_RAW") from err
        try:
            sock.bind((ifname, ETH_P_ALL))   # Python applies htons itself
        except OSError as err:
            sock.close()
            raise PortError(f"-i {port_no}@{ifname}: cannot bind interface: {err.strerror}") from err
        self._sock = sock
        try:   # the kernel then never hands us our own transmissions (Linux >= 4.20)
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            pass
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        self._ring: mmap.mmap | None = None
        self.kernel_drops = 0
        try:
            self._setup_ring(_interface_mtu(ifname), ring_frames)
        except OSError as err:   # fall back to recv(); still correct, just more syscalls
            log.warning("%s: PACKET_MMAP ring unavailable (%s), using recv()", ifname, err)
            self._ring = None
        sock.setblocking(False)

    def _setup_ring(self, mtu: int, frames: int) -> None:
        need = 32 + 32 + 14 + 4 + mtu + 16
        frame_size = 2048
        while frame_size < need:
            frame_size *= 2
        block_size = max(frame_size, 1 << 16)
        per_block = block_size // frame_size
        blocks = max(1, frames // per_block)
        self._sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        req = struct.pack("IIII", block_size, blocks, frame_size, blocks * per_block)
        self._sock.setsockopt(SOL_PACKET, PACKET_RX_RING, req)
        self._ring = mmap.mmap(self._sock.fileno(), block_size * blocks,
                               mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self._view = memoryview(self._ring)
        self._frame_size = frame_size
        self._nframes = blocks * per_block
        self._head = 0
        self._stall_since = 0
        self.ring_holes = 0     # slots the kernel claimed but never filled (see _hole)

    def fileno(self) -> int:
        return self._sock.fileno()

    def recv_batch(self, limit: int) -> list[bytes]:
        if self._ring is None:
            return self._recv_plain(limit)
        out: list[bytes] = []
        stamps: list[int] = []
        self.rx_stamps = stamps
        ring = self._ring
        view = self._view
        fsize = self._frame_size
        head = self._head
        nframes = self._nframes
        unpack = _TPACKET2_HDR.unpack_from
        while len(out) < limit:
            off = head * fsize
            if not ring[off] & TP_STATUS_USER:   # status is little-endian, low byte holds USER
                if not out:
                    skip = self._hole(head)
                    if skip:
                        head = (head + skip) % nframes
                        continue
                break
            self._stall_since = 0
            status, tp_len, snaplen, mac, _net, sec, nsec, tci, tpid = unpack(ring, off)
            if ring[off + _SLL_PKTTYPE_OFFSET] != PACKET_OUTGOING:
                if snaplen < tp_len:
                    if not self.rx_dropped:
                        log.warning("%s: %d-byte frame does not fit the ring (GSO/TSO or GRO on?); dropped. "
                                    "Disable offloads: ethtool -K %s gro off gso off tso off",
                                    self.name, tp_len, self.name)
                    self.rx_dropped += 1
                else:
                    frame = bytes(view[off + mac: off + mac + snaplen])
                    if status & TP_STATUS_VLAN_VALID:
                        tag_type = tpid if status & TP_STATUS_VLAN_TPID_VALID and tpid else 0x8100
                        frame = frame[:12] + struct.pack("!HH", tag_type, tci) + frame[12:]
                    out.append(frame)
                    stamps.append(sec * 1_000_000_000 + nsec)
            struct.pack_into("=I", ring, off, TP_STATUS_KERNEL)
            head += 1
            if head == nframes:
                head = 0
        self._head = head
        return out

    def read_kernel_stats(self) -> None:
        """PACKET_STATISTICS: frames the kernel dropped because the ring (or socket buffer) was
        full. Reading resets the kernel's counters, so the deltas accumulate here."""
        try:
            raw = self._sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, _TPACKET_STATS.size)
        except OSError:
            return
        _packets, drops = _TPACKET_STATS.unpack(raw[:_TPACKET_STATS.size])
        if drops:
            self.kernel_drops += drops
            self.rx_dropped += drops

    def clear_error(self) -> int:
        try:
            return self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        except OSError as err:
            return err.errno or -1

    def _hole(self, head: int) -> int:
        """Frames to skip when the kernel left a hole at ``head``, else 0.

        With several CPUs filling the ring, the kernel claims a slot before copying into it and
        can drop the packet after the claim, leaving that slot kernel-owned while later slots fill
        up. A reader that waits for it stalls until the ring wraps and then replays 1024 stale
        frames. So: when ``head`` has stayed kernel-owned for over HOLE_WAIT_NS while a later slot
        is ready, jump to the first ready slot (a slot still being filled takes microseconds).
        """
        ring, fsize, nframes = self._ring, self._frame_size, self._nframes
        for ahead in range(1, nframes):
            if ring[((head + ahead) % nframes) * fsize] & TP_STATUS_USER:
                break
        else:
            self._stall_since = 0
            return 0
        now = time.monotonic_ns()
        if not self._stall_since:
            self._stall_since = now
            return 0
        if now - self._stall_since < HOLE_WAIT_NS:
            return 0
        self._stall_since = 0
        self.ring_holes += ahead
        return ahead

    def _recv_plain(self, limit: int) -> list[bytes]:
        out = []
        self.rx_stamps = []
        try:
            while len(out) < limit:
                data, addr = self._sock.recvfrom(65536)
                if addr[2] != PACKET_OUTGOING:
                    out.append(data)
        except (BlockingIOError, InterruptedError):
            pass
        return out

    def send(self, data: bytes) -> None:
        try:
            self._sock.send(data)
        except BlockingIOError:
            self.tx_dropped += 1
        except OSError as err:
            self.tx_dropped += 1
            log.debug("%s: send failed: %s", self.name, err)

    def close(self) -> None:
        if self._ring is not None:
            self._view.release()
            self._ring.close()
            self._ring = None
        self._sock.close()


def parse_interface_spec(spec: str) -> tuple[int, str]:
    """``PORT@IFACE`` (simple_switch's ``-i``) -> (port, iface)."""
    port_s, sep, ifname = spec.partition("@")
    if not sep or not ifname:
        raise PortError(f"-i {spec!r}: expected PORT@IFACE, e.g. 1@veth0")
    try:
        port = int(port_s)
    except ValueError:
        raise PortError(f"-i {spec!r}: port {port_s!r} is not a number") from None
    if not 0 <= port < 511:
        raise PortError(f"-i {spec!r}: port {port} is not in 0..510 (511 is the drop port)")
    if not os.path.exists(f"/sys/class/net/{ifname}"):
        raise PortError(f"-i {spec!r}: no interface named {ifname!r}")
    return port, ifname
