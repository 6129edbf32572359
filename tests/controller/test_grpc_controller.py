"""The controller against real p4sim switches over real gRPC: in-process ``SwitchDevice``s running
the compiled DLCP program behind p4sim's P4Runtime server (``device_switch.py``). Apply on 3
switches, idempotence, one MODIFY, restart restore, two controllers, a switch running another
program, rollback of a change a switch with smaller tables refuses."""

from __future__ import annotations

import threading
import time

import pytest
from device_switch import DeviceSwitch, dlcp_program_with, dlcp_yaml, other_program

from controller import desired, netconfig, reconcile
from controller import dlcp_tables as api
from controller.controller import Controller
from controller.errors import ControllerError, NotPrimaryError, PipelineMismatch


@pytest.fixture
def switches():
    sws = [DeviceSwitch(i + 1) for i in range(3)]
    yield sws
    for s in sws:
        s.stop()


@pytest.fixture
def net_path(tmp_path, switches):
    path = tmp_path / "net.yaml"
    path.write_text(dlcp_yaml([s.port for s in switches]))
    return path


def _controller(path, **kw) -> Controller:
    ctl = Controller(netconfig.load(path), **kw)
    ctl.connect()
    return ctl


def _read_back(ctl: Controller, name: str) -> set:
    s = ctl.sessions[name]
    return set(reconcile.read_current(s.client, s.index))


def _expected(ctl: Controller, name: str) -> set:
    s = ctl.sessions[name]
    return {reconcile.entry_key(e) for e in desired.build_switch(ctl.net, s.index, name).entries}


def test_apply_installs_exactly_the_expected_entries_then_nothing(net_path, switches):
    ctl = _controller(net_path)
    try:
        reports = ctl.apply()
        for name, rep in reports.items():
            assert rep.pipeline == "ok"
            assert rep.result.counts["insert"] == len(_expected(ctl, name)) > 0
            assert rep.result.batches == 1          # all inserts (DLCP has no value set to MODIFY)
            assert _read_back(ctl, name) == _expected(ctl, name)
        # what the switch itself holds, not just what P4Runtime reads back
        assert len(switches[0].entries(api.NEXTHOPS)) == 3
        assert len(switches[2].entries(api.ECMP_MEMBERS)) == 2
        again = ctl.apply()
        assert all(r.plan.empty() and r.result.batches == 0 for r in again.values())
    finally:
        ctl.close()


def test_changing_one_threshold_writes_one_modify(net_path, switches):
    ctl = _controller(net_path)
    ctl.apply()
    ctl.close()
    net_path.write_text(net_path.read_text() + "policy:\n  thresholds:\n"
                        "    - {queues: [1], mag_classes: [0], drop_depth: 5, ecn_depth: 2}\n")
    ctl = _controller(net_path)
    try:
        dry = ctl.apply(dry_run=True)
        # the inline thresholds replace the default list: one modify, the other pairs deleted
        counts = dry["s1"].plan.counts()
        assert counts["modify"] == 1 and counts["insert"] == 0
        rep = ctl.apply()
        assert rep["s1"].result.counts == counts
        thr = {tuple(e.match): e.action for e in switches[0].entries(api.DROP_THRESHOLDS)}
        assert len(thr) == 1
    finally:
        ctl.close()


def _policy_yaml(first_drop: int) -> str:
    import yaml
    blocks = [{"queues": [1], "mag_classes": [0], "drop_depth": first_drop, "ecn_depth": 8},
              {"queues": [2, 3, 4, 5, 6], "mag_classes": [0], "drop_depth": 16, "ecn_depth": 8},
              {"queues": [1, 2, 3, 4, 5, 6], "mag_classes": [1, 2, 3], "drop_depth": 16, "ecn_depth": 8}]
    return yaml.safe_dump({"policy": {"thresholds": blocks}})


def test_one_threshold_changed_in_yaml_is_exactly_one_modify(tmp_path, switches):
    base = dlcp_yaml([s.port for s in switches])
    path = tmp_path / "net.yaml"
    path.write_text(base + _policy_yaml(16))
    ctl = _controller(path)
    ctl.apply()
    ctl.close()
    path.write_text(base + _policy_yaml(20))
    ctl = _controller(path)
    try:
        rep = ctl.apply()
        for name in ("s1", "s2", "s3"):
            assert rep[name].result.counts == {"delete": 0, "modify": 1, "insert": 0}
            assert rep[name].result.batches == 1
        assert rep["s1"].plan.lines(ctl.sessions["s1"].index) == [
            "~ table DlcpIngress.drop_thresholds match queue=1 mag_class=0 -> "
            "set_thresholds(drop_depth=20, ecn_depth=8) (was set_thresholds(drop_depth=16, ecn_depth=8))"]
    finally:
        ctl.close()


def test_switch_restart_is_restored_without_being_asked(net_path, switches):
    ctl = _controller(net_path)
    ctl.apply()
    stop = threading.Event()
    restored = threading.Event()
    watcher = threading.Thread(target=ctl.supervise, args=(stop, 0.05),
                               kwargs={"on_restore": lambda n, r: restored.set() if n == "s2" else None})
    watcher.start()
    try:
        switches[1].restart()
        assert switches[1].entries(api.NEXTHOPS) == []
        assert restored.wait(15), "s2 was not restored"
        assert _read_back(ctl, "s2") == _expected(ctl, "s2")
        assert len(switches[1].entries(api.IPV4_ROUTES)) == 2
    finally:
        stop.set()
        watcher.join(5)
        ctl.close()


