"""Loopback ports for a program that must be told its port before it binds it (BMv2 switch nodes, tests).

A port probed with ``bind(("127.0.0.1", 0))`` and closed comes from the kernel's ephemeral range, where
any other process's ``bind(0)`` or ``connect()`` may take it before the program binds it, a second or
more later: the CI lost tests to "Address already in use" that way (9a8673b; a fat-tree's p4sim switch
in session 12). A program that can bind port 0 and report the port it got should do that (p4sim's
switch does); for the others (BMv2's gRPC and thrift ports, agent processes given each other's
addresses up front, torch's rendezvous port) ``free_ports`` takes ports from below the ephemeral range,
which only an explicit bind takes, and never hands out a port twice in one process. No Mininet import:
tests use it too.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10_000               # below this: ports that services on a CI machine may bind by name
_given: set[int] = set()      # ports handed out in this process: never twice (two switches of one test)


def _ephemeral_low() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768          # Linux's default


def free_ports(n: int = 1, kind: socket.SocketKind = socket.SOCK_STREAM) -> list[int]:
    """``n`` distinct ports on 127.0.0.1 that are free for ``kind`` now, from below the ephemeral range."""
    high = _ephemeral_low()
    if high - LOWEST < 1000:  # (almost) every port is ephemeral here: probe as before
        return _probed(n, kind)
    pick = random.SystemRandom()
    ports: list[int] = []
    for _ in range(1000):
        port = pick.randrange(LOWEST, high)
        if port in _given:
            continue
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
        _given.add(port)
        if len(ports) == n:
            return ports
    raise RuntimeError(f"no {n} free ports in {LOWEST}..{high - 1}")


def _probed(n: int, kind: socket.SocketKind) -> list[int]:
    socks = [socket.socket(socket.AF_INET, kind) for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
