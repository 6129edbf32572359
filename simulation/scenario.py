"""One simulated run: a topology, a transport mode, a set of flows -> per-flow results and counters.

Why this exists: it is the plain script every preset runs (no Python in the per-packet path:
switches use the C++ model of simulation/switch_model, senders are ns-3 applications or the C++
DlcpSender). Modes:

* ``dlcp``: gradient flows are DLCP-tagged UDP (DlcpSender: paced at the host's line rate,
  magnitude class per packet, classes >= 12 and the last packet CRITICAL, no retransmission);
  switch ports run DlcpQueueDisc from the policy;
* ``tcp-newreno`` / ``tcp-cubic``: gradient flows over TCP, switch ports one FIFO holding the same
  total buffer as a DLCP port (queues x queue_depth packets);
* ``dctcp``: TcpDctcp (with Linux's 2-segment floor on its reduction) with ECN, switch ports RED marking at K = 65 packets per 10 Gbit/s
  (the DCTCP paper's guideline, at least 20, at most half the buffer), same total buffer;
* ``pfabric``: the pFabric-like baseline (simulation.job only): every transfer over
  pfabric_transport.h's transport (remaining size as priority, initial window one BDP,
  fixed RTO of 3 RTTs), switch ports PfabricQueueDisc with 2 x BDP of buffer (the paper's setting).

Every switch forwards with DlcpRouting (per-flow ECMP, plus per-packet spraying of DLCP DATA).
Background flows are TCP in every mode (the mode's TCP variant; NewReno for ``dlcp``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from controller.netconfig import Policy
from simulation import fresh, switch_model
from simulation.policy import thresholds_for_rate
from simulation.topology import Link, Topology, next_hops

MODES = ("dlcp", "tcp-newreno", "tcp-cubic", "dctcp", "pfabric")
TCP_TYPE = {"dlcp": "TcpNewReno", "tcp-newreno": "TcpNewReno", "tcp-cubic": "TcpCubic", "dctcp": "TcpDctcp",
            "pfabric": "TcpNewReno"}
DLCP_PORT = 9290
PAYLOAD = 1448               # bytes of DLCP payload / TCP segment: 1500-byte IP packets
TCP_MIN_RTO_US = 1000        # the cap of the fabric timer floor (fabric_timer_floor_s): every TCP variant and DLCP
LINUX_MIN_RTO_US = 200_000   # what the Mininet hosts' Linux TCP uses: fabrics with a link below 1 Gbit/s
DELACK_PER_MIN_RTO = 5       # Linux: delayed-ACK timer 40 ms, minimum RTO 200 ms (TCP_DELACK_MIN, TCP_RTO_MIN)
HOST_QUEUE_PACKETS = 100_000
# TCP socket buffers: Linux's defaults for the largest autotuned buffers (net.ipv4.tcp_wmem and tcp_rmem
# maxima, 4 MiB and 6 MiB). A sender never has more than the send buffer in flight; 4 MiB is 1.7x the
# bandwidth-delay product of a 100 Gbit/s host over paper-144's lossless round trip with full switch
# buffers (193 us, fabric_timer_floor_s), so no flow is window-limited below line rate by it. Before,
# 16 MiB each: a background flow's slow start grew its window to many MB sitting in its own host FIFO
# (HOST_QUEUE_PACKETS: ns-3 has no TCP small queues), and ns-3's TcpTxBuffer walks its list of sent
# segments from the head for every retransmission, so one loss on such a window cost O(n^2) list
# steps (docs/simulation.md "Where the load-0.6 time goes")
TCP_SNDBUF_BYTES = 4 << 20
TIME_WAIT_RTOS = 4           # a closed TCP connection's TIME_WAIT, in RTO floors (build_network)
TCP_RCVBUF_BYTES = 6 << 20
SCHEDULER = "ns3::MapScheduler"   # ns-3's default; CalendarScheduler measured no faster (docs/performance.md)


@dataclass
class Flow:
    src: str
    dst: str
    bytes: int
    start_s: float
    kind: str                  # "gradient" | "background"
    layer_class: int = 7


@dataclass
class FlowResult:
    mode: str
    flow: int
    kind: str
    src: str
    dst: str
    bytes: int
    start_s: float
    fct_s: float | None        # last byte received - start (DLCP open loop: last packet that arrived)
    delivered_bytes: int
    completed: bool
    tx_packets: int
    rx_packets: int


@dataclass
class RunResult:
    mode: str
    flows: list[FlowResult]
    sim_time_s: float
    wall_s: float
    events: int
    counters: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"mode": self.mode, "sim_time_s": self.sim_time_s, "wall_s": self.wall_s,
                "events": self.events, "counters": self.counters}


def ps_incast(topo: Topology, gradient_bytes: int, background: int, background_bytes: int,
              seed: int) -> list[Flow]:
    """Every host but h0 sends one gradient flow to the parameter server h0 at t = 0 (jitter up to
    10 µs), plus ``background`` TCP flows between random other pairs."""
    rng = random.Random(seed)
    size = gradient_bytes - gradient_bytes % 4          # whole fp32 elements
    flows = [Flow(h, topo.hosts[0], size, rng.uniform(0, 10e-6), "gradient", 7 - i % 8)
             for i, h in enumerate(topo.hosts[1:])]
    others = topo.hosts[1:]
    for _ in range(background):
        src, dst = rng.sample(others, 2)
        flows.append(Flow(src, dst, background_bytes, rng.uniform(0, 100e-6), "background"))
    return flows


@dataclass(frozen=True)
class PfabricSetting:
    """The pFabric paper's configuration for a fabric: buffer 2 x BDP per port, initial window one
    BDP, fixed RTO of about 3 RTTs (SIGCOMM 2013, section 5: 36 kB = 2 x BDP at 10 Gbit/s, RTO 45 µs)."""
    rtt_s: float
    window_packets: int
    buffer_packets: int
    rto_s: float


def pfabric_setting(topo: Topology) -> PfabricSetting:
    """Base RTT over the fabric's longest host-to-host path (hops from h0, each the slowest link's
    full-size packet time plus the longest delay, both ways) and the host link's BDP from it."""
    hops = _longest_host_path(topo)
    slowest = min(lk.rate_bps for lk in topo.links)
    delay = max(lk.delay_ns for lk in topo.links) * 1e-9
    rtt = 2 * hops * (delay + 1500 * 8 / slowest)
    host_bps = max(lk.rate_bps for lk in topo.links if lk.a in topo.hosts or lk.b in topo.hosts)
    bdp = max(2, round(rtt * host_bps / (1500 * 8)))
    return PfabricSetting(rtt, bdp, 2 * bdp, 3 * rtt)


