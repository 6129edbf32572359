"""The MTU of the network interface that carries a local IPv4 address.

The DDP hook cuts gradients into packets as large as the link allows: on loopback (ranks on one
host) that is 64 KB, so a 25 MB bucket is ~400 datagrams instead of ~17,000, which is what makes
the per-packet work of a Python transport affordable there; across Ethernet or a Mininet veth it
stays 1500. Linux only (``/sys/class/net`` and the SIOCGIFADDR ioctl); elsewhere, or when the
address is not found (e.g. the wildcard 0.0.0.0), the Ethernet default.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from pathlib import Path

ETHERNET_MTU = 1500
MAX_IPV4_MTU = 65535            # the IPv4 total-length field; loopback reports 65536
SIOCGIFADDR = 0x8915
SYS_NET = Path("/sys/class/net")


def _read_mtu(name: str) -> int | None:
    try:
        return int((SYS_NET / name / "mtu").read_text().strip())
    except (OSError, ValueError):
        return None


def _ipv4_of(name: str) -> str | None:
    try:
        import fcntl
    except ImportError:         # not Unix
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            raw = fcntl.ioctl(s.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
        except OSError:         # interface without an IPv4 address
            return None
    return socket.inet_ntoa(raw[20:24])


def interface_mtu(address: str) -> int:
    """MTU (bytes, capped at 65535) of the interface holding IPv4 ``address``; 1500 if unknown."""
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        return ETHERNET_MTU
    names: list[str] = []
    if ip.is_loopback:
        names = ["lo"]
    else:
        try:
            names = [name for _, name in socket.if_nameindex() if _ipv4_of(name) == address]
        except OSError:
            names = []
    for name in names:
        mtu = _read_mtu(name)
        if mtu:
            return min(mtu, MAX_IPV4_MTU)
    return ETHERNET_MTU
