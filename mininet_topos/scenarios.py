"""The named experiments of ``dlcp-exp --scenario NAME`` and the modes they compare, as plain data.

Scenarios are the congestion the published evaluations study (DLCP, arXiv 2008.08445; MLT, NSDI'24):

- ``incast``: parameter-server training with 6 workers pushing into one server port (star).
- ``incast-wide``: the same with 12 workers (star of 13 hosts): twice the fan-in on the same 64-packet
  queue, so each TCP flow's share of the buffer is a handful of packets. Measured (session 10): TCP does
  not collapse there (~5 RTOs per iteration, yet the server's port stays ~0.95 busy: a round moves 9 MB,
  one 200 ms RTO is 5 % of it) and DLCP = TCP cubic (docs/experiments-history.md, "incast-wide").
- ``ecmp-collision``: two jobs (a parameter server and a ring all-reduce) on a 2x2 leaf-spine whose
  cross-leaf flows collide on a spine under per-flow ECMP.
- ``tcp-bulk``: a parameter-server job next to long-lived TCP bulk flows (Linux cubic, as any bulk
  transfer runs today) sharing its links, incl. the server's port.
- ``accuracy``: the small digits MLP trained for 100 iterations in the incast setting: the check that
  bounded loss does not cost accuracy (final test accuracy against the lossless modes).

Modes are what a user would run. The status quo is TCP over a network that does not know DL
traffic (one FIFO queue, no selective drop, per-flow ECMP), with the congestion control chosen per
socket (``tcp-cubic``, ``tcp-bbr``). ``udp-reliable`` is the project's own transport with every packet
critical on the same status-quo network (an ablation). ``dlcp`` is everything: tagged packets,
priority queues, selective drop, spraying; ``dlcp-prio`` / ``dlcp-drop`` / ``dlcp-spray`` keep one
switch mechanism each (the hosts tag and bound loss in all four), so each mechanism's share shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

STATUS_QUO_POLICY = {"priority_map": [], "thresholds": [], "spray": False}


@dataclass(frozen=True)
class Mode:
    """How the agents run (``agent``: dlcp | baseline | tcp) and what the switches get."""

    name: str
    agent: str
    switch: str                  # status-quo | dlcp | prio | drop | spray
    tcp_cc: str | None = None
    about: str = ""


MODES: dict[str, Mode] = {m.name: m for m in (
    Mode("dlcp", "dlcp", "dlcp", about="DLCP: tags, priority queues, selective drop, spraying"),
    Mode("dlcp-prio", "dlcp", "prio", about="DLCP ablation: priority queues only"),
    Mode("dlcp-drop", "dlcp", "drop", about="DLCP ablation: selective drop only (one queue, per-flow ECMP)"),
    Mode("dlcp-spray", "dlcp", "spray", about="DLCP ablation: spraying only (one queue, no selective drop)"),
    Mode("udp-reliable", "baseline", "status-quo", about="the project's reliable UDP, every packet critical"),
    Mode("tcp-cubic", "tcp", "status-quo", "cubic", about="status quo: TCP cubic, FIFO, per-flow ECMP"),
    Mode("tcp-bbr", "tcp", "status-quo", "bbr", about="status quo: TCP BBR, FIFO, per-flow ECMP"),
)}
ALIASES = {"tcp": "tcp-cubic", "baseline": "udp-reliable"}
STATUS_QUO = "tcp-cubic"        # what every comparison is made against


def resolve_modes(text: str) -> tuple[str, ...]:
    """``dlcp,tcp`` -> canonical mode names; ValueError naming the unknown one."""
    out = []
    for raw in (m.strip() for m in text.split(",")):
        if not raw:
            continue
        name = ALIASES.get(raw, raw)
        if name not in MODES:
            raise ValueError(f"--mode {raw!r}: choose from {', '.join(MODES)} (or {', '.join(ALIASES)})")
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError("--mode: no mode given")
    return tuple(out)


def switch_policy(mode: Mode, default_policy: dict) -> dict | None:
    """The inline policy for the network YAML (None: the shipped default, i.e. full DLCP).

    Ablations are cut from the shipped default (whatever its thresholds are), never hand-written:
    ``drop`` keeps its threshold blocks but applies them to queue 0, where everything then waits.
    """
    if mode.switch == "dlcp":
        return None
    if mode.switch == "status-quo":
        return dict(STATUS_QUO_POLICY)
    if mode.switch == "prio":
        return {"thresholds": [], "spray": False}
    if mode.switch == "spray":
        return {"priority_map": [], "thresholds": [], "spray": True}
    if mode.switch == "drop":
        blocks, seen = [], set()
        for block in default_policy.get("thresholds") or []:
            mags = [m for m in block.get("mag_classes", []) if m not in seen]
            if not mags:
                continue
            seen.update(mags)
            blocks.append({**block, "queues": [0], "mag_classes": mags})
        return {"priority_map": [], "thresholds": blocks, "spray": False}
    raise ValueError(f"unknown switch setting {mode.switch!r}")


@dataclass(frozen=True)
class Job:
    """One training job: ``ps`` (hosts[0] serves, the rest are workers), ``allreduce`` (a ring) or ``torch-ddp``."""

    name: str
    kind: str
    workload: str
    hosts: tuple[str, ...]
    scale: float = 1.0
    job_id: int = 1
    buckets: int = 4


@dataclass(frozen=True)
class Flow:
    """Competing traffic: ``tcp`` (long-lived bulk, Linux cubic) or ``udp`` (paced at ``mbps``)."""

    src: str
    dst: str
    kind: str = "tcp"
    mbps: float = 0.0


@dataclass(frozen=True)
class Scenario:
    name: str
    about: str
    topo: str
    topo_params: dict = field(default_factory=dict)
    jobs: tuple[Job, ...] = ()
    flows: tuple[Flow, ...] = ()
    # 20 Mbit/s: the Python switches and agents keep ample CPU headroom on 2 shared cores (measured
    # 9-18 % of a core per switch at 20-40 Mbit/s); the calibration scales down further if needed.
    link_mbps: float = 20.0
    iterations: int = 8
    compute_ratio: float = 1.0


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario(
        "incast", "PS incast: 6 workers push digits-wide gradients (~500 packets each) into one server port",
        "star", {"hosts": 7},
        jobs=(Job("ps", "ps", "digits-wide", ("h1", "h2", "h3", "h4", "h5", "h6", "h7")),)),
    Scenario(
        "incast-wide", "PS incast: 12 workers push digits-wide gradients (~500 packets each) into one server port "
        "(star of 13 hosts; queues of 64 packets as everywhere, so a TCP flow's share of the port's buffer is ~5 "
        "packets)",
        "star", {"hosts": 13},
        jobs=(Job("ps", "ps", "digits-wide", tuple(f"h{i}" for i in range(1, 14))),)),
    Scenario(
        "ecmp-collision", "two jobs across a 2x2 leaf-spine: PS (h5 <- h1,h2) and a ring (h3,h7,h4,h8) whose "
        "cross-leaf flows share the spines",
        "leaf-spine", {"spines": 2, "leaves": 2, "hosts_per_leaf": 4},
        jobs=(Job("ps", "ps", "digits-wide", ("h5", "h1", "h2"), job_id=1),
              Job("ring", "allreduce", "resnet50", ("h3", "h7", "h4", "h8"), scale=0.005, job_id=2))),
    Scenario(
        "tcp-bulk", "PS (h1 <- h2,h4,h5) next to long-lived TCP bulk flows h6->h1 and h3->h5",
        "leaf-spine", {"spines": 2, "leaves": 2, "hosts_per_leaf": 3},
        jobs=(Job("ps", "ps", "digits-wide", ("h1", "h2", "h4", "h5")),),
        flows=(Flow("h6", "h1"), Flow("h3", "h5"))),
    Scenario(
        "accuracy", "the accuracy check: the digits MLP trained to convergence by a PS with 6 workers into one "
        "server port (real gradients, real test accuracy; DLCP gives up non-critical packets within the bound)",
        "star", {"hosts": 7},
        jobs=(Job("ps", "ps", "digits", ("h1", "h2", "h3", "h4", "h5", "h6", "h7")),), iterations=100),
    Scenario(
        "torch-ddp", "PyTorch DDP (digits CNN, 4 ranks h1,h2,h4,h5 in a ring across both leaves) next to the "
        "tcp-bulk scenario's long-lived TCP bulk flows h6->h1 and h3->h5; TCP modes run DDP's gloo all-reduce",
        "leaf-spine", {"spines": 2, "leaves": 2, "hosts_per_leaf": 3},
        jobs=(Job("ddp", "torch-ddp", "digits-cnn", ("h1", "h2", "h4", "h5")),),
        flows=(Flow("h6", "h1"), Flow("h3", "h5")), iterations=30),
)}


def get(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ValueError(f"--scenario {name!r}: choose from {', '.join(SCENARIOS)}") from None