def _longest_host_path(topo: Topology) -> int:
    nbr = topo.neighbours()
    dist = {topo.hosts[0]: 0}
    frontier = [topo.hosts[0]]
    while frontier:
        nxt = []
        for node in frontier:
            for n in nbr[node]:
                if n not in dist:
                    dist[n] = dist[node] + 1
                    nxt.append(n)
        frontier = nxt
    return max(dist[h] for h in topo.hosts)


def fabric_timer_floor_s(topo: Topology, policy: Policy) -> float:
    """The floor of every retransmission timer on this fabric, the same for TCP's ``MinRto`` (every
    variant, DCTCP included) and DLCP's RTO, write-off and grant wait (simulation.job): the fabric's
    longest round trip without a loss (base RTT over the longest host-to-host path plus a full
    switch buffer, queues x queue_depth packets, drained at every switch port of that path, for the
    data and again for its ACK), capped at TCP_MIN_RTO_US. Below it a timer could fire for a
    packet that is only queued; above it every timeout waits longer than any packet can take. On
    paper-144 (100/400 Gbit/s) it is 193 µs (22 base RTTs of 8.6 µs); on the 10 Gbit/s presets the lossless
    RTT (3.7 ms) is above the cap, which keeps 1 ms there."""
    buffer_bits = policy.queues * policy.queue_depth * 1500 * 8
    path = _longest_host_path_links(topo)
    base = fabric_base_rtt_s(topo)
    drain = sum(buffer_bits / lk.rate_bps for lk in path[1:])         # every egress port but the sender's NIC
    return min(TCP_MIN_RTO_US * 1e-6, base + 2 * drain)


