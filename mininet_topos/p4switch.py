"""A Mininet switch node that runs a P4Runtime software switch: ``p4sim switch`` or BMv2.

Both targets get the same flags (BMv2's ``simple_switch_grpc`` spelling, which ``p4sim switch``
mirrors), start without a pipeline (``--no-p4``) and are programmed by our controller over
P4Runtime. The node runs in the root namespace and opens its Mininet interfaces with AF_PACKET.
Readiness is the gRPC port accepting connections; every switch writes its log (and optional pcaps)
into the run directory.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from mininet.node import Switch

from mininet_topos.ports import free_ports
from p4sim.switch.ready import ready_ports

log = logging.getLogger(__name__)

TARGETS = ("p4sim", "bmv2")
READY_TIMEOUT_S = 30.0
# A user-space switch must see real frames: no partial checksums, no GSO/TSO super-frames.
OFFLOADS_OFF = ("tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off")
# Ingress order of every p4sim switch of every mode alike (``p4sim switch --ingress-priority``):
# "fifo" runs ingress in ring order (BMv2's behaviour), "dscp" highest DSCP class first (see
# docs/p4sim.md, "Ingress order"). BMv2 has no such option and ignores it.
INGRESS_PRIORITY = "fifo"


class SwitchStartError(RuntimeError):
    """The switch process died or never opened its gRPC port."""


def port_is_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def target_available(target: str) -> tuple[bool, str]:
    """Whether ``target`` can run here, and if not, why."""
    if target == "p4sim":
        return True, ""
    if target == "bmv2":
        if shutil.which("simple_switch_grpc") is None:
            return False, "simple_switch_grpc is not on PATH (BMv2 is not installable from our registries)"
        return True, ""
    return False, f"unknown target {target!r}; choose one of {', '.join(TARGETS)}"


class P4RuntimeSwitch(Switch):
    """Mininet switch backed by a P4Runtime software switch process."""

    def __init__(self, name: str, device_id: int = 1, grpc_port: int | None = None,
                 target: str = "p4sim", run_dir: str = "/tmp", pcap: bool = False,
                 priority_queues: int = 8, port_rates: dict[int, int] | None = None,
                 queue_depth: int | None = None, cpu_port: int | None = None,
                 ctl_port: int | None = None, ingress_priority: str | None = None, **params) -> None:
        super().__init__(name, **params)
        ok, why = target_available(target)
        if not ok:
            raise SwitchStartError(f"{name}: {why}")
        self.device_id = device_id
        self.target = target
        # p4sim binds port 0 unless told a port and prints the ports it got (``wait_ready`` reads them):
        # a port probed free here could be taken by another process before the switch binds it.
        # BMv2 cannot report its ports: it gets ports free now from below the ephemeral range, which
        # only an explicit bind takes (mininet_topos/ports.py).
        self.asked_ports = (grpc_port, ctl_port)
        if target == "p4sim":
            self.grpc_port, self.ctl_port = grpc_port or 0, ctl_port or 0
        else:
            probed = iter(free_ports(2))
            self.grpc_port, self.ctl_port = grpc_port or next(probed), ctl_port or next(probed)
        self.run_dir = Path(run_dir)
        self.pcap = pcap
        self.priority_queues = priority_queues
        self.port_rates = port_rates or {}
        self.queue_depth = queue_depth
        self.cpu_port = cpu_port
        self.ingress_priority = ingress_priority or INGRESS_PRIORITY
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = self.run_dir / f"{name}.log"

    # Mininet calls this with its controller list (unused: P4Runtime programs us).
    def start(self, controllers) -> None:  # noqa: ARG002 - Mininet's signature
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for intf in self.intfList():
            if intf.name != "lo":
                # A user-space switch sees partial checksums from veth offload: turn offload off.
                subprocess.run(["ethtool", "-K", intf.name, *OFFLOADS_OFF],
                               capture_output=True, check=False)
        if self.target == "p4sim":      # a restart binds fresh ports unless ports were asked for
            self.grpc_port, self.ctl_port = (port or 0 for port in self.asked_ports)
        cmd = self.command()
        log.info("%s: %s", self.name, " ".join(cmd))
        with open(self.log_path, "ab") as logfile:
            self.log_offset = logfile.tell()
            logfile.write(("$ " + " ".join(cmd) + "\n").encode())
            logfile.flush()
            self.process = subprocess.Popen(cmd, stdout=logfile, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        # Not waiting here: the network starts every switch, then waits for all (``wait_ready``).

    def interface_args(self) -> list[str]:
        args: list[str] = []
        for port, intf in sorted(self.intfs.items()):
            if intf.name != "lo":
                args += ["-i", f"{port}@{intf.name}"]
        return args

    def command(self) -> list[str]:
        """The switch command line; BMv2 takes its gRPC options after ``--``."""
        common = ["--device-id", str(self.device_id), *self.interface_args()]
        if self.pcap:
            pcap_dir = self.run_dir / f"{self.name}-pcap"
            pcap_dir.mkdir(parents=True, exist_ok=True)
            common += ["--pcap", str(pcap_dir)]
        if self.target == "bmv2":
            cmd = ["simple_switch_grpc", *common, "--log-file", str(self.run_dir / f"{self.name}-bmv2"),
                   "--thrift-port", str(self.ctl_port), "--no-p4", "--",
                   "--grpc-server-addr", f"127.0.0.1:{self.grpc_port}",
                   "--priority-queues", str(self.priority_queues)]
            if self.cpu_port is not None:
                cmd += ["--cpu-port", str(self.cpu_port)]
            return cmd
        cmd = [sys.executable, "-m", "p4sim.cli", "switch", *common, "--no-p4",
               "--grpc-server-addr", f"127.0.0.1:{self.grpc_port}",
               "--ctl-addr", f"127.0.0.1:{self.ctl_port}",
               "--priority-queues", str(self.priority_queues), "--log-console", "--log-level", "info"]
        cmd += ["--ingress-priority", self.ingress_priority]
        if self.queue_depth is not None:
            cmd += ["--queue-depth", str(self.queue_depth)]
        for port, bps in sorted(self.port_rates.items()):
            cmd += ["--port-rate", f"{port}:{bps}"]
        if self.cpu_port is not None:
            cmd += ["--cpu-port", str(self.cpu_port)]
        return cmd

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Return once the switch serves P4Runtime: p4sim's ready line (with the ports it bound) is in
        its log, or BMv2's gRPC port accepts connections."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise SwitchStartError(f"{self.name}: switch process exited ({code}) before it served "
                                       f"P4Runtime; see {self.log_path}")
            if self.target == "p4sim":
                ports = self._logged_ready_ports()
                if ports is not None:
                    self.grpc_port, self.ctl_port = ports
                    return
            elif port_is_open(self.grpc_port):
                return
            time.sleep(0.05)
        raise SwitchStartError(f"{self.name}: switch not serving P4Runtime after {timeout:.0f} s; "
                               f"see {self.log_path}")

    def _logged_ready_ports(self) -> tuple[int, int] | None:
        """(gRPC, ctl) ports from the ready line this start wrote to the log, None before it is there."""
        with open(self.log_path, "rb") as logfile:
            logfile.seek(self.log_offset)
            for raw in logfile:
                ports = ready_ports(raw.decode(errors="replace"))
                if ports is not None:
                    return ports
        return None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 - Mininet's signature
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=5)
        super().stop(deleteIntfs)
