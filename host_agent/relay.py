"""A lossy UDP relay on real sockets: emulates a switch that drops or CE-marks DLCP packets.

Clients send to the relay's address; each client gets its own upstream socket towards the target,
so the target's replies (and traffic it starts, e.g. a PS server pushing parameters) flow back to
the right client. A drop rule sees every decoded DLCP header going upstream (and, if given, coming
back) and decides per packet; CE marking sets ECN=3 on forwarded packets. Used by tests and
experiments to inject real loss on loopback without a switch.
"""

from __future__ import annotations

import collections
import random
import select
import socket
import threading
from collections.abc import Callable

from host_agent import protocol as P

DropRule = Callable[[P.DlcpHeader], bool]
# What a raw rule may return for a packet (False/True also work for FORWARD/DROP).
FORWARD, DROP, MARK_CE = 0, 1, 2


def drop_noncritical(rate: float, seed: int = 0, first_only: bool = True) -> DropRule:
    """Drop each non-critical DATA packet with probability ``rate`` (retransmissions spared)."""
    rng = random.Random(seed)

    def rule(h: P.DlcpHeader) -> bool:
        if h.msg_type != P.MSG_DATA or h.flags & P.FLAG_CRITICAL:
            return False
        if first_only and h.flags & P.FLAG_RETX:
            return False
        return rng.random() < rate
    return rule


def drop_offsets(offsets: set[tuple[int, int]], first_only: bool = True) -> DropRule:
    """Drop the DATA packets with these (tensor_id, offset), whatever their flags."""

    def rule(h: P.DlcpHeader) -> bool:
        if h.msg_type != P.MSG_DATA or (first_only and h.flags & P.FLAG_RETX):
            return False
        return (h.tensor_id, h.offset) in offsets
    return rule


def _big_buffer(sock: socket.socket, size: int = 64 << 20) -> None:
    """Receive buffer big enough for bursts (SO_RCVBUFFORCE as root, else capped by rmem_max)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), size)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)


class LossyRelay:
    """Start with ``with LossyRelay(target, rule) as relay:`` and send to ``relay.address``."""

    def __init__(self, target: tuple[str, int], rule: DropRule | None = None,
                 reverse_rule: DropRule | None = None, mark_ce: bool = False,
                 bind: tuple[str, int] = ("127.0.0.1", 0),
                 raw_rule: Callable[[bytes], int] | None = None,
                 hold_until_probe: DropRule | None = None) -> None:
        """``raw_rule`` sees each whole upstream UDP payload (e.g. to run it through a P4 program)
        and returns FORWARD, DROP or MARK_CE (forward with IPv4 ECN = CE). ``hold_until_probe``
        reorders: matching packets are held back and forwarded just after the next PROBE."""
        self.target = target
        self.rule = rule
        self.raw_rule = raw_rule
        self.hold_until_probe = hold_until_probe
        self._held: list[tuple[tuple[str, int], bytes]] = []
        self.reordered = 0
        self.reverse_rule = reverse_rule
        self.mark_ce = mark_ce
        self.listen = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.listen.bind(bind)
        _big_buffer(self.listen)
        self.upstream: dict[tuple[str, int], socket.socket] = {}
        self.client_of: dict[socket.socket, tuple[str, int]] = {}
        self.forwarded = 0
        self.ce_marked = 0
        self.dropped: collections.Counter[str] = collections.Counter()
        self.dropped_headers: list[P.DlcpHeader] = []
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="lossy-relay", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        return self.listen.getsockname()

    def __enter__(self) -> LossyRelay:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop = True
        self._thread.join(timeout=5)
        for s in [self.listen, *self.upstream.values()]:
            s.close()

    def _decide(self, data: bytes, rule: DropRule | None) -> bool:
        if rule is None or len(data) < P.DLCP_HEADER_LEN:
            return False
        h = P.DlcpHeader.unpack(data)
        if h.version != P.VERSION or not rule(h):
            return False
        kind = "critical" if h.flags & P.FLAG_CRITICAL else "noncritical"
        self.dropped[f"{P.MSG_TYPE_NAMES.get(h.msg_type, h.msg_type)}_{kind}"] += 1
        self.dropped_headers.append(h)
        return True

    def _up(self, client: tuple[str, int]) -> socket.socket:
        s = self.upstream.get(client)
        if s is None:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((self.listen.getsockname()[0], 0))
            _big_buffer(s)
            if self.mark_ce:
                s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, P.ECN_CE)
            self.upstream[client] = s
            self.client_of[s] = client
        return s

    def _reorder_or_forward(self, client: tuple[str, int], data: bytes, ce: bool) -> None:
        if self.hold_until_probe is None or len(data) < P.DLCP_HEADER_LEN:
            self._forward_up(client, data, ce)
            return
        h = P.DlcpHeader.unpack(data)
        if self.hold_until_probe(h):
            self._held.append((client, data))
            return
        self._forward_up(client, data, ce)
        if h.msg_type == P.MSG_PROBE:
            for c, d in self._held:
                self._forward_up(c, d, False)
                self.reordered += 1
            self._held.clear()

    def _forward_up(self, client: tuple[str, int], data: bytes, ce: bool) -> None:
        up = self._up(client)
        if ce and not self.mark_ce:
            up.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, P.ECN_CE)
            up.sendto(data, self.target)
            up.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0)
            self.ce_marked += 1
        else:
            up.sendto(data, self.target)
        self.forwarded += 1

    def _loop(self) -> None:
        while not self._stop:
            socks = [self.listen, *self.upstream.values()]
            ready, _, _ = select.select(socks, [], [], 0.02)
            for s in ready:
                for _ in range(256):
                    try:
                        data, addr = s.recvfrom(65536)
                    except (BlockingIOError, OSError):
                        break
                    if s is self.listen:
                        verdict = int(self.raw_rule(data)) if self.raw_rule is not None else FORWARD
                        if verdict == DROP:
                            self.dropped["raw_rule"] += 1
                        elif not self._decide(data, self.rule):
                            self._reorder_or_forward(addr, data, verdict == MARK_CE)
                    else:
                        if not self._decide(data, self.reverse_rule):
                            self.listen.sendto(data, self.client_of[s])
                            self.forwarded += 1
                    if not select.select([s], [], [], 0)[0]:
                        break
