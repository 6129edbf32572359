"""Queue depth and rate through the target's runtime interface (not P4Runtime, which has no queues).

p4sim: its ctl channel, spoken by the controller's own client (``controller.p4sim_ctl``, wire
protocol in docs/p4sim.md) at ``runtime.addr``, default ``127.0.0.1:<thrift_port>``. BMv2:
``simple_switch_CLI --thrift-port N`` fed the same commands on stdin (``set_queue_depth DEPTH PORT
[PRIO]``, ``set_queue_rate PPS PORT [PRIO]``). Tofino has no such CLI here. Every request is checked
against the switch's real limits first (its ports and priority queues as p4sim reports them, else
the ports the network YAML attaches and the policy's queue count), so nothing is half applied.
This is the one module to adapt if those interfaces change.
"""

from __future__ import annotations

import shlex
import subprocess

from controller.errors import SwitchError, ValueError_
from controller.netconfig import MAX_QUEUE_DEPTH, PortConf, SwitchConf
from controller.p4sim_ctl import P4simCtl


def _commands(port: int | None, queue: int | None, depth: int | None, rate_pps: int | None) -> list[tuple]:
    cmds = []
    if depth is not None:
        cmds.append(("set_queue_depth", depth, port, queue))
    if rate_pps is not None:
        cmds.append(("set_queue_rate", rate_pps, port, queue))
    return cmds


def check_request(switch: str, port: int | None, queue: int | None, depth: int | None,
                  ports: list[int], queues: int, port_source: str, queue_source: str) -> None:
    """Refuse what the switch would refuse or silently misapply (a bad value: exit 1, not 3);
    the sources say where the limits came from (the switch's own report, the network YAML's)."""
    where = f"switch {switch}: queues set"
    if depth is not None and not 1 <= depth <= MAX_QUEUE_DEPTH:
        raise ValueError_(f"{where}: depth {depth} is not in 1..{MAX_QUEUE_DEPTH} packets")
    if port is not None and port not in ports:
        known = ", ".join(map(str, ports)) or "none"
        raise ValueError_(f"{where}: port {port} does not exist ({port_source} ports: {known})")
    if queue is not None and not 0 <= queue < queues:
        raise ValueError_(f"{where}: queue {queue} does not exist ({queue_source} queues: 0..{queues - 1})")


def set_queues(conf: SwitchConf, port: int | None = None, queue: int | None = None,
               depth: int | None = None, rate_pps: int | None = None, timeout: float = 5.0, *,
               yaml_ports: list[int] | None = None, queues: int = 8) -> list[str]:
    """Apply depth/rate to one port (all ports when None) and queue (all when None); returns commands.

    ``yaml_ports``/``queues``: the limits the network YAML gives, used where the switch cannot
    report its own (BMv2); p4sim's own report wins.
    """
    if depth is None and rate_pps is None:
        raise SwitchError(conf.name, "queues set: give --depth and/or --rate")
    if queue is not None and port is None:
        raise SwitchError(conf.name, "queues set: --queue needs --port")
    cmds = _commands(port, queue, depth, rate_pps)
    texts = [" ".join(str(x) for x in cmd if x is not None) for cmd in cmds]
    if conf.target == "p4sim":
        _p4sim(conf, cmds, timeout, sorted(yaml_ports or []))
    elif conf.target == "bmv2":
        check_request(conf.name, port, queue, depth, sorted(yaml_ports or []), queues, "the network YAML's",
                      "the policy's")
        _bmv2(conf, texts, timeout)
    else:
        raise SwitchError(conf.name, f"queues set: not supported for target {conf.target}")
    return texts


def _addr(conf: SwitchConf) -> str:
    if conf.runtime_addr:
        return conf.runtime_addr
    if conf.thrift_port:
        return f"127.0.0.1:{conf.thrift_port}"
    raise SwitchError(conf.name, "queues set: no runtime.addr or runtime.thrift_port in the network YAML")