def fabric_base_rtt_s(topo: Topology) -> float:
    """The round trip of a full-size packet and its answer over the longest host-to-host path with
    empty queues (propagation and serialization at every hop): 8.6 µs on paper-144. The DLCP
    transport sizes its granted window by it (dlcp_transport.h WindowTotal)."""
    return 2 * sum(lk.delay_ns * 1e-9 + 1500 * 8 / lk.rate_bps for lk in _longest_host_path_links(topo))


def _longest_host_path_links(topo: Topology) -> list[Link]:
    """The links of a shortest path from h0 to the host farthest from it, in order."""
    nbr = topo.neighbours()
    link_of = {}
    for lk in topo.links:
        link_of[(lk.a, lk.b)] = link_of[(lk.b, lk.a)] = lk
    parent = {topo.hosts[0]: None}
    order = [topo.hosts[0]]
    for node in order:                      # BFS; the list grows while it is walked
        for n in nbr[node]:
            if n not in parent:
                parent[n] = node
                order.append(n)
    far = max(topo.hosts, key=lambda h: (_depth(parent, h), topo.hosts.index(h)))
    links = []
    while parent[far] is not None:
        links.append(link_of[(parent[far], far)])
        far = parent[far]
    return links[::-1]


def _depth(parent: dict, node: str) -> int:
    d = 0
    while parent[node] is not None:
        node, d = parent[node], d + 1
    return d


def _rate(bps: int) -> str:
    return f"{bps}bps"


Port = Callable[[object, Link], None]


def build_links(ns, topo: Topology, nodes: dict, switch_port: Port,
                host_priority: bool = False) -> tuple[dict[tuple[str, str], tuple[int, int]], dict[str, int]]:
    """Install the internet stack on ``nodes`` and every link of ``topo`` (point-to-point, a /24
    per link, a 1-packet device queue so the queue discs hold the buffer); host ports get a
    HOST_QUEUE_PACKETS FIFO (``host_priority``: two such bands, DLCP's first, sim_net.h
    InstallHostPrio), each switch port ``switch_port(device, link)``. Returns the ends
    ((node, neighbour) -> (interface, neighbour's address)) and every host's address. The one
    place links are built: dlcp-sim's fabric and the benchmark's stock-ns-3 baseline share it."""
    stack = ns.InternetStackHelper()
    for node in nodes.values():
        stack.Install(node)
    p2p = ns.PointToPointHelper()
    addr = ns.Ipv4AddressHelper()
    tch = ns.TrafficControlHelper()
    ends: dict[tuple[str, str], tuple[int, int]] = {}
    host_ip: dict[str, int] = {}
    switches = set(topo.switches)
    for i, link in enumerate(topo.links):
        p2p.SetDeviceAttribute("DataRate", ns.StringValue(_rate(link.rate_bps)))
        p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds(link.delay_ns)))
        devs = p2p.Install(nodes[link.a], nodes[link.b])
        addr.SetBase(ns.Ipv4Address(f"10.{1 + i // 256}.{i % 256}.0"), ns.Ipv4Mask("255.255.255.0"))
        ifaces = addr.Assign(devs)
        for side, (name, other) in enumerate(((link.a, link.b), (link.b, link.a))):
            dev = devs.Get(side)
            ipv4 = nodes[name].GetObject[ns.Ipv4]()
            ends[(name, other)] = (ipv4.GetInterfaceForDevice(dev), ifaces.GetAddress(1 - side).Get())
            tch.Uninstall(dev)
            if name in switches:
                if topo.switch_rate_share != 1.0:
                    dev.SetAttribute("DataRate", ns.StringValue(_rate(round(link.rate_bps * topo.switch_rate_share))))
                switch_port(dev, link)
            else:
                host_ip[name] = ifaces.GetAddress(side).Get()
                if host_priority:               # sim_net.h TransportConfig::hostPriority
                    switch_model.ns3()[1].InstallHostPrio(dev, HOST_QUEUE_PACKETS)
                    continue
                fifo = ns.TrafficControlHelper()
                fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                                      ns.QueueSizeValue(ns.QueueSize(f"{HOST_QUEUE_PACKETS}p")))
                fifo.Install(dev)
    return ends, host_ip