def test_two_controllers_backup_cannot_write_then_takes_over(net_path, switches):
    primary = _controller(net_path, election_id=10)
    primary.apply()
    backup = Controller(netconfig.load(net_path), election_id=5, switches=["s1"])
    backup.connect(require_primary=False)
    try:
        client = backup.sessions["s1"].client
        assert not client.is_primary and client.primary_election_id == 10
        with pytest.raises(NotPrimaryError, match=r"switch s1: not primary \(our election id 5; primary is election id 10\)"):
            backup.apply()
        stop = threading.Event()
        watcher = threading.Thread(target=backup.supervise, args=(stop, 0.05))
        watcher.start()
        primary.close()
        assert client.wait_primary(10), "backup did not become primary"
        assert client.election_id == 11
        deadline = time.monotonic() + 10
        while not backup.sessions["s1"].synced and time.monotonic() < deadline:
            time.sleep(0.05)
        assert backup.sessions["s1"].synced
        rep = backup.apply()
        assert rep["s1"].plan.empty()
        stop.set()
        watcher.join(5)
    finally:
        backup.close()


def test_wrong_pipeline_is_one_clear_error(tmp_path, switches):
    sw = DeviceSwitch(1, other_program())
    try:
        path = tmp_path / "net.yaml"
        path.write_text(dlcp_yaml([sw.port, switches[1].port, switches[2].port]))
        ctl = _controller(path)
        try:
            with pytest.raises(PipelineMismatch, match="switch s1: runs a different P4 program"):
                ctl.apply()
            assert sw.entries("Other.routes") == []
        finally:
            ctl.close()
    finally:
        sw.stop()


def test_failed_batch_is_reported_per_entry_and_rolled_back(tmp_path, switches):
    # the switch's drop_thresholds table is smaller than the policy needs
    sw = DeviceSwitch(1, dlcp_program_with(DROP_THRESHOLDS_SIZE=10))
    try:
        path = tmp_path / "net.yaml"
        path.write_text(dlcp_yaml([sw.port, switches[1].port, switches[2].port]))
        ctl = Controller(netconfig.load(path), switches=["s1"])
        ctl.connect()
        try:
            with pytest.raises(ControllerError) as err:
                ctl.apply()
            msg = str(err.value)
            assert msg.startswith("switch s1: write failed: At index ")
            assert "table DlcpIngress.drop_thresholds match queue=" in msg
            assert "rolled back" in msg and "\n" not in msg
            for table in api.TABLE_ORDER:
                assert sw.entries(table) == [], table   # nothing half-applied
        finally:
            ctl.close()
    finally:
        sw.stop()


def test_one_switch_refusing_undoes_the_change_on_the_others(tmp_path, switches):
    from controller.errors import ApplyFailed
    sw = DeviceSwitch(1, dlcp_program_with(DROP_THRESHOLDS_SIZE=10))
    try:
        path = tmp_path / "net.yaml"
        path.write_text(dlcp_yaml([sw.port, switches[1].port, switches[2].port]))
        ctl = _controller(path)
        try:
            with pytest.raises(ApplyFailed) as err:
                ctl.apply()
            msg = str(err.value)
            assert msg.startswith("switch s1: write failed: At index ")
            assert msg.endswith("change undone on s2, s3")
            for s in (sw, switches[1], switches[2]):
                for table in api.TABLE_ORDER:
                    assert s.entries(table) == [], table
        finally:
            ctl.close()
    finally:
        sw.stop()


def test_live_change_with_higher_election_id_survives_the_watcher(net_path, switches):
    from p4.v1 import p4runtime_pb2

    from controller.p4rt_client import P4RuntimeClient
    watcher_ctl = _controller(net_path, election_id=10)
    watcher_ctl.apply()
    stop = threading.Event()
    watcher = threading.Thread(target=watcher_ctl.supervise, args=(stop, 0.05))
    watcher.start()
    try:
        s1 = watcher_ctl.sessions["s1"]
        operator = P4RuntimeClient("s1", s1.client.address, 1, election_id=20)
        operator.connect()
        assert operator.is_primary
        with s1.client.arbitration_changed:   # the switch tells the old primary on its own stream
            assert s1.client.arbitration_changed.wait_for(
                lambda: not s1.client.is_primary and s1.client.primary_election_id == 20, timeout=5)
        update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
        update.entity.table_entry.CopyFrom(api.threshold(s1.index, 1, 0, 3, 1))
        operator.write([update])
        operator.close()
        assert s1.client.wait_primary(10), "the watcher did not take primary back"
        time.sleep(0.3)   # several supervise rounds: it must not re-apply the YAML over the change
        drop = [e for e in reconcile.read_current(s1.client, s1.index).values()
                if e.table_id == s1.index.table(api.DROP_THRESHOLDS).preamble.id
                and e.match[0].exact.value == b"\x01" and e.match[1].exact.value == b"\x00"]
        assert [p.value for p in drop[0].action.action.params] == [b"\x03", b"\x01"]
    finally:
        stop.set()
        watcher.join(5)
        watcher_ctl.close()
