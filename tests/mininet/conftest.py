"""Mininet tests need root (network namespaces) and Debian's mininet module, and the machine's
Mininet to themselves: hosts and switch ports have fixed names (h1-eth0, s1-eth1), so two networks
at once collide ("RTNETLINK answers: File exists") and one's teardown deletes the other's links.
Every module here therefore holds /tmp/dlcp-mininet.lock (``mininet_topos.mininet_lock``), the lock
`dlcp-exp`, `make demo` and the BMv2 experiment test take too. The lock is re-entrant for a process
tree, so a test that runs `dlcp-exp` (in-process or as a child) under this fixture does not wait
for itself."""

import os
import shutil

import pytest

from mininet_topos.mininet_lock import mininet_lock


def pytest_collection_modifyitems(config, items):
    reason = None
    if os.geteuid() != 0:
        reason = "Mininet needs root (network namespaces, veth pairs)"
    elif shutil.which("mnexec") is None:
        reason = "Mininet is not installed (mnexec missing); run `make setup`"
    if reason:
        for item in items:
            if "mininet" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True, scope="module")
def _mininet_to_ourselves():
    """Hold the machine-wide Mininet lock for a whole module: its networks are module fixtures,
    and autouse fixtures of a scope are set up before the other fixtures of that scope."""
    with mininet_lock(log=lambda line: print(f"tests/mininet: {line}", flush=True)):
        yield