def use_scheduler(ns, name: str | None = None) -> None:
    """Make ``name`` (default SCHEDULER) the event scheduler of the simulator ns-3 creates next (call after
    Simulator::Destroy, before anything is scheduled). Every ns-3 scheduler orders events by
    (time, insertion number), so the choice changes speed, never the order of events."""
    ns.GlobalValue.Bind("SchedulerType", ns.TypeIdValue(ns.TypeId.LookupByName(name or SCHEDULER)))


@dataclass
class Network:
    """A built fabric: ns-3 nodes by name, host addresses, switch queue discs and routers."""
    ns: object
    sim: object
    nodes: dict
    host_ip: dict[str, int]
    qdiscs: list
    routers: dict


def build_network(topo: Topology, policy: Policy, mode: str, scheduler: str | None = None) -> Network:
    """A fresh simulator with ``topo`` built for ``mode``: TCP defaults, links, switch queue discs,
    host FIFOs, host default routes and DlcpRouting in every switch (events in ``scheduler``,
    default SCHEDULER)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode '{mode}' (known: {', '.join(MODES)})")
    ns, sim = switch_model.ns3()
    ns.Simulator.Destroy()                      # a fresh simulator for every run in this process
    use_scheduler(ns, scheduler)
    pf = pfabric_setting(topo)
    defaults = sim.TransportDefaults()          # what every SimNet::Reset of this run starts from
    defaults.pfabric = mode == "pfabric"
    defaults.pfWindow, defaults.pfRto = pf.window_packets, pf.rto_s
    sim.Net().Reset()                           # fresh transport state and counters
    ns.Config.Reset()
    ns.Config.SetDefault("ns3::DropTailQueue<Packet>::MaxSize", ns.QueueSizeValue(ns.QueueSize("1p")))
    # dctcp: TcpDctcp with Linux's 2-segment floor on its window reduction (tcp_path.h TcpDctcpFloor;
    # ns-3's own has none, and a window below one segment stalled a sender for good: issue 13)
    tcp_type = sim.TcpDctcpFloor.GetTypeId() if mode == "dctcp" else ns.TypeId.LookupByName(f"ns3::{TCP_TYPE[mode]}")
    ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(tcp_type))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(PAYLOAD))
    ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(TCP_SNDBUF_BYTES))
    ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(TCP_RCVBUF_BYTES))
    ns.Config.SetDefault("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    slow = min(link.rate_bps for link in topo.links) < 1_000_000_000
    min_rto_ns = LINUX_MIN_RTO_US * 1000 if slow else round(fabric_timer_floor_s(topo, policy) * 1e9)
    ns.Config.SetDefault("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.NanoSeconds(min_rto_ns)))
    # delayed ACKs as Linux times them against its RTO floor (TCP_DELACK_MIN 40 ms = TCP_RTO_MIN 200 ms / 5):
    # ns-3's default (200 ms) is >= MinRto, so a lone segment's ACK came after its RTO, every time, and
    # cwnd never left one segment (the TCP stall of issue 13; docs/simulation.md "TCP baselines")
    ns.Config.SetDefault("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.NanoSeconds(min_rto_ns // DELACK_PER_MIN_RTO)))
    ns.Config.SetDefault("ns3::TcpSocketBase::ClockGranularity", ns.TimeValue(ns.MicroSeconds(10)))
    # TIME_WAIT (2 x MaxSegLifetime; ns-3's default MSL is 120 s, Linux's TIME_WAIT 60 s) = TIME_WAIT_RTOS
    # RTO floors: no run reuses a port (ns-3 hands out a host's 16,384 ephemeral ports in turn), so TIME_WAIT
    # decides only when a closed connection's endpoint leaves its node's list, which ns-3 walks for every
    # packet received (docs/simulation.md "Where the load-0.6 time goes")
    ns.Config.SetDefault("ns3::TcpSocketBase::MaxSegLifetime", ns.DoubleValue(TIME_WAIT_RTOS * min_rto_ns * 1e-9 / 2))
    if mode == "dctcp":
        ns.Config.SetDefault("ns3::TcpSocketBase::UseEcn", ns.StringValue("On"))

    nodes = {name: ns.CreateObject[ns.Node]() for name in topo.hosts + topo.switches}
    qdiscs: list = []
    total_buffer = policy.queues * policy.queue_depth

    def switch_port(dev, link: Link) -> None:
        buffer = pf.buffer_packets if mode == "pfabric" else total_buffer
        qdiscs.append(_install_switch_qdisc(ns, sim, dev, policy, mode, link.rate_bps, buffer))

    # DLCP ahead of the host's own TCP at the host ports (TransportConfig::hostPriority); the TCP and
    # pFabric baselines keep one FIFO per host port (none of their packets is DLCP's)
    host_priority = mode == "dlcp" and bool(defaults.hostPriority)
    ends, host_ip = build_links(ns, topo, nodes, switch_port, host_priority)

    for host, skip in topo.tcp_port_skip.items():        # the next connection's port: 49153 + skip
        if host not in topo.hosts or skip < 0:
            raise ValueError(f"tcp_port_skip: '{host}': {skip} (a host of {topo.name}, a count >= 0)")
        tcp = nodes[host].GetObject[ns.TcpL4Protocol]()
        for _ in range(skip):
            tcp.DeAllocate(tcp.Allocate())

    static = ns.Ipv4StaticRoutingHelper()
    for host in topo.hosts:
        sw = topo.host_switch(host)
        iface, gw = ends[(host, sw)]
        static.GetStaticRouting(nodes[host].GetObject[ns.Ipv4]()).SetDefaultRoute(ns.Ipv4Address(gw), iface)
    routers = {}
    cpol = switch_model.cpp_policy(policy)
    for sw, plan in next_hops(topo).items():
        r = sim.AttachRouting(nodes[sw], cpol, policy.spray)
        routers[sw] = r
        for host, neighbours in plan.items():
            for n in neighbours:
                iface, gw = ends[(sw, n)]
                r.AddMember(host_ip[host], iface, gw)
    return Network(ns, sim, nodes, host_ip, qdiscs, routers)


def run(topo: Topology, policy: Policy, mode: str, flows: list[Flow], sim_time_s: float) -> RunResult:
    """Build the network in ns-3, run ``sim_time_s`` simulated seconds, collect results (the
    open-loop DLCP sender: the fidelity scenario of the switch model; simulation.job runs the
    bounded-loss transport)."""
    if mode == "pfabric":
        raise ValueError("mode 'pfabric' runs the job workloads (ps-train, ps-incast), not the open-loop scenario")
    net = build_network(topo, policy, mode)
    ns, sim, nodes, host_ip, qdiscs, routers = net.ns, net.sim, net.nodes, net.host_ip, net.qdiscs, net.routers
    sinks = []
    senders = []
    for i, f in enumerate(flows):
        dst_node, src_node = nodes[f.dst], nodes[f.src]
        if f.kind == "gradient" and mode == "dlcp":
            snd = sim.NewSender()
            rate = next(lk.rate_bps for lk in topo.links if lk.a == f.src)
            snd.Configure(host_ip[f.dst], DLCP_PORT, f.bytes, PAYLOAD, rate, f.layer_class, 12, 1, i, i + 1)
            src_node.AddApplication(snd)
            snd.SetStartTime(ns.Seconds(f.start_s))
            senders.append(snd)
            sinks.append(None)
            continue
        port = 10000 + i
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                                   ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
        sapps = sink.Install(dst_node)
        sapps.Start(ns.Seconds(0))
        sinks.append(sapps.Get(0))
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory",
                                 ns.InetSocketAddress(ns.Ipv4Address(host_ip[f.dst]), port).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(f.bytes))
        bulk.SetAttribute("SendSize", ns.UintegerValue(PAYLOAD))
        bapps = bulk.Install(src_node)
        bapps.Start(ns.Seconds(f.start_s))
    if mode == "dlcp":
        udp_sink = ns.PacketSinkHelper("ns3::UdpSocketFactory",
                                       ns.InetSocketAddress(ns.Ipv4Address.GetAny(), DLCP_PORT).ConvertTo())
        for host in {f.dst for f in flows if f.kind == "gradient"}:
            udp_sink.Install(nodes[host]).Start(ns.Seconds(0))

    fmh = ns.FlowMonitorHelper()
    hosts = ns.NodeContainer()
    for h in topo.hosts:
        hosts.Add(nodes[h])
    monitor = fmh.Install(hosts)

    ns.Simulator.Stop(ns.Seconds(sim_time_s))
    t0 = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - t0
    events = int(ns.Simulator.GetEventCount())

    results = _flow_results(ns, fmh, monitor, flows, mode, host_ip, sinks)
    counters = switch_counters(mode, qdiscs, routers)
    ns.Simulator.Destroy()
    return RunResult(mode, results, sim_time_s, wall, events, counters)


def run_fresh(topo: Topology, policy: Policy, mode: str, flows: list[Flow], sim_time_s: float) -> RunResult:
    """``run`` in a fresh process: ns-3 keeps state across runs in one process (its random streams
    are numbered process-wide), so a mode's result would depend on the modes run before it."""
    return fresh.run_fresh(run, topo, policy, mode, flows, sim_time_s)


