"""The ns-3 switch model decides every packet as p4sim running p4src/bmv2/dlcp.p4 does.

Why this exists: issue 13's fidelity check. Same policy (the controller's parsed default
policy), same routes, same per-queue depths, same random packets: identical queue,
forward/ECN-mark/selective-drop, and ECMP member (which is only possible if spraying and
per-flow hashing agree bit for bit). Budget: about 30 s (p4sim compile plus the packets).
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections import Counter
from pathlib import Path

from simulation import switch_model
from simulation.policy import load_policy, thresholds_for_rate
from tests.simulation.differential import (
    GROUPS,
    install,
    model_outcome,
    p4sim_outcome,
    random_depths,
    random_packet,
)

ROOT = Path(__file__).resolve().parents[2]
PACKETS = int(os.environ.get("DLCP_SIM_DIFF_PACKETS", "10000"))


def _at_drop_boundary(frame: bytes, queue: int, depths: list[int], policy) -> str:
    """'at' / 'above' when the frame is droppable DLCP DATA (version 1 DATA, not CRITICAL, to a DLCP
    port) whose queue holds exactly / one more than its (queue, mag) drop depth, else ''."""
    if frame[23] != 17 or int.from_bytes(frame[36:38], "big") not in (9290, *policy.udp_ports):
        return ""
    hdr = frame[42:66]
    if hdr[0] != 0x10 or hdr[2] & 0x80 or (queue, hdr[1] & 0x0F) not in policy.thresholds:
        return ""
    return {0: "at", 1: "above"}.get(depths[queue] - policy.thresholds[(queue, hdr[1] & 0x0F)][0], "")


def test_model_and_p4sim_decide_the_same(ns3_model) -> None:
    from p4sim.backend import compile_file
    from p4sim.v1model.pipeline import V1ModelPath

    _, sim = ns3_model
    policy = load_policy()
    # the shipped policy gives queueing delays: both sides get the packets dlcpctl installs at 20 Mbit/s
    policy = dataclasses.replace(policy, thresholds=thresholds_for_rate(policy, 20_000_000), threshold_unit="packets")
    program = compile_file(str(ROOT / "p4src" / "bmv2" / "dlcp.p4"), [str(ROOT / "p4src" / "include")])
    pipeline = program.instantiate()
    tables = install(pipeline, policy)
    path = V1ModelPath(pipeline)
    cpol = switch_model.cpp_policy(policy)
    rng = random.Random(13)
    seen: Counter = Counter()
    members: dict[tuple[int, bool], set[int]] = {}
    diffs = []
    boundary: Counter = Counter()
    for i in range(PACKETS):
        frame, dst = random_packet(rng, policy)
        depths = random_depths(rng, policy)
        want = p4sim_outcome(path, pipeline, tables, frame, dst, depths)
        got, sprayed, queue = model_outcome(sim, cpol, frame, dst, depths)
        if want != got:
            diffs.append(f"packet {i} dst {dst} depths {depths}: p4sim {want} model {got} frame {frame.hex()}")
        seen[(want.action, sprayed)] += 1
        boundary[_at_drop_boundary(frame, queue, depths, policy)] += 1
        if want.member is not None:
            members.setdefault((dst, sprayed), set()).add(want.member)
    assert not diffs, f"{len(diffs)} of {PACKETS} differ; first: " + "\n".join(diffs[:5])
    # the sequence exercised every decision
    assert {a for a, _ in seen} == {"forward", "mark", "drop"}, seen
    assert seen[("forward", True)] + seen[("mark", True)] > 0, seen
    # the comparison operators were probed: droppable DATA exactly at and one above its drop depth
    assert boundary["at"] > 20 and boundary["above"] > 20, boundary
    assert members[(9, True)] == set(range(len(GROUPS[9][0])))        # sprayed over all members
    assert members[(10, False)] == set(range(len(GROUPS[10][0])))     # flows spread by their 5-tuples
