"""Suite-wide pytest set-up: which tests need a machine-wide resource to themselves.

`make test` runs the suite on every core with pytest-xdist (``-n N --dist loadgroup``). Tests that
share something machine-wide must never run at the same time on two workers, so they form one work
unit, ``machine``, that one worker runs from start to end while the others take the rest. What is
machine-wide here:

* network namespaces and veths with fixed names (Mininet's ``h1-eth0``/``s1-eth1``, VethTopology
  tags such as ``p4q``), and /tmp/dlcp-mininet.lock, which such tests hold: two of them on two
  workers would either collide or wait on the lock for a whole module;
* simple_switch_grpc started without its own ``--notifications-addr`` (it binds
  ``ipc:///tmp/bmv2-<device-id>-notifications.ipc``) or without ``--thrift-port`` (9090);
* the documented fixed ports the doc examples start switches on (9559, 9090, 50051-3, 9091-3).

A module is machine-wide if it is listed below or its source names one of the resources or the
``mininet`` marker (so a new namespace test is grouped without editing this file). Everything else
must use port 0 and tmp_path, as the suite does today; it is scheduled a module at a time (as
``--dist loadscope``), so module fixtures are set up once.

The grouping is done by the scheduler (the ``pytest_xdist_make_scheduler`` hook), from node ids,
not with ``xdist_group`` markers: pytest-xdist 3.8 groups those by rewriting ``item._nodeid``, which
pytest 9.2 no longer reads (its node ids live in ``Node._id``), so the markers were silently ignored
and two namespace tests ran at once (measured: two ``test_host_netns`` runs on both workers).
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
    r"[\"']link[\"'],\s*[\"']add[\"']|[\"']simple_switch_grpc[\"'],|mark\.mininet\b")


# Work units started before all others, longest first, so that no long one is left for the end
# while the other workers idle (xdist would order units by their number of tests: the one-test
# fuzzers came last). Measured with --durations=0 in a parallel run (shares, the machine was loaded).
LONGEST_FIRST = (
    MACHINE_GROUP,                                  # every Mininet study, namespaces, doc examples
    "tests/backend/test_fuzz_programs.py",          # one test, 1,000 mutants
    "tests/host_agent/test_host_cli.py",            # agents as processes, 4-worker PS and all-reduce
    "tests/dataplane/test_fuzz_packets.py",
    "tests/controller/test_cli_input.py",
    "tests/p4info/test_p4c_p4info.py",              # p4c on 224 programs
)


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


def is_machine_wide(nodeid: str) -> bool:
    """True if the test ``nodeid`` (rootdir-relative) needs a machine-wide resource to itself."""
    path = nodeid.split("::", 1)[0]
    rel = path.removeprefix("tests/")
    return _listed(rel) or _names_a_machine_resource(TESTS_DIR / rel)


def work_unit(nodeid: str) -> str:
    """What one worker runs as a whole: the machine-wide group, else the test's module."""
    return MACHINE_GROUP if is_machine_wide(nodeid) else nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN201 (xdist's Scheduling)
    """``--dist loadgroup``: machine-wide tests as one unit, every other module as a unit."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class MachineWideScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            explicit = super()._split_scope(nodeid)      # an ``@group`` suffix, should xdist add one
            return explicit if explicit != nodeid else work_unit(nodeid)

        def _assign_work_unit(self, node) -> None:  # noqa: ANN001 (xdist's WorkerController)
            for unit in reversed(LONGEST_FIRST):          # xdist orders by test count, not time
                if unit in self.workqueue:
                    self.workqueue.move_to_end(unit, last=False)
            super()._assign_work_unit(node)

    return MachineWideScheduling(config, log)
