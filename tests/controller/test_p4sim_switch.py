"""The controller against real ``p4sim switch`` processes running the compiled DLCP program:
pipeline push and apply on 3 switches, restart restore with traffic flowing again, and
``dlcpctl thresholds set`` changing which packets a congested queue drops."""

from __future__ import annotations

import threading
import time

import pytest
from device_switch import OTHER_P4
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from switch_proc import NanomsgHost, SwitchProcess, compiled_dlcp

from controller import dlcp_tables as api
from controller import netconfig, reconcile
from controller import stats as stats_mod
from controller.cli import EXIT_OK, EXIT_SWITCH, main
from controller.controller import Controller

pytestmark = pytest.mark.slow


def _yaml(switches: list[SwitchProcess], three: bool = True) -> str:
    p4info, config = compiled_dlcp()
    # The RPC deadline (default 10 s) covers SetForwardingPipelineConfig, which makes a p4sim switch
    # build the DLCP pipeline: with the suite on every core beside other jobs that took longer
    # (DEADLINE_EXCEEDED at apply). A bound on a hang, not on speed: nothing here is timed.
    head = (f"controller: {{timeout: 60}}\n"
            f"defaults:\n  target: p4sim\n  pipeline: {{p4info: {p4info}, config: {config}}}\nswitches:\n")
    for i, s in enumerate(switches):
        head += f'  s{i + 1}: {{grpc: "{s.grpc_addr}", device_id: {s.device_id}, runtime: {{addr: "127.0.0.1:{s.ctl_port}"}}}}\n'
    if three:
        return head + ("hosts:\n"
                       '  h1: {ip: 10.0.0.1, mac: "00:00:00:00:00:01", switch: s1, port: 1}\n'
                       '  h2: {ip: 10.0.0.2, mac: "00:00:00:00:00:02", switch: s2, port: 1}\n'
                       "links:\n  - [s1:2, s3:1]\n  - [s1:3, s3:2]\n  - [s3:3, s2:2]\n")
    return head + ("hosts:\n"
                   '  h1: {ip: 10.0.0.1, mac: "00:00:00:00:00:01", switch: s1, port: 1}\n'
                   '  h2: {ip: 10.0.0.2, mac: "00:00:00:00:00:02", switch: s1, port: 2}\n')


@pytest.fixture
def three(tmp_path):
    sws = [SwitchProcess(tmp_path, i + 1) for i in range(3)]
    try:
        for s in sws:
            s.start()
        path = tmp_path / "net.yaml"
        path.write_text(_yaml(sws))
        yield path, sws
    finally:
        for s in sws:
            s.stop()


def _frame(dst: str = "10.0.0.2", sport: int = 1234) -> bytes:
    return bytes(Ether(src="00:00:00:00:00:01", dst="02:00:00:00:01:00") / IP(src="10.0.0.1", dst=dst, ttl=64)
                 / UDP(sport=sport, dport=5000) / (b"x" * 40))


def test_apply_pushes_pipeline_then_restores_a_restarted_switch(three):
    path, sws = three
    ctl = Controller(netconfig.load(path))
    ctl.connect()
    stop = threading.Event()
    watcher = None
    try:
        reports = ctl.apply()
        assert {r.pipeline for r in reports.values()} == {"pushed"}
        for s in ctl.sessions.values():
            want = {reconcile.entry_key(e) for e in ctl.desired(s).entries}
            assert set(reconcile.read_current(s.client, s.index)) == want
        assert all(r.plan.empty() for r in ctl.apply().values())

        restored = threading.Event()
        watcher = threading.Thread(target=ctl.supervise, args=(stop, 0.1),
                                   kwargs={"on_restore": lambda n, r: restored.set() if n == "s1" else None})
        watcher.start()
        sws[0].kill()
        sws[0].start()
        assert restored.wait(60), "s1 was not restored after its restart"
        host = NanomsgHost(sws[0].ipc, [1, 2, 3])
        try:
            host.send(1, _frame())
            out = host.receive(timeout=10, expect=1)
        finally:
            host.close()
        assert len(out) == 1 and out[0][0] in (2, 3)
        eth = Ether(out[0][1])
        assert eth.src == "02:00:00:00:01:00" and eth.dst == "02:00:00:00:03:00" and eth[IP].ttl == 63
    finally:
        stop.set()
        if watcher is not None:
            watcher.join(10)
        ctl.close()


