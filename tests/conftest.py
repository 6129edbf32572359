"""Suite-wide pytest set-up: which tests need a machine-wide resource to themselves.

`make test` runs the suite on every core with pytest-xdist (``-n N --dist loadgroup``). Tests that
share something machine-wide must never run at the same time on two workers, so they all get the
xdist group ``machine`` and run one after another on one worker, while the other workers take the
rest. What is machine-wide here:

* network namespaces and veths with fixed names (Mininet's ``h1-eth0``/``s1-eth1``, VethTopology
  tags such as ``p4q``), and /tmp/dlcp-mininet.lock, which such tests hold: two of them on two
  workers would either collide or wait on the lock for a whole module;
* simple_switch_grpc started without its own ``--notifications-addr`` (it binds
  ``ipc:///tmp/bmv2-<device-id>-notifications.ipc``) or without ``--thrift-port`` (9090);
* the documented fixed ports the doc examples start switches on (9559, 9090, 50051-3, 9091-3).

A module is machine-wide if it is listed below, carries the ``mininet`` marker, or its source
names one of the resources (so a new namespace test is grouped without editing this file).
Everything else must use port 0 and tmp_path, as the suite does today.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

MACHINE_GROUP = "machine"
TESTS_DIR = Path(__file__).parent

# Path under tests/ (a file, or a directory ending in "/") -> the machine-wide resource it uses.
MACHINE_WIDE: dict[str, str] = {
    "mininet/": "Mininet networks (fixed interface names); each module holds /tmp/dlcp-mininet.lock",
    "dataplane/test_bmv2_experiment.py": "a BMv2 Mininet experiment under /tmp/dlcp-mininet.lock",
    "test_benchmarks_smoke.py": "benchmarks that make veths under /tmp/dlcp-mininet.lock",
    "host_agent/test_host_netns.py": "network namespaces and veth pairs",
    "switch/test_netns_switch.py": "VethTopology with fixed tags (p4q, p4c)",
    "switch/test_ports_netns.py": "VethTopology namespaces and veths",
    "ptf/test_ptf_l3.py": "veth pairs for PTF",
    "docs/test_doc_examples.py": "doc examples start switches on fixed ports (9559, 9090, 5005x, 909x)",
    "controller/test_bmv2.py": "simple_switch_grpc: default notifications socket /tmp/bmv2-1-notifications.ipc",
    "p4runtime/test_tls_bmv2.py": "simple_switch_grpc: default notifications socket /tmp/bmv2-1-notifications.ipc",
    "p4runtime/test_p4runtime_shell.py": "simple_switch_grpc on the default Thrift port 9090",
}

# Source text that marks a module as machine-wide even when it is not listed above.
MACHINE_WIDE_SOURCE = re.compile(
    r"dlcp-mininet\.lock|MININET_LOCK|VethTopology|[\"']netns[\"'],\s*[\"']add[\"']|"
    r"[\"']link[\"'],\s*[\"']add[\"']|[\"']simple_switch_grpc[\"'],")


def _listed(rel: str) -> bool:
    return any(rel == key or (key.endswith("/") and rel.startswith(key)) for key in MACHINE_WIDE)


_source_cache: dict[Path, bool] = {}


def _names_a_machine_resource(path: Path) -> bool:
    if path not in _source_cache:
        try:
            _source_cache[path] = bool(MACHINE_WIDE_SOURCE.search(path.read_text(errors="replace")))
        except OSError:
            _source_cache[path] = False
    return _source_cache[path]


def is_machine_wide(item: pytest.Item) -> bool:
    """True if ``item`` uses a resource that only one test on the machine may use at a time."""
    path = Path(str(item.path))
    try:
        rel = path.relative_to(TESTS_DIR).as_posix()
    except ValueError:
        return False
    return _listed(rel) or "mininet" in item.keywords or _names_a_machine_resource(path)


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist registers this marker itself; without it (-p no:xdist) it must still be known.
    config.addinivalue_line("markers", "xdist_group(name): run every test of the group on one xdist worker")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put machine-wide tests in one xdist group (before xdist turns groups into node-id suffixes)."""
    for item in items:
        if is_machine_wide(item) and not any(True for _ in item.iter_markers("xdist_group")):
            item.add_marker(pytest.mark.xdist_group(MACHINE_GROUP))
