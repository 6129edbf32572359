"""Fixtures for controller tests: the hand-written DLCP P4Info and a small network YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctl_support import P4INFO, three_switch_yaml

from controller.p4info_index import P4InfoIndex


@pytest.fixture(scope="session")
def index() -> P4InfoIndex:
    return P4InfoIndex.from_file(P4INFO)


@pytest.fixture
def net_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "net.yaml"
    path.write_text(three_switch_yaml([1, 2, 3]))
    return path
