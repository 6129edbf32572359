"""Mininet tests need root (network namespaces) and Debian's mininet module, and the machine's
Mininet to themselves: hosts and switch ports have fixed names (h1-eth0, s1-eth1), so two networks
at once collide ("RTNETLINK answers: File exists") and one's teardown deletes the other's links.
Every module here therefore holds /tmp/dlcp-mininet.lock, the lock `dlcp-exp` studies and the
BMv2 experiment test take too."""

import fcntl
import os
import shutil

import pytest

MININET_LOCK = "/tmp/dlcp-mininet.lock"


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
    with open(MININET_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
