"""``dlcp-exp --arch tna`` end to end: the leaf-spine PS experiment with the Tofino program on p4sim's
TNA model in every switch, the controller installing the policy through P4Runtime, real Mininet
namespaces. Checks the records and that the Tofino program's own counters saw the traffic the way
the BMv2 program's do (tests/mininet/test_experiment.py): queue tx counts on the DLCP queues, no
selective drop of critical packets, nothing malformed. Budget: one short run of three modes
(about the length of test_experiment's), under the module's Mininet lock.
"""

import json
import re

import pytest

from mininet_topos.experiment import ExperimentConfig, run_experiment
from mininet_topos.network import leftovers
from mininet_topos.topologies import build

pytestmark = [pytest.mark.mininet, pytest.mark.slow]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    cfg = ExperimentConfig(topo="leaf-spine", topo_params={"spines": 2, "leaves": 2, "hosts_per_leaf": 2},
                           workload="ps", model="digits", iterations=3, background=True, timeout_s=120,
                           arch="tna", out=str(tmp_path_factory.mktemp("results")))
    path = run_experiment(cfg)
    assert leftovers(build("leaf-spine")) == []
    return path


def test_the_tofino_program_ran_every_mode(run_dir):
    assert json.loads((run_dir / "config.json").read_text())["arch"] == "tna"
    records = [json.loads(line) for line in (run_dir / "iterations.jsonl").read_text().splitlines()]
    for mode in ("dlcp", "baseline", "tcp"):
        mine = [r for r in records if r["mode"] == mode]
        assert sorted((r["worker"], r["iteration"]) for r in mine) == \
            sorted((w, i) for w in ("h2", "h3", "h4") for i in range(3)), mode
        assert all(r["bytes"] > 0 and r["comm_time_s"] > 0 for r in mine)


def test_the_tofino_program_counted_and_dropped_like_the_bmv2_one(run_dir):
    stats = {s["mode"]: s for s in map(json.loads, (run_dir / "switch_stats.jsonl").read_text().splitlines())}
    assert set(stats) == {"dlcp", "baseline", "tcp"}
    # the DLCP mode's traffic leaves through several per-class queues (qid), counted by the Tofino
    # program's port_queue_tx; the baseline puts everything in one queue
    queues = {}
    for mode in ("dlcp", "baseline"):
        raw = json.loads((run_dir / mode / "switch_stats.json").read_text())
        queues[mode] = {c["queue"] for sw in raw.values() if isinstance(sw, dict)
                        for c in sw.get("port_queue_tx") or [] if int(c.get("packets", 0)) > 0}
    assert len(queues["dlcp"]) > 1 and len(queues["baseline"]) >= 1, queues
    assert {6, 7} <= queues["dlcp"], queues          # DLCP control (7) and layer-7 data (6), as on BMv2
    # ECN marks only where DLCP thresholds are installed (queue depths are each queue's own)
    assert sum(stats["baseline"]["ecn_marks"].values()) == sum(stats["tcp"]["ecn_marks"].values()) == 0
    assert sum(stats["baseline"]["selective_drops"].values()) == 0
    assert sum(stats["tcp"]["selective_drops"].values()) == 0
    assert not [k for k in stats["dlcp"]["selective_drops"] if k.startswith("q7/")]   # never critical
    assert all(s["malformed"] == 0 for s in stats.values())


def test_no_switch_paused_for_a_full_collection_of_its_heap(run_dir):
    """Every p4sim switch of the run froze its heap after the pipeline load (p4sim.switch.gcpause):
    a full Python GC while it forwarded walked only young objects, never the program (before the
    fix: 4-5 full collections per switch and mode of 120,000-180,000 objects, up to 155 ms)."""
    lines = [(log, re.search(r"while forwarding gen2 (\d+) \(longest (\d+) ms, at most ([\d,]+) objects\)",
                             log.read_text(errors="replace")))
             for mode in ("dlcp", "baseline", "tcp") for log in sorted((run_dir / mode).glob("*.log"))
             if "final: rx" in log.read_text(errors="replace")]
    assert len(lines) == 12, [str(p) for p, _ in lines]         # 4 switches x 3 modes
    for log, m in lines:
        assert m, f"{log}: no GC figures in the stop line"
        assert int(m.group(3).replace(",", "")) < 30_000, f"{log}: {m.group(0)}"
