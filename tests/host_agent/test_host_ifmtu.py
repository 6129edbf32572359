"""interface_mtu: the MTU the DDP hook sizes its packets by, read from the real interfaces here."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from host_agent.ifmtu import ETHERNET_MTU, MAX_IPV4_MTU, interface_mtu


def test_loopback_reports_lo_mtu_capped_to_ipv4():
    lo = int(Path("/sys/class/net/lo/mtu").read_text())
    assert interface_mtu("127.0.0.1") == min(lo, MAX_IPV4_MTU)
    assert interface_mtu("127.0.0.5") == min(lo, MAX_IPV4_MTU)


def test_unknown_wildcard_and_malformed_addresses_fall_back_to_ethernet():
    assert interface_mtu("0.0.0.0") == ETHERNET_MTU
    assert interface_mtu("203.0.113.77") == ETHERNET_MTU     # TEST-NET-3: on no interface here
    assert interface_mtu("not-an-address") == ETHERNET_MTU


def test_a_real_interface_address_gives_that_interface_mtu():
    out = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=False).stdout
    rows = [line.split() for line in out.splitlines()]
    found = [(r[1], r[3].split("/")[0]) for r in rows if len(r) > 3 and r[1] != "lo"]
    if not found:
        pytest.skip("no non-loopback IPv4 interface on this machine")
    name, addr = found[0]
    name = name.split("@")[0]
    assert interface_mtu(addr) == min(int(Path(f"/sys/class/net/{name}/mtu").read_text()), MAX_IPV4_MTU)