def _install_switch_qdisc(ns, sim, dev, policy: Policy, mode: str, rate_bps: int, total_buffer: int):
    tch = ns.TrafficControlHelper()
    if mode == "dlcp":
        tch.SetRootQueueDisc("dlcpsim::DlcpQueueDisc")
    elif mode == "pfabric":
        tch.SetRootQueueDisc("dlcpsim::PfabricQueueDisc")
    elif mode == "dctcp":
        # the DCTCP paper's K (65 packets at 10 Gbit/s, at least 20), scaled with the rate but never past
        # half the buffer: at 100 Gbit/s 650 packets exceed the 512-packet buffer and RED never marks
        k = min(max(20, round(65 * rate_bps / 10e9)), total_buffer // 2)
        tch.SetRootQueueDisc("ns3::RedQueueDisc", "MinTh", ns.DoubleValue(k), "MaxTh", ns.DoubleValue(k),
                             "QW", ns.DoubleValue(1.0), "UseEcn", ns.BooleanValue(True),
                             "UseHardDrop", ns.BooleanValue(False), "MeanPktSize", ns.UintegerValue(1500),
                             "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{total_buffer}p")))
    else:
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{total_buffer}p")))
    tch.Install(dev)
    tc = dev.GetNode().GetObject[ns.TrafficControlLayer]()
    qd = tc.GetRootQueueDiscOnDevice(dev)
    if mode == "dlcp":
        qd = ns.DynamicCast[sim.DlcpQueueDisc](qd)
        qd.SetPolicy(switch_model.cpp_policy(policy, thresholds_for_rate(policy, rate_bps)))
    elif mode == "pfabric":
        ns.DynamicCast[sim.PfabricQueueDisc](qd).SetCapacity(total_buffer)
    return qd


