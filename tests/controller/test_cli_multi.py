"""``dlcpctl`` for an operator with several switches (issue 16): one switch down costs only that
switch's output (exit 4, the switch named with the reason), operator values are checked against
the switch's real limits before anything is written, and ``--help`` says what sub-commands do.
Real p4sim switches behind p4sim's P4Runtime server (in-process, or ``p4sim switch`` processes
where queues are involved)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from device_switch import DeviceSwitch, dlcp_yaml
from switch_proc import compiled_dlcp, free_port

from controller import dlcp_tables as api
from controller.cli import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL, EXIT_SWITCH, main
from p4sim.switch.ready import ready_ports


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# The RPC deadline of the live switches' reads: a bound on a hang, not on speed. `stats` reads about
# 9,100 counter and register cells per switch and decodes them with the pure-Python protobuf (3.20.3):
# about 0.7 s of CPU per switch in this process. With the default 10 s deadline a starved test process
# lost s1 or s3 to DEADLINE_EXCEEDED (load 11-17, sessions 16 and 17; given 3 % of a core by a cgroup
# quota: 3 of 3 runs failed, with 60 s 3 of 3 passed). The switch that is down is still found by the
# connect, whose timeout stays capped at 3 s.
LIVE_RPC_DEADLINE = "controller: {timeout: 60}\n"


@pytest.fixture
def s2_down(tmp_path):
    """Three switches in the YAML, s2 stopped after the first apply."""
    sws = [DeviceSwitch(i + 1) for i in range(3)]
    path = tmp_path / "net.yaml"
    path.write_text(dlcp_yaml([s.port for s in sws], extra=LIVE_RPC_DEADLINE))
    assert main(["-c", str(path), "apply"]) == EXIT_OK
    sws[1].stop()
    yield path, sws
    for i in (0, 2):
        sws[i].stop()


def _named(err: str, port: int) -> bool:
    return f"dlcpctl: switch s2: unreachable at 127.0.0.1:{port}" in err and "s1" not in err and "s3" not in err


def test_thresholds_show_with_one_switch_down(s2_down, capsys):
    path, sws = s2_down
    code, out, err = _run(capsys, "-c", str(path), "thresholds", "show")
    assert code == EXIT_PARTIAL and _named(err, sws[1].port) and err.count("\n") == 1
    shown = {line.split()[0] for line in out.splitlines()[1:]}
    assert shown == {"s1", "s3"}
    code, out, err = _run(capsys, "-c", str(path), "--json", "thresholds", "show")
    assert code == EXIT_PARTIAL and set(json.loads(out)) == {"s1", "s3"} and _named(err, sws[1].port)


def test_stats_with_one_switch_down(s2_down, capsys):
    path, sws = s2_down
    code, out, err = _run(capsys, "-c", str(path), "--json", "stats")
    assert code == EXIT_PARTIAL and set(json.loads(out)) == {"s1", "s3"} and _named(err, sws[1].port), err
    code, out, err = _run(capsys, "-c", str(path), "stats")
    assert code == EXIT_PARTIAL and "malformed: 0" in out and _named(err, sws[1].port), err


def test_apply_with_one_switch_down_serves_the_others(s2_down, capsys):
    path, sws = s2_down
    # a live edit on s1 and s3 that apply must undo, although s2 cannot be reached
    for sw in (sws[0], sws[2]):
        assert main(["-c", str(path), "thresholds", "set", f"s{sw.device_id}", "--queue", "1", "--mag", "0",
                     "--drop", "3", "--ecn", "1"]) == EXIT_OK
    capsys.readouterr()
    code, out, err = _run(capsys, "-c", str(path), "--json", "apply")
    assert code == EXIT_PARTIAL and _named(err, sws[1].port)
    report = json.loads(out)
    assert set(report) == {"s1", "s3"}
    assert report["s1"]["changes"]["modify"] == 1 and report["s3"]["changes"]["modify"] == 1
    code, out, err = _run(capsys, "-c", str(path), "apply", "--dry-run")
    assert code == EXIT_PARTIAL and out.rstrip().endswith("dry run: nothing written") and _named(err, sws[1].port)


def test_every_switch_down_is_one_line_naming_each(tmp_path, capsys):
    ports = [free_port() for _ in range(3)]
    path = tmp_path / "net.yaml"
    path.write_text(dlcp_yaml(ports))
    code, out, err = _run(capsys, "-c", str(path), "thresholds", "show")
    assert code == EXIT_SWITCH and out == "" and err.count("\n") == 1
    assert all(f"switch s{i + 1}: unreachable at 127.0.0.1:{p}" in err for i, p in enumerate(ports))


def test_threshold_order_refused_before_writing(tmp_path, capsys):
    sw = DeviceSwitch(1)
    try:
        path = tmp_path / "net.yaml"
        path.write_text(dlcp_yaml([sw.port, 1, 2]).replace("  s2: {grpc", "  #s2: {grpc").replace(
            "  s3: {grpc", "  #s3: {grpc").split("hosts:")[0])
        assert main(["-c", str(path), "apply"]) == EXIT_OK
        before = sw.entries(api.DROP_THRESHOLDS)
        capsys.readouterr()
        code, out, err = _run(capsys, "-c", str(path), "thresholds", "set", "s1", "--queue", "1", "--mag", "0",
                              "--ecn", "50", "--drop", "10")
        assert code == EXIT_INPUT and out == ""
        assert err == ("dlcpctl: --ecn 50 is above --drop 10: packets would be dropped before any is marked; "
                       "give an ECN depth at most the drop depth\n")
        code, _, err = _run(capsys, "-c", str(path), "thresholds", "set", "s1", "--queue", "8", "--mag", "0",
                            "--ecn", "5", "--drop", "10")
        assert code == EXIT_INPUT and "--queue 8: the switches have queues 0..7" in err
        assert sw.entries(api.DROP_THRESHOLDS) == before
    finally:
        sw.stop()


def _p4sim_switch(tmp_path: Path, interfaces: list[str], queues: int = 1) -> tuple[subprocess.Popen, int, int]:
    """``p4sim switch --no-p4`` with ``-i N@IFACE`` ports; (process, gRPC port, ctl port) once ready. The
    switch binds port 0 and its ready line names the ports it got (no probe-then-bind race)."""
    import grpc
    argv = [sys.executable, "-m", "p4sim.cli", "switch", "--no-p4", "--device-id", "1",
            "--grpc-server-addr", "127.0.0.1:0", "--ctl-addr", "127.0.0.1:0",
            "--priority-queues", str(queues), "--log-file", str(tmp_path / "s1.log")]
    for i, name in enumerate(interfaces):
        argv += ["-i", f"{i + 1}@{name}"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ready = proc.stdout.readline()           # the ready line, or "" if the switch exited
    ports = ready_ports(ready)
    if ports is None:
        proc.kill()
        proc.wait()
        raise AssertionError(f"p4sim switch did not start: {ready!r}")
    grpc_port, ctl_port = ports
    channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=30)
    finally:
        channel.close()
    return proc, grpc_port, ctl_port


def _queues_yaml(grpc_port: int, ctl_port: int, host_ports: list[int]) -> str:
    p4info, config = compiled_dlcp()
    hosts = "".join(f'  h{p}: {{ip: 10.0.0.{p}, mac: "00:00:00:00:00:0{p}", switch: s1, port: {p}}}\n'
                    for p in host_ports)
    return (f"defaults:\n  target: p4sim\n  pipeline: {{p4info: {p4info}, config: {config}}}\n"
            f'switches:\n  s1: {{grpc: "127.0.0.1:{grpc_port}", device_id: 1, '
            f'runtime: {{addr: "127.0.0.1:{ctl_port}"}}}}\nhosts:\n{hosts}')


def _show_queues(ctl_port: int) -> dict:
    from controller.p4sim_ctl import P4simCtl
    with P4simCtl("s1", f"127.0.0.1:{ctl_port}") as ctl:
        return ctl.call("show_queues")


def test_queues_set_on_a_port_the_yaml_does_not_attach(tmp_path, capsys):
    """A switch without interfaces of its own (nanomsg ports) cannot list them: the YAML's count."""
    proc, grpc_port, ctl_port = _p4sim_switch(tmp_path, [], queues=8)
    try:
        path = tmp_path / "net.yaml"
        path.write_text(_queues_yaml(grpc_port, ctl_port, [1, 2]))
        code, out, err = _run(capsys, "-c", str(path), "queues", "set", "s1", "--port", "7", "--depth", "8")
        assert code == EXIT_INPUT and out == ""
        assert err == "dlcpctl: switch s1: queues set: port 7 does not exist (the network YAML's ports: 1, 2)\n"
        code, _, err = _run(capsys, "-c", str(path), "queues", "set", "s1", "--port", "2", "--queue", "1",
                            "--depth", "0")
        assert code == EXIT_INPUT and "depth 0 is not in 1.." in err
        assert "7" not in _show_queues(ctl_port)["ports"]              # nothing reached the switch
        assert main(["-c", str(path), "queues", "set", "s1", "--port", "2", "--queue", "1", "--depth", "8"]) == 0
        assert _show_queues(ctl_port)["ports"]["2"]["queues"][1]["limit"] == 8
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.skipif(shutil.which("ip") is None, reason="needs iproute2 to make a veth pair")
def test_queues_set_checked_against_the_switch_ports_and_queues(tmp_path, capsys):
    """The switch has interfaces 1 and 2 (a real veth pair) and 1 priority queue; the YAML claims a
    host on port 7 and the policy 8 queues: the switch's own report wins."""
    tag = uuid.uuid4().hex[:6]
    a, b = f"dq{tag}a", f"dq{tag}b"
    made = subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot create a veth pair: {made.stderr.decode().strip()}")
    proc = None
    try:
        for name in (a, b):
            subprocess.run(["ip", "link", "set", name, "up"], check=True)
        proc, grpc_port, ctl_port = _p4sim_switch(tmp_path, [a, b])
        deadline = time.monotonic() + 10
        while sorted(_show_queues(ctl_port)["ports"]) != ["1", "2"] and time.monotonic() < deadline:
            time.sleep(0.05)
        path = tmp_path / "net.yaml"
        path.write_text(_queues_yaml(grpc_port, ctl_port, [1, 7]))
        code, _, err = _run(capsys, "-c", str(path), "queues", "set", "s1", "--port", "7", "--depth", "8")
        assert code == EXIT_INPUT
        assert err == "dlcpctl: switch s1: queues set: port 7 does not exist (the switch's ports: 1, 2)\n"
        code, _, err = _run(capsys, "-c", str(path), "queues", "set", "s1", "--port", "2", "--queue", "3",
                            "--depth", "8")
        assert code == EXIT_INPUT
        assert err == "dlcpctl: switch s1: queues set: queue 3 does not exist (the switch's queues: 0..0)\n"
        assert sorted(_show_queues(ctl_port)["ports"]) == ["1", "2"]
        assert main(["-c", str(path), "queues", "set", "s1", "--port", "2", "--depth", "9"]) == EXIT_OK
        assert _show_queues(ctl_port)["ports"]["2"]["queues"][0]["limit"] == 9
        capsys.readouterr()
        # the YAML's own per-port setting for the missing port: refused before any table is written
        path.write_text(_queues_yaml(grpc_port, ctl_port, [1, 7]).replace(
            "device_id: 1, ", "device_id: 1, ports: {7: {depth: 16}}, "))
        code, out, err = _run(capsys, "-c", str(path), "apply")
        assert code == EXIT_INPUT and out == ""
        assert err == ("dlcpctl: switch s1: ports.7: port 7 does not exist (the switch's ports: 1, 2); "
                       "nothing was written\n")
        from controller import netconfig
        from controller.controller import Controller
        probe = Controller(netconfig.load(path))
        probe.connect(require_primary=False, arbitrate=False)
        try:
            assert probe.sessions["s1"].client.get_pipeline()[0] is None      # not even the pipeline
        finally:
            probe.close()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
        subprocess.run(["ip", "link", "del", a], capture_output=True)


@pytest.mark.parametrize("command", ["thresholds", "priority", "ecmp", "queues"])
def test_subcommand_help_describes_its_actions(command):
    proc = subprocess.run([sys.executable, "-m", "controller.cli", "-c", "x.yaml", command, "--help"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    actions = ["set"] if command == "queues" else ["show", "set"]
    for action in actions:
        described = [ln for ln in lines if ln.strip().startswith(action + " ")]
        assert described and len(described[0].split()) > 2, proc.stdout   # "show   list the ..."
