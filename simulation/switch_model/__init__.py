"""The DLCP switch model in ns-3: compiles dlcp_switch.h (and the hosts: HOST_HEADERS) once
through cppyy and fills the switch policy.

Why this exists: every per-packet decision (priority map, per-(queue, magnitude) drop/ECN,
critical never selectively dropped, spraying vs per-flow ECMP) runs in C++ inside ns-3
(dlcp_switch.h); Python only builds the objects, from the controller's parsed Policy
(simulation/policy.py), before the simulation starts.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from controller.netconfig import Policy

HEADER = Path(__file__).with_name("dlcp_switch.h")
PFABRIC = Path(__file__).with_name("pfabric_queue.h")         # the pFabric-like baseline's switch port
# the end hosts, in compile order: shared records/knobs, TCP path, pFabric-like transport, DLCP transport, workloads
HOST_HEADERS = tuple(Path(__file__).with_name(name) for name in (
    "sim_net.h", "tcp_path.h", "pfabric_transport.h", "dlcp_transport.h", "workloads.h"))
KEYS = ("is_dlcp", "msg_type", "layer_class", "mag_class", "flags")


@lru_cache(maxsize=1)
def ns3():
    """``(ns, cppyy.gbl.dlcpsim)``: ns-3 imported (20-60 s the first time) and the model compiled."""
    from ns import ns as ns_module   # noqa: I001  (the wheel's module layout)
    import cppyy

    if not hasattr(cppyy.gbl, "dlcpsim"):
        if not cppyy.cppdef(HEADER.read_text()):
            raise RuntimeError(f"{HEADER}: cppyy could not compile the switch model")
        if not cppyy.cppdef(PFABRIC.read_text()):
            raise RuntimeError(f"{PFABRIC}: cppyy could not compile the pFabric queue disc")
        # one cppdef: SimNet holds Ptr<DlcpHost> before DlcpHost is defined (as one translation unit)
        if not cppyy.cppdef("\n".join(header.read_text() for header in HOST_HEADERS)):
            raise RuntimeError(f"{', '.join(h.name for h in HOST_HEADERS)}: cppyy could not compile the end hosts")
    cppyy.gbl.dlcpsim.DlcpQueueDisc.GetTypeId()      # register the TypeIds
    cppyy.gbl.dlcpsim.DlcpRouting.GetTypeId()
    cppyy.gbl.dlcpsim.DlcpSender.GetTypeId()
    cppyy.gbl.dlcpsim.DlcpHost.GetTypeId()
    cppyy.gbl.dlcpsim.PfabricQueueDisc.GetTypeId()
    cppyy.gbl.dlcpsim.PfabricBuffer.GetTypeId()
    return ns_module, cppyy.gbl.dlcpsim


def cpp_policy(policy: Policy, thresholds: dict[tuple[int, int], tuple[int, int]] | None = None):
    """A ``dlcpsim::DlcpPolicy`` holding what the controller would install from ``policy``
    (``thresholds`` in packets, default the policy's own)."""
    _, sim = ns3()
    pol = sim.DlcpPolicy()
    pol.queueDepth = policy.queue_depth
    for rule in sorted(policy.priority_map, key=lambda r: -r.priority):      # first match wins
        args: list[int] = []
        for key in KEYS:
            value, mask = rule.match.get(key, (0, 0))
            args += [value, mask]
        pol.AddRule(*args, rule.queue)
    for (queue, mag), (drop, ecn) in (thresholds if thresholds is not None else policy.thresholds).items():
        pol.SetThreshold(queue, mag, drop, ecn)
    for port in policy.udp_ports:
        pol.AddUdpPort(port)
    return pol
