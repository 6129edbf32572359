"""The hostPriority knob: DLCP ahead of the host's own TCP at the host port (issue 13).

Why this exists: the knob (sim_net.h TransportConfig::hostPriority) was the experiment behind
session 7's finding that the hosts' FIFO is not where DLCP's gradients wait at load 0.6; a knob that
silently built the plain FIFO would produce such a finding by itself. One did, differently: the
ports were built, but DLCP's packets never carried the priority, and the finding was wrong
(tests/simulation/test_sim_host_queue.py checks where the packets wait). On by default since session 8.
The test builds scale-16 with the knob set as a default (as transport_knobs --set does) and checks
the host ports' queue discs (3 bands with hostControlFirst, the default since session 16, 2 without;
the TCP baselines' stay FIFOs), and that a per-run override, which would come too late for the host
ports, is refused. Real ns-3, in the test process. Budget: about 40 s (the ns-3 import).
"""

from __future__ import annotations

import pytest

from simulation.job import JobSpec, run_job
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.scenario import build_network
from simulation.switch_model.transport_knobs import set_transport_defaults
from simulation.topology import preset


def _root(net, host: str):
    ns = net.ns
    node = net.nodes[host]
    return node.GetObject[ns.TrafficControlLayer]().GetRootQueueDiscOnDevice(node.GetDevice(1))


def test_host_ports_get_priority_bands_with_the_knob_and_by_default(ns3_model) -> None:
    topo = preset("scale-16")
    try:
        set_transport_defaults(hostPriority=True)       # with hostControlFirst (default): control, DLCP, the rest
        net = build_network(topo, load_policy(FABRIC_POLICY), "dlcp")
        q = _root(net, topo.hosts[3])
        assert q.GetInstanceTypeId().GetName() == "ns3::PrioQueueDisc" and q.GetNQueueDiscClasses() == 3
        set_transport_defaults(hostPriority=True, hostControlFirst=False)    # DLCP, the rest
        net = build_network(topo, load_policy(FABRIC_POLICY), "dlcp")
        q = _root(net, topo.hosts[3])
        assert q.GetInstanceTypeId().GetName() == "ns3::PrioQueueDisc" and q.GetNQueueDiscClasses() == 2
        set_transport_defaults(hostPriority=False)
        net = build_network(topo, load_policy(FABRIC_POLICY), "dlcp")
        assert _root(net, topo.hosts[3]).GetInstanceTypeId().GetName() == "ns3::FifoQueueDisc"
    finally:
        set_transport_defaults()
    net = build_network(topo, load_policy(FABRIC_POLICY), "dlcp")      # the default since session 8: on
    q = _root(net, topo.hosts[3])
    assert q.GetInstanceTypeId().GetName() == "ns3::PrioQueueDisc" and q.GetNQueueDiscClasses() == 3
    net = build_network(topo, load_policy(FABRIC_POLICY), "tcp-cubic")  # the baselines keep the FIFO
    assert _root(net, topo.hosts[3]).GetInstanceTypeId().GetName() == "ns3::FifoQueueDisc"


def test_a_per_run_override_is_refused(ns3_model) -> None:
    spec = JobSpec(None, transport={"hostPriority": True}, max_sim_s=1e-4, progress=False)
    with pytest.raises(ValueError, match="hostPriority"):
        run_job(preset("scale-16"), load_policy(FABRIC_POLICY), "dlcp", spec)