def _flow_results(ns, fmh, monitor, flows: list[Flow], mode: str, host_ip: dict[str, int], sinks: list
                  ) -> list[FlowResult]:
    monitor.CheckForLostPackets()
    classifier = ns.DynamicCast[ns.Ipv4FlowClassifier](fmh.GetClassifier())
    by_key = {}
    for item in monitor.GetFlowStats():
        t = classifier.FindFlow(item.first)
        by_key[(t.sourceAddress.Get(), t.destinationAddress.Get(), int(t.protocol), int(t.destinationPort))] = item.second
    out = []
    for i, f in enumerate(flows):
        dlcp = f.kind == "gradient" and mode == "dlcp"
        key = (host_ip[f.src], host_ip[f.dst], 17 if dlcp else 6, DLCP_PORT if dlcp else 10000 + i)
        st = by_key.get(key)
        tx = int(st.txPackets) if st is not None else 0
        rx = int(st.rxPackets) if st is not None else 0
        if dlcp:       # open loop: complete only if every packet arrived; FCT = last arrival anyway
            delivered = int(st.rxBytes) - rx * 52 if st is not None else 0     # IP+UDP+DLCP headers
            completed = tx > 0 and rx == tx
            last = rx > 0
        else:
            delivered = int(sinks[i].GetTotalRx())
            completed = last = delivered >= f.bytes
        fct = st.timeLastRxPacket.GetSeconds() - f.start_s if last and st is not None else None
        out.append(FlowResult(mode, i, f.kind, f.src, f.dst, f.bytes, f.start_s, fct, delivered, completed, tx, rx))
    return out


