"""Minimal pcap writer for ``p4sim switch --pcap DIR`` (one file per port and direction).

Written by hand rather than with scapy so the packet loop pays one ``write`` per packet and no
object construction; the format is classic libpcap (microsecond timestamps, DLT_EN10MB).
"""

from __future__ import annotations

import os
import struct
import time

_GLOBAL_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
_RECORD = struct.Struct("<IIII")


class PcapWriter:
    """Appends Ethernet frames to a pcap file; ``flush`` makes them visible to readers."""

    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._file = open(path, "wb", buffering=1 << 16)  # noqa: SIM115 - closed in close()
        self._file.write(_GLOBAL_HEADER)
        self.count = 0

    def write(self, data: bytes, now: float | None = None) -> None:
        t = time.time() if now is None else now
        sec = int(t)
        n = len(data)
        self._file.write(_RECORD.pack(sec, int((t - sec) * 1_000_000), n, n))
        self._file.write(data)
        self.count += 1

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