def _p4sim(conf: SwitchConf, cmds: list[tuple], timeout: float, yaml_ports: list[int]) -> None:
    """Check every command against the switch's limits, then send them all (nothing half applied).

    Ports: the switch's attached interfaces; a switch without interfaces of its own (nanomsg
    packet ports) cannot list them, so the ports the network YAML attaches count instead.
    """
    with P4simCtl(conf.name, _addr(conf), timeout=timeout) as ctl:
        queues, ports = ctl.limits()
        source = "the switch's"
        if not ports:
            ports, source = yaml_ports, "the network YAML's"
        for name, value, port, prio in cmds:
            check_request(conf.name, port, prio, value if name == "set_queue_depth" else None, ports, queues,
                          source, "the switch's")
        for name, value, port, prio in cmds:
            if name == "set_queue_depth":
                ctl.set_queue_depth(value, port, prio)
            else:
                ctl.set_queue_rate(value, port, prio)


def _bmv2(conf: SwitchConf, texts: list[str], timeout: float) -> None:
    if not conf.thrift_port:
        raise SwitchError(conf.name, "queues set: bmv2 needs runtime.thrift_port")
    argv = shlex.split(conf.runtime_command or "simple_switch_CLI") + ["--thrift-port", str(conf.thrift_port)]
    try:
        proc = subprocess.run(argv, input="\n".join(texts) + "\n", capture_output=True, text=True,
                              timeout=timeout, check=False)
    except FileNotFoundError:
        raise SwitchError(conf.name, f"queues set: {argv[0]} not found on PATH") from None
    except subprocess.TimeoutExpired:
        raise SwitchError(conf.name, f"queues set: {argv[0]} did not answer in {timeout:g}s") from None
    out = proc.stdout + proc.stderr
    if proc.returncode != 0 or "Error" in out or "Could not connect" in out:
        last = next((ln for ln in reversed(out.splitlines()) if ln.strip()), f"exit {proc.returncode}")
        raise SwitchError(conf.name, f"queues set: {argv[0]}: {last.strip()}")


def has_runtime(conf: SwitchConf) -> bool:
    return bool(conf.runtime_addr or conf.thrift_port)


def check_queue_config(conf: SwitchConf, timeout: float = 5.0) -> None:
    """Before ``apply`` writes anything: every port the YAML gives queue settings for must exist on
    the switch (p4sim reports its interfaces; elsewhere the YAML's own ports are all there is)."""
    configured = sorted(p for p, pc in conf.ports.items() if pc.depth is not None or pc.rate_pps is not None)
    if conf.target != "p4sim" or not configured:
        return
    with P4simCtl(conf.name, _addr(conf), timeout=timeout) as ctl:
        _queues, ports = ctl.limits()
    if not ports:
        return
    for port in configured:
        if port not in ports:
            raise ValueError_(f"switch {conf.name}: ports.{port}: port {port} does not exist (the switch's "
                              f"ports: {', '.join(map(str, ports))}); nothing was written")


def apply_queue_config(conf: SwitchConf, defaults: PortConf, timeout: float = 5.0, *,
                       yaml_ports: list[int] | None = None, queues: int = 8) -> list[str]:
    """Push the YAML's queue depths/rates (network-wide ``queues``, then per-port ``ports``).

    Returns the commands sent; nothing when the YAML sets no queue parameters for this switch.
    """
    done: list[str] = []
    limits = {"yaml_ports": yaml_ports, "queues": queues}
    if defaults.depth is not None or defaults.rate_pps is not None:
        done += set_queues(conf, None, None, defaults.depth, defaults.rate_pps, timeout, **limits)
    for port, pc in sorted(conf.ports.items()):
        if pc.depth is not None or pc.rate_pps is not None:
            done += set_queues(conf, port, None, pc.depth, pc.rate_pps, timeout, **limits)
    return done