def switch_counters(mode: str, qdiscs: list, routers: dict) -> dict:
    """Spray/pin decisions, and selective drops, ECN marks and tail drops per (queue, class) (DLCP) or
    total drops and marks (the baselines' queue discs)."""
    c: dict = {"sprayed_packets": sum(int(r.Sprayed()) for r in routers.values()),
               "pinned_packets": sum(int(r.Pinned()) for r in routers.values())}
    if mode == "dlcp":
        sel: dict[str, int] = {}
        marks: dict[str, int] = {}
        tail: dict[str, int] = {}
        deepest: dict[str, int] = {}           # per queue, the deepest any port's band was at an enqueue
        for qd in qdiscs:
            for q in range(8):
                if hasattr(qd, "MaxDepth") and int(qd.MaxDepth(q)) > deepest.get(f"q{q}", 0):   # models before it lack it
                    deepest[f"q{q}"] = int(qd.MaxDepth(q))
                if int(qd.TailDrops(q)):
                    tail[f"q{q}"] = tail.get(f"q{q}", 0) + int(qd.TailDrops(q))
                for m in range(16):
                    if int(qd.SelectiveDrops(q, m)):
                        sel[f"q{q}/m{m}"] = sel.get(f"q{q}/m{m}", 0) + int(qd.SelectiveDrops(q, m))
                    if int(qd.EcnMarks(q, m)):
                        marks[f"q{q}/m{m}"] = marks.get(f"q{q}/m{m}", 0) + int(qd.EcnMarks(q, m))
        c.update(selective_drops=sel, ecn_marks=marks, tail_drops=tail, max_depth=deepest)
        net = switch_model.ns3()[1].Net()       # the DLCP transport's admission (dlcp_transport.h)
        c["transport"] = {"grants": bool(net.cfg.grants), "grants_sent": int(net.grantsSent),
                          "acks_sent": int(net.acksSent), "grants_missed": int(net.grantsMissed),
                          "window_stalls": int(net.windowStalls), "write_offs": int(net.writeOffs),
                          "active_senders_max": int(net.activeSendersMax), "holds_sent": int(net.holdsSent),
                          "hold_reopens": int(net.holdReopens), "hold_opens": int(net.holdOpens),
                          "granted_set_max": int(net.grantedSetMax), "finishing_max": int(net.finishingMax),
                          "held_s": float(net.heldS), "over_bound_s": float(net.overBoundS),
                          "overcommit": bool(net.cfg.overcommit),
                          "overcommit_senders": int(net.cfg.overcommitSenders)}
        cin, cout = list(net.ctrlBytesIn), list(net.ctrlBytesOut)
        if cin:                                  # the host whose link carries the most DLCP control bytes
            busiest = max(range(len(cin)), key=lambda i: cin[i] + cout[i])
            c["transport"] |= {"control_bytes_busiest_host": {"host_index": busiest, "in": int(cin[busiest]),
                                                              "out": int(cout[busiest])}}
    else:
        c["drops"] = sum(int(qd.GetStats().nTotalDroppedPackets) for qd in qdiscs)
        c["ecn_marks"] = sum(int(qd.GetStats().nTotalMarkedPackets) for qd in qdiscs)
    if mode == "pfabric":
        ns, sim = switch_model.ns3()
        pqs = [ns.DynamicCast[sim.PfabricQueueDisc](qd) for qd in qdiscs]
        net = sim.Net()
        c["pfabric"] = {"buffer_packets": int(pqs[0].Capacity()) if pqs else 0,
                        "evicted": sum(int(q.Evicted()) for q in pqs), "rejected": sum(int(q.Rejected()) for q in pqs),
                        "window_packets": int(net.cfg.pfWindow), "rto_us": round(float(net.cfg.pfRto) * 1e6, 2),
                        "data_packets": int(net.pfData), "retransmitted": int(net.pfRetx),
                        "timeouts": int(net.pfTimeouts)}
    return c


def flow_dict(r: FlowResult) -> dict:
    return asdict(r)
