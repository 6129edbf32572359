"""Mininet tests need root (network namespaces) and Debian's mininet module."""

import os
import shutil

import pytest


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
