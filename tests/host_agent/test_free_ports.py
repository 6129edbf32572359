"""mininet_topos.ports.free_ports with real sockets: loopback ports below the kernel's ephemeral range,
free when handed out, never handed out twice in one process (the agents, BMv2 nodes and torch
rendezvous of the tests bind them a second or more later; bind(0) could give them to anyone meanwhile)."""

from __future__ import annotations

import socket

import pytest

from mininet_topos import ports


@pytest.mark.parametrize("kind", [socket.SOCK_STREAM, socket.SOCK_DGRAM])
def test_ports_below_the_ephemeral_range_free_and_never_twice(kind):
    low = ports._ephemeral_low()
    first = ports.free_ports(40, kind)
    second = ports.free_ports(40, kind)
    assert len(set(first + second)) == 80
    assert all(ports.LOWEST <= p < low for p in first + second)
    held = [socket.socket(socket.AF_INET, kind) for _ in first + second]
    try:
        for s, p in zip(held, first + second, strict=True):   # each one binds: nothing took it since
            s.bind(("127.0.0.1", p))
    finally:
        for s in held:
            s.close()
