"""``dlcpctl``: error paths are one line with a documented non-zero exit; a session against real
p4sim switches (in-process ``SwitchDevice``s running the compiled DLCP program behind p4sim's
P4Runtime server) prints aligned tables and JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ctl_support import three_switch_yaml
from device_switch import DeviceSwitch, dlcp_yaml, other_program
from switch_proc import free_port

from controller import dlcp_tables as api
from controller.cli import EXIT_INPUT, EXIT_OK, EXIT_SWITCH, EXIT_USAGE, main


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_malformed_yaml_one_line(tmp_path, capsys):
    path = tmp_path / "net.yaml"
    path.write_text("switches: {s1: {grpc: [}\n")
    code, out, err = _run(capsys, "-c", str(path), "apply")
    assert code == EXIT_INPUT and out == ""
    assert err.count("\n") == 1 and err.startswith(f"dlcpctl: {path}:1: malformed YAML")


def test_unknown_table_suggests_before_connecting(net_yaml, capsys):
    code, _, err = _run(capsys, "-c", str(net_yaml), "entries", "DlcpIngress.nexthop")
    assert code == EXIT_INPUT
    assert err == "dlcpctl: unknown table 'DlcpIngress.nexthop'; did you mean 'DlcpIngress.nexthops'?\n"


def test_value_wider_than_field(net_yaml, capsys):
    code, _, err = _run(capsys, "-c", str(net_yaml), "thresholds", "set", "s1", "--queue", "1", "--mag", "16",
                        "--drop", "4", "--ecn", "2")
    assert code == EXIT_INPUT
    assert err == ("dlcpctl: table DlcpIngress.drop_thresholds field mag_class: value 16 does not fit in 4 bits "
                   "(max 15)\n")
    code, _, err = _run(capsys, "-c", str(net_yaml), "thresholds", "set", "s1", "--queue", "1", "--mag", "1",
                        "--drop", str(1 << 19), "--ecn", "2")
    assert code == EXIT_INPUT and "param drop_depth: value 524288 does not fit in 19 bits" in err


def test_unknown_switch_and_rule(net_yaml, capsys):
    code, _, err = _run(capsys, "-c", str(net_yaml), "thresholds", "set", "s4", "--queue", "1", "--mag", "1",
                        "--drop", "4", "--ecn", "2")
    assert code == EXIT_INPUT and "unknown switch 's4'; did you mean 's" in err
    code, _, err = _run(capsys, "-c", str(net_yaml), "priority", "set", "s1", "layer-77", "--queue", "1")
    assert code == EXIT_INPUT and "unknown priority rule 'layer-77'; did you mean 'layer-7'?" in err


def test_unreachable_switch(tmp_path, capsys):
    path = tmp_path / "net.yaml"
    port = free_port()
    path.write_text(three_switch_yaml([port, port + 1, port + 2]))
    code, out, err = _run(capsys, "-c", str(path), "apply")
    assert code == EXIT_SWITCH and out == ""
    assert err.startswith(f"dlcpctl: switch s1: unreachable at 127.0.0.1:{port}") and err.count("\n") == 1


def test_usage_error_exit_code():
    proc = subprocess.run([sys.executable, "-m", "controller.cli", "-c", "x.yaml", "thresholds", "set"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == EXIT_USAGE
    assert "the following arguments are required" in proc.stderr


@pytest.fixture
def live(tmp_path):
    sws = [DeviceSwitch(i + 1) for i in range(3)]
    path = tmp_path / "net.yaml"
    path.write_text(dlcp_yaml([s.port for s in sws]))
    yield path, sws
    for s in sws:
        s.stop()


def test_operator_session(live, capsys):
    path, sws = live
    cfg = ("-c", str(path))
    code, out, _ = _run(capsys, *cfg, "apply", "--dry-run")
    assert code == EXIT_OK
    assert "s1: + table DlcpIngress.nexthops match nexthop_id=1 -> set_nexthop(port=1" in out
    assert out.rstrip().endswith("dry run: nothing written")
    assert sws[0].entries("DlcpIngress.nexthops") == []
    code, out, _ = _run(capsys, *cfg, "apply")
    assert code == EXIT_OK and out.rstrip().endswith("applied")
    code, out, _ = _run(capsys, *cfg, "apply")
    assert code == EXIT_OK and out.rstrip().endswith("in sync") and "+ table" not in out

    code, out, _ = _run(capsys, *cfg, "status")
    assert code == EXIT_OK
    lines = out.splitlines()
    assert lines[0].split() == ["switch", "address", "device", "target", "reachable", "primary", "pipeline",
                                "entries"]
    # no controller connected right now; entries: what the switch itself holds (policy-independent)
    held = sum(len(sws[0].entries(t)) for t in api.TABLE_ORDER)
    assert held > 100 and lines[1].split()[4:] == ["yes", "none", "ok", str(held)]

    code, out, _ = _run(capsys, *cfg, "thresholds", "set", "s1", "--queue", "1", "--mag", "0", "--drop", "3",
                        "--ecn", "1")
    assert code == EXIT_OK and out == "s1: thresholds queue 1 mag 0: drop 3 ecn 1 (modified)\n"
    code, out, _ = _run(capsys, *cfg, "--json", "thresholds", "show", "s1")
    rows = json.loads(out)["s1"]
    assert {"queue": 1, "mag": 0, "drop": 3, "ecn": 1} in rows

    code, out, _ = _run(capsys, *cfg, "priority", "set", "s2", "layer-7", "--queue", "4")
    assert code == EXIT_OK and out == "s2: priority rule layer-7 -> queue 4 (modified)\n"
    code, out, _ = _run(capsys, *cfg, "priority", "show", "s2")
    row = next(ln for ln in out.splitlines() if "layer-7" in ln)
    assert row.split()[-1] == "4"

    code, out, _ = _run(capsys, *cfg, "ecmp", "set", "s1", "--group", "1", "--spray", "off")
    assert code == EXIT_OK and out == "s1: ecmp group 1 spray off (modified)\n"
    code, out, _ = _run(capsys, *cfg, "ecmp", "show", "s1")
    assert out.splitlines()[0].split() == ["switch", "group", "spray", "member", "nexthop", "packets"]
    assert out.splitlines()[1].split() == ["s1", "1", "off", "0", "2", "0"]
    code, _, err = _run(capsys, *cfg, "ecmp", "set", "s1", "--group", "9", "--spray", "on")
    assert code == EXIT_SWITCH and err == "dlcpctl: switch s1: table DlcpIngress.ecmp_groups: no group_id 9\n"

    code, out, _ = _run(capsys, *cfg, "entries", "ipv4_routes", "--switch", "s3")
    assert out.splitlines()[1:] == ["s3      10.0.0.1/32         0  route_to_group(group_id=1)",
                                    "s3      10.0.0.2/32         0  route_to_nexthop(nexthop_id=3)"]

    code, out, _ = _run(capsys, *cfg, "stats", "--switch", "s1", "--watch", "0.05", "--count", "2")
    assert code == EXIT_OK and out.count("malformed: 0") == 2

    code, out, _ = _run(capsys, *cfg, "--json", "stats", "--switch", "s1")
    snap = json.loads(out)["s1"]
    assert snap["malformed"] == {"truncated": 0, "bad_length": 0, "bad_dtype": 0, "bad_ipv4": 0}
    assert {"group": 1, "member": 0, "packets": 0, "bytes": 0} in snap["spray"]

    # apply brings live edits back to the YAML: 3 modifies
    code, out, _ = _run(capsys, *cfg, "--json", "apply")
    changes = {k: v["changes"] for k, v in json.loads(out).items()}
    assert changes["s1"] == {"delete": 0, "modify": 2, "insert": 0}
    assert changes["s2"] == {"delete": 0, "modify": 1, "insert": 0}


def test_backup_cannot_write_from_cli(live, capsys):
    from controller import netconfig
    from controller.controller import Controller
    path, _ = live
    primary = Controller(netconfig.load(path), election_id=50)
    primary.connect()
    try:
        code, out, _ = _run(capsys, "-c", str(path), "status")
        assert out.splitlines()[1].split()[5:7] == ["id", "50"]
        code, _, err = _run(capsys, "-c", str(path), "--election-id", "2", "thresholds", "set", "s1", "--queue", "1",
                            "--mag", "0", "--drop", "3", "--ecn", "1")
        assert code == EXIT_SWITCH
        assert err == "dlcpctl: switch s1: not primary (our election id 2; primary is election id 50)\n"
    finally:
        primary.close()


def test_wrong_pipeline_on_the_switch_is_one_line_and_writes_nothing(tmp_path, capsys):
    sw = DeviceSwitch(1, other_program())
    try:
        path = tmp_path / "net.yaml"
        port = free_port()
        path.write_text(dlcp_yaml([sw.port, port, port + 1]).replace(
            "  s2: {grpc", "  #s2: {grpc").replace("  s3: {grpc", "  #s3: {grpc").split("hosts:")[0])
        code, out, err = _run(capsys, "-c", str(path), "apply")
        assert code == EXIT_SWITCH and out == ""
        assert err.startswith("dlcpctl: switch s1: runs a different P4 program (tables ")
        assert err.endswith("use --force-pipeline to replace it\n") and err.count("\n") == 1
        assert all(len(t) == 0 for t in sw.device.pipeline.tables.values())
    finally:
        sw.stop()
