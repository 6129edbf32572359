"""Differential test of p4src/bmv2/dlcp.p4: the same random STF on p4sim and on real BMv2.

1,200 random DLCP and non-DLCP packets with a random policy and routes
(``tests/dataplane/differential.py``) run through p4sim's STF runner; its counters become
``check_counter`` lines of the same file, which then runs through ``p4sim stf --target bmv2``
(p4c + simple_switch). Both must give the same packets on the same ports (compared per port as
multisets: BMv2's strict-priority queues may reorder across queues, p4sim runs each packet to
completion) and the same counters (malformed per reason, selective drops and ECN marks per
(queue, magnitude class), egress safety drops, transmissions per (port, queue), ECMP member
packets). Budget: about a minute on an idle machine (BMv2 compile ~15 s).
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from tests.dataplane.differential import HOT_PORT, PORTS, scenario

ROOT = Path(__file__).resolve().parents[2]
DLCP = ROOT / "p4src" / "bmv2" / "dlcp.p4"
INCLUDE = str(ROOT / "p4src" / "include")
PACKETS = 1200
SEED = 1717


def _counter_lines(pipeline, sc) -> list[str]:
    """check_counter lines holding p4sim's values of every DLCP counter the packets can touch."""
    lines = []

    def cell(name: str, index: int) -> None:
        packets, nbytes = pipeline.counters[name].read_cell(index)
        lines.append(f"check_counter {name}({index}) packets == {packets}")
        lines.append(f"check_counter {name}({index}) bytes == {nbytes}")

    for reason in range(4):
        cell("DlcpIngress.malformed", reason)
    for index in range(8 * 16):
        for name in ("DlcpIngress.selective_drops", "DlcpIngress.ecn_marks", "DlcpEgress.egress_safety_drops"):
            cell(name, index)
    for port in PORTS:
        for queue in range(8):
            cell("DlcpEgress.port_queue_tx", port * 8 + queue)
    table = pipeline.tables["DlcpIngress.ecmp_members"]
    for handle, entry in zip(sc.member_handles, list(table), strict=True):
        lines.append(f"check_counter DlcpIngress.ecmp_member_packets(${handle}) packets == {entry.packets}")
    return lines


def _p4sim(stf_text: str):
    from p4sim.backend import compile_file
    from p4sim.stf.parser import parse_text
    from p4sim.stf.runner import StfRun
    from p4sim.v1model.pipeline import V1ModelPath

    run = StfRun(compile_file(str(DLCP), [INCLUDE]).instantiate(), parse_text(stf_text, "differential.stf"),
                 V1ModelPath)
    errors = run.run()
    return run, errors


def _bmv2(stf_path: Path) -> tuple[dict[int, list[bytes]], list[str], list[str]]:
    from p4sim.stf import bmv2_commands as bc
    from p4sim.stf import bmv2_target as bt
    from p4sim.stf.parser import parse_file

    tools = bt.find_tools()
    stf = parse_file(str(stf_path))
    workdir = tempfile.mkdtemp(prefix="dlcp-differential-")
    try:
        json_path = bt.compile_program(tools, str(DLCP), workdir, [INCLUDE])
        with bt.Bmv2Switch(tools, json_path, workdir, stf.priority_queues) as switch:
            run = bt.Bmv2Run(switch, bc.Bmv2Program.from_file(json_path), stf)
            errors = run.run()
            with switch.out.cond:
                outputs = {p: list(v) for p, v in switch.out.packets.items()}
        return outputs, errors, run.notes
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _differences(a: dict[int, list[bytes]], b: dict[int, list[bytes]]) -> list[str]:
    out = []
    for port in sorted(set(a) | set(b)):
        ca, cb = Counter(a.get(port, [])), Counter(b.get(port, [])),
        only_a, only_b = ca - cb, cb - ca
        for pkt, n in list(only_a.items())[:3]:
            out.append(f"port {port}: p4sim only ({n}x): {pkt.hex()}")
        for pkt, n in list(only_b.items())[:3]:
            out.append(f"port {port}: BMv2 only ({n}x): {pkt.hex()}")
        if only_a or only_b:
            out.append(f"port {port}: p4sim sent {len(a.get(port, []))}, BMv2 {len(b.get(port, []))}")
    return out


@pytest.mark.bmv2
@pytest.mark.slow
def test_random_traffic_same_on_p4sim_and_bmv2(tmp_path: Path) -> None:
    from p4sim.stf import bmv2_target

    reason = bmv2_target.skip_reason()
    if reason:
        pytest.skip(reason)
    sc = scenario(SEED, PACKETS)
    first, errors = _p4sim(sc.text())
    assert errors == [] and first.notes == [], errors + first.notes
    sc.lines += _counter_lines(first.pipeline, sc)
    stf_path = tmp_path / "differential.stf"
    stf_path.write_text(sc.text())

    # the scenario exercises what it is for (on p4sim, which the STF's counters now hold)
    sent = sum(len(v) for v in first.outputs.values())
    malformed = [first.pipeline.counters["DlcpIngress.malformed"].read_cell(i)[0] for i in range(4)]
    drops = sum(first.pipeline.counters["DlcpIngress.selective_drops"].read_cell(i)[0] for i in range(128))
    members = [e.packets for e in first.pipeline.tables["DlcpIngress.ecmp_members"]]
    assert PACKETS // 3 < sent < PACKETS and all(malformed) and drops > 0, (sent, malformed, drops)
    assert sum(1 for n in members if n) >= 4 and HOT_PORT not in first.outputs, members

    again, errors = _p4sim(sc.text())       # the STF with its counters passes on p4sim
    assert errors == [] and again.outputs == first.outputs, errors[:5]
    outputs, errors, notes = _bmv2(stf_path)
    assert notes == [], notes[:5]
    assert errors == [], "\n".join(errors[:20])
    assert _differences(first.outputs, outputs) == []
