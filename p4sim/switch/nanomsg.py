"""BMv2's nanomsg packet interface (``--packet-in ipc://...``), the far end of PTF's ``nn`` platform.

One nanomsg PAIR socket carries every port of the switch. The switch listens; PTF dials. Each
message starts with three little-endian int32 ``(type, port, more)``:

====  ===============  ===========================================================
type  name             meaning
====  ===============  ===========================================================
0     PORT_ADD         PTF uses ``port`` from now on
1     PORT_REMOVE      ... no longer
2     PORT_SET_STATUS  ``more`` = 0 up / 1 down
3     PACKET_IN        a frame *into* the switch on ``port``; ``more`` = length, frame follows
4     PACKET_OUT       a frame *out of* the switch on ``port`` (switch -> PTF)
5     INFO_REQ         ``more`` = 0 MAC address / 1 counters
6     INFO_REP         reply: ``more`` = info type, then int32 status (0 ok / 1 unsupported), data
====  ===============  ===========================================================

pynng speaks the nanomsg (SP) wire protocol, so PTF (which also uses pynng) works unmodified.
"""

from __future__ import annotations

import logging
import struct

from p4sim.switch.ports import PortError

log = logging.getLogger(__name__)

PORT_ADD, PORT_REMOVE, PORT_SET_STATUS, PACKET_IN, PACKET_OUT, INFO_REQ, INFO_REP = range(7)
INFO_HWADDR, INFO_CTRS = 0, 1
STATUS_OK, STATUS_UNSUPPORTED = 0, 1
_HDR = struct.Struct("<iii")


class NanomsgPortGroup:
    """Every port PTF adds over one nanomsg PAIR socket."""

    def __init__(self, address: str) -> None:
        import pynng

        self._pynng = pynng
        self.address = address
        self.name = address
        self.ports: set[int] = set()
        self.down: set[int] = set()
        self.rx_count: dict[int, int] = {}
        self.tx_count: dict[int, int] = {}
        self.tx_dropped = 0
        self.bad_messages = 0
        self._sock = pynng.Pair0()
        try:
            self._sock.listen(address)
        except pynng.NNGException as err:
            self._sock.close()
            raise PortError(f"--packet-in {address}: cannot listen: {err}") from err
        self._fd = self._sock.recv_fd

    def fileno(self) -> int:
        return self._fd

    def has_port(self, port: int) -> bool:
        return port in self.ports and port not in self.down

    def recv_pairs(self, limit: int) -> list[tuple[int, bytes]]:
        """Frames PTF sent into the switch as (port, frame); control messages handled inline."""
        out: list[tuple[int, bytes]] = []
        try_again = self._pynng.TryAgain
        while len(out) < limit:
            try:
                msg = self._sock.recv(block=False)
            except try_again:
                break
            except self._pynng.Closed:
                break
            if len(msg) < _HDR.size:
                self.bad_messages += 1
                log.warning("%s: short nanomsg message (%d bytes) ignored", self.address, len(msg))
                continue
            kind, port, more = _HDR.unpack_from(msg)
            if not 0 <= port < 511:
                self.bad_messages += 1
                log.warning("%s: message for port %d ignored (ports are 0..510)", self.address, port)
                continue
            if kind == PACKET_IN:
                if port in self.down:
                    continue
                self.rx_count[port] = self.rx_count.get(port, 0) + 1
                out.append((port, bytes(msg[_HDR.size:_HDR.size + more])))
            elif kind == PORT_ADD:
                self.ports.add(port)
            elif kind == PORT_REMOVE:
                self.ports.discard(port)
            elif kind == PORT_SET_STATUS:
                (self.down.add if more else self.down.discard)(port)
            elif kind == INFO_REQ:
                self._info_reply(port, more)
            else:
                self.bad_messages += 1
                log.warning("%s: unknown nanomsg message type %d ignored", self.address, kind)
        return out

    def _info_reply(self, port: int, info_type: int) -> None:
        if info_type == INFO_CTRS:
            body = struct.pack("<iii", STATUS_OK, self.rx_count.get(port, 0), self.tx_count.get(port, 0))
        else:
            body = struct.pack("<i", STATUS_UNSUPPORTED)
        self._send(_HDR.pack(INFO_REP, port, info_type) + body)

    def send(self, port: int, data: bytes) -> None:
        self.tx_count[port] = self.tx_count.get(port, 0) + 1
        self._send(_HDR.pack(PACKET_OUT, port, len(data)) + data)

    def _send(self, msg: bytes) -> None:
        try:
            self._sock.send(msg, block=False)
        except (self._pynng.TryAgain, self._pynng.Closed):
            self.tx_dropped += 1

    def close(self) -> None:
        self._sock.close()