def _dlcp_frame(seq: int, layer: int = 2, mag: int = 0, count: int = 16) -> bytes:
    from host_agent.protocol import DLCP_UDP_PORT, HEADER_STRUCT, VERSION
    header = HEADER_STRUCT.pack((VERSION << 4) | 0, (layer << 5) | mag, 0, 0, 1, 1, 1, 1, count, seq * count, seq)
    return bytes(Ether(src="00:00:00:00:00:01", dst="02:00:00:00:01:00")
                 / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=4000, dport=DLCP_UDP_PORT)
                 / (header + bytes(4 * count)))


def test_thresholds_set_changes_dropping_on_live_traffic(tmp_path, capsys):
    sw = SwitchProcess(tmp_path, 1)
    sw.start()
    try:
        path = tmp_path / "net.yaml"
        path.write_text(_yaml([sw], three=False))
        cfg = ("-c", str(path))
        assert main([*cfg, "apply"]) == EXIT_OK
        assert main([*cfg, "queues", "set", "s1", "--port", "2", "--rate", "20"]) == EXIT_OK
        ctl = Controller(netconfig.load(path))
        ctl.connect(require_primary=False, arbitrate=False)
        session = ctl.sessions["s1"]

        def dropped() -> int:
            snap = stats_mod.snapshot(session.client, session.index)
            return (snap.selective_drops.get((1, 0), (0, 0))[0]
                    + snap.egress_safety_drops.get((1, 0), (0, 0))[0])

        def settle(already_dropped: int) -> tuple[int, int]:
            """Receive until every packet of the burst is out or counted as dropped, or nothing has
            moved for 3 s (polling; a frame lost by the packet transport must not hang the test)."""
            got, drops, last_change = 0, 0, time.monotonic()
            while time.monotonic() - last_change < 3 and got + drops < burst:
                new = len(host.receive(timeout=0.3))
                new_drops = dropped() - already_dropped
                if new or new_drops != drops:
                    last_change = time.monotonic()
                got, drops = got + new, new_drops
            return got, drops

        host = NanomsgHost(sw.ipc, [1, 2])
        try:
            burst = 40          # under the 64-packet queue: no tail drops, only DLCP's selective ones
            for i in range(burst):
                host.send(1, _dlcp_frame(i))
            got_before, drops_before = settle(0)
            assert drops_before > 0 and got_before <= burst - drops_before

            assert main([*cfg, "thresholds", "set", "s1", "--queue", "1", "--mag", "0", "--drop", "524287",
                         "--ecn", "524287"]) == EXIT_OK
            for i in range(burst):
                host.send(1, _dlcp_frame(burst + i))
            got_after, drops_after = settle(drops_before)
            assert drops_after == 0                      # the class is no longer dropped
            assert got_after > got_before                # and more of the same burst gets through
        finally:
            host.close()
            ctl.close()
    finally:
        sw.stop()
    capsys.readouterr()


def test_switch_running_another_program_needs_force_pipeline(tmp_path, capsys):
    sw = SwitchProcess(tmp_path, 1, program=str(OTHER_P4))
    sw.start()
    try:
        path = tmp_path / "net.yaml"
        path.write_text(_yaml([sw], three=False))
        assert main(["-c", str(path), "apply"]) == EXIT_SWITCH
        err = capsys.readouterr().err
        assert err.startswith("dlcpctl: switch s1: runs a different P4 program") and err.count("\n") == 1
        assert main(["-c", str(path), "apply", "--force-pipeline"]) == EXIT_OK
        assert "s1      pushed" in capsys.readouterr().out
        assert main(["-c", str(path), "apply"]) == EXIT_OK
        assert capsys.readouterr().out.splitlines()[-1] == "in sync"
    finally:
        sw.stop()


def test_depth_max_age_from_the_policy_is_the_default_entry(tmp_path):
    sw = SwitchProcess(tmp_path, 1)
    sw.start()
    try:
        path = tmp_path / "net.yaml"
        path.write_text(_yaml([sw], three=False) + "policy:\n  depth_max_age_us: 500\n")
        ctl = Controller(netconfig.load(path))
        ctl.connect()
        try:
            first = ctl.apply()["s1"]
            s = ctl.sessions["s1"]
            table_id = s.index.table(api.DEPTH_SETTINGS).preamble.id
            assert s.index.action_text(reconcile.read_default(s.client, table_id)) == \
                "set_depth_max_age(max_age_us=500)"
            assert first.result.counts["modify"] == 1          # only the default entry (DLCP ports are table inserts)
            assert ctl.apply()["s1"].plan.empty()
        finally:
            ctl.close()
    finally:
        sw.stop()
