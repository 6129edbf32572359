"""Bring a DLCP topology up in Mininet and tear it down completely, even on failure or Ctrl-C.

``EmulatedNetwork`` turns a ``Topology`` into Mininet hosts (network namespaces) and
``P4RuntimeSwitch`` nodes, configures host addresses, gateways and static ARP, and on exit stops
every switch process and deletes every interface it made. ``leftovers()`` is the check the tests
and the experiment runner use to prove nothing was left behind.

A run killed outright (SIGKILL, a machine's session ending) cannot tear down: its host namespaces
die with their shells, taking the host links along, but switch-to-switch veths live in the root
namespace and stay (``leaf1-eth3``), and the next build fails with "RTNETLINK answers: File
exists". ``start()`` holds the machine-wide Mininet lock from build to ``stop()``, so whatever
``leftovers()`` finds then belongs to a run that is gone: it is removed, each item logged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from pathlib import Path
from types import TracebackType

from mininet.link import Link
from mininet.net import Mininet
from mininet.node import Host
from mininet.topo import Topo

from mininet_topos.mininet_lock import mininet_lock
from mininet_topos.p4switch import OFFLOADS_OFF, P4RuntimeSwitch
from mininet_topos.topologies import Topology

log = logging.getLogger(__name__)


class _MininetTopo(Topo):
    """Mininet's view of a ``Topology`` (explicit port numbers on switch ends)."""

    def build(self, spec: Topology, switch_params: dict[str, dict]) -> None:  # type: ignore[override]
        for name, sw in spec.switches.items():
            self.addSwitch(name, cls=P4RuntimeSwitch, device_id=sw.device_id, **switch_params.get(name, {}))
        for name, host in spec.hosts.items():
            # /32: every destination, same subnet included, goes through the switch (it routes, it
            # does not bridge or answer ARP), so hosts resolve only the gateway, statically.
            self.addHost(name, ip=f"{host.ip}/32", mac=host.mac)
        for link in spec.links:
            if link.a in spec.hosts:
                self.addLink(link.a, link.b, port2=link.b_port, intfName1=f"{link.a}-eth0")
            else:
                self.addLink(link.a, link.b, port1=link.a_port, port2=link.b_port)


class EmulatedNetwork:
    """A running Mininet emulation of ``topo`` with one P4 switch process per switch."""

    def __init__(self, topo: Topology, run_dir: str | Path, target: str = "p4sim", pcap: bool = False,
                 queue_depth: int | None = None) -> None:
        self.topo = topo
        self.run_dir = Path(run_dir)
        self.target = target
        self.pcap = pcap
        self.queue_depth = queue_depth
        self.net: Mininet | None = None
        self._lock = contextlib.ExitStack()

    def switch_params(self) -> dict[str, dict]:
        params: dict[str, dict] = {}
        for name in self.topo.switches:
            rates = {}
            for link in self.topo.links:
                if link.a == name:
                    rates[link.a_port] = link.rate_bps
                if link.b == name:
                    rates[link.b_port] = link.rate_bps
            params[name] = dict(target=self.target, run_dir=str(self.run_dir), pcap=self.pcap,
                                port_rates=rates, queue_depth=self.queue_depth)
        return params

    def start(self) -> EmulatedNetwork:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        # Re-entrant: a no-op where the caller (dlcp-exp, a test module) already holds it.
        self._lock.enter_context(mininet_lock(log=log.warning))
        try:
            for item in clear_leftovers(self.topo):
                log.warning("removed what a killed run left behind: %s", item)
            topo = _MininetTopo(spec=self.topo, switch_params=self.switch_params())
            self.net = Mininet(topo=topo, host=Host, link=Link, controller=None, build=False,
                               autoSetMacs=False, waitConnected=False)
            self.net.build()
            for name, spec in self.topo.hosts.items():
                self._configure_host(self.net[name], spec.gateway,
                                     self.topo.switches[spec.switch].mac)
            self.net.start()
            for name in self.topo.switches:
                self.net[name].wait_ready()
        except BaseException:
            self.stop()
            self._lock.close()
            raise
        return self

    @staticmethod
    def _configure_host(host: Host, gateway: str, gateway_mac: str) -> None:
        intf = host.defaultIntf().name
        host.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
        host.cmd(f"ethtool -K {intf} {' '.join(OFFLOADS_OFF)} >/dev/null 2>&1")
        host.cmd(f"ip route replace default via {gateway} dev {intf} onlink")
        host.cmd(f"ip neigh replace {gateway} lladdr {gateway_mac} dev {intf} nud permanent")

    def switch(self, name: str) -> P4RuntimeSwitch:
        assert self.net is not None, "network not started"
        return self.net[name]

    def host(self, name: str) -> Host:
        assert self.net is not None, "network not started"
        return self.net[name]

    def grpc_addresses(self) -> dict[str, str]:
        return {name: f"127.0.0.1:{self.switch(name).grpc_port}" for name in self.topo.switches}

    def dead_switches(self) -> list[str]:
        return [name for name in self.topo.switches if not self.switch(name).alive()]

    def stop(self) -> None:
        net, self.net = self.net, None
        if net is None:
            return
        try:
            net.stop()
        finally:
            try:
                # Whatever Mininet could not stop (a half-built network) is removed here.
                for name in self.topo.switches:
                    node = net.nameToNode.get(name)
                    if isinstance(node, P4RuntimeSwitch) and node.process is not None:
                        node.stop()
                for intf in _our_interfaces(self.topo):
                    subprocess.run(["ip", "link", "del", intf], capture_output=True, check=False)
            finally:
                self._lock.close()

    def __enter__(self) -> EmulatedNetwork:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _our_interfaces(topo: Topology) -> list[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=False).stdout
    prefixes = tuple(f"{name}-eth" for name in topo.switches)
    names = []
    for line in out.splitlines():
        parts = line.split(": ")
        if len(parts) > 1:
            name = parts[1].split("@")[0]
            if name.startswith(prefixes):
                names.append(name)
    return names


def _leftover_items(topo: Topology) -> list[tuple[str, str | int, str]]:
    """(kind, interface name or pid, description) of what an emulation of ``topo`` left behind."""
    found: list[tuple[str, str | int, str]] = [
        ("interface", name, f"interface {name}") for name in _our_interfaces(topo)]
    ps = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=False).stdout
    hosts = {f"mininet:{name}" for name in topo.hosts}
    for line in ps.splitlines()[1:]:
        pid, _, args = line.strip().partition(" ")
        if any(args.endswith(h) for h in hosts):
            found.append(("process", int(pid), f"host shell {pid}: {args}"))
        if ("p4sim.cli switch" in args or "simple_switch_grpc" in args) and any(
                f"@{s}-eth" in args for s in topo.switches):
            found.append(("process", int(pid), f"switch process {pid}: {args[:80]}"))
    return found


def leftovers(topo: Topology) -> list[str]:
    """What an emulation of ``topo`` left behind: interfaces, host shells, switch processes."""
    return [text for _, _, text in _leftover_items(topo)]


def clear_leftovers(topo: Topology) -> list[str]:
    """Remove what ``leftovers(topo)`` finds and say what it was. Call only under the Mininet lock:
    then no live run owns any of it."""
    items = _leftover_items(topo)
    for kind, what, _ in items:
        if kind == "process":
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(what), signal.SIGKILL)
    for kind, what, _ in items:
        if kind == "interface":
            subprocess.run(["ip", "link", "del", str(what)], capture_output=True, check=False)
    return [text for _, _, text in items]
