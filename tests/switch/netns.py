"""Network namespaces and veth pairs for switch tests (root only), always cleaned up.

``VethTopology(n)`` creates hosts ``<tag>h<i>``, each a namespace with ``eth0`` (10.77.0.<i>/24,
MAC 02:77:00:00:00:<i>), whose veth peers ``<tag>s<i>`` stay in the root namespace for the switch to
attach. ``in_netns`` runs a function on a thread that has joined a namespace, so sockets it
creates (scapy's included) live there.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import threading
from collections.abc import Callable
from typing import Any

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def have_netns() -> bool:
    if os.geteuid() != 0:
        return False
    try:
        subprocess.run(["ip", "-V"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def sh(*cmd: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    return subprocess.run(full, check=check, capture_output=True, text=True)


def in_netns(ns: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` on a fresh thread that joined namespace ``ns``; return its result or raise."""
    box: dict[str, Any] = {}

    def body() -> None:
        try:
            fd = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns({ns})")
            finally:
                os.close(fd)
            box["result"] = fn(*args, **kwargs)
        except BaseException as err:  # re-raised on the caller's thread
            box["error"] = err

    t = threading.Thread(target=body)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box.get("result")


class VethTopology:
    """``n`` hosts in namespaces, each linked by a veth pair to an interface in the root namespace."""

    def __init__(self, n: int, tag: str | None = None) -> None:
        self.tag = tag or f"p4t{os.getpid() % 100000}"
        self.hosts = [f"{self.tag}h{i + 1}" for i in range(n)]
        self.switch_ifaces = [f"{self.tag}s{i + 1}" for i in range(n)]
        self.ips = [f"10.77.0.{i + 1}" for i in range(n)]
        self.macs = [f"02:77:00:00:00:{i + 1:02x}" for i in range(n)]

    def __enter__(self) -> VethTopology:
        # A run killed before close() leaves its named namespaces and root-namespace veths behind
        # (fixed tags such as p4q repeat across runs); these modules run alone, so remove them.
        self.close()
        try:
            for host, sw, ip, mac in zip(self.hosts, self.switch_ifaces, self.ips, self.macs, strict=True):
                sh("ip", "netns", "add", host)
                sh("ip", "link", "add", sw, "type", "veth", "peer", "name", "eth0", "netns", host)
                for ns, dev in ((None, sw), (host, "eth0")):
                    sh("sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1", ns=ns)
                    sh("ethtool", "-K", dev, "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off",
                       ns=ns, check=False)
                sh("ip", "link", "set", "eth0", "address", mac, ns=host)
                sh("ip", "addr", "add", f"{ip}/24", "dev", "eth0", ns=host)
                sh("ip", "link", "set", "eth0", "up", ns=host)
                sh("ip", "link", "set", "lo", "up", ns=host)
                sh("ip", "link", "set", sw, "up")
        except BaseException:
            self.close()
            raise
        return self

    def add_static_arp(self) -> None:
        """Every host knows every other host's MAC (the test switch does no ARP)."""
        for host in self.hosts:
            for ip, mac in zip(self.ips, self.macs, strict=True):
                sh("ip", "neigh", "replace", ip, "lladdr", mac, "dev", "eth0", "nud", "permanent", ns=host)

    def close(self) -> None:
        for sw in self.switch_ifaces:
            sh("ip", "link", "del", sw, check=False)
        for host in self.hosts:
            sh("ip", "netns", "del", host, check=False)

    def __exit__(self, *exc) -> None:
        self.close()


class HostSocket:
    """A raw L2 socket on a host's ``eth0`` (opened inside its namespace); scapy builds and parses
    the frames. Scapy's own L2socket cannot be used: it resolves interfaces in the root namespace."""

    def __init__(self, ns: str, iface: str = "eth0") -> None:
        import socket

        def open_sock():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            s.bind((iface, 0x0003))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            return s
        self._sock = in_netns(ns, open_sock)

    def send(self, data) -> None:
        self._sock.send(bytes(data))

    def recv(self, timeout: float = 1.0) -> bytes | None:
        """Next frame that arrived on the interface (not one we sent), or None."""
        import select
        import time as _time
        end = _time.monotonic() + timeout
        while True:
            left = end - _time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._sock], [], [], left)
            if not ready:
                return None
            data, addr = self._sock.recvfrom(65536)
            if addr[2] != 4:   # PACKET_OUTGOING
                return data

    def recv_all(self, timeout: float = 0.3) -> list[bytes]:
        out = []
        while (f := self.recv(timeout)) is not None:
            out.append(f)
        return out

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> HostSocket:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
