"""End to end: p4runtime-shell (the official client) and raw stubs against a p4sim switch.

A compiled program is pushed with SetForwardingPipelineConfig, entries go into a table of every
match kind and read back, packets prove the entries are live, a lower election id is refused,
packet-out/packet-in and digests go through the CPU port. Skipped until the compiler works.
"""

from __future__ import annotations

import functools
import os

import grpc
import pytest
from google.protobuf import text_format
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from mininet_topos.ports import free_ports
from p4sim.p4runtime_server import P4RuntimeServer
from tests.p4runtime.client import StreamClient

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "p4", "p4rt_all.p4")
DEVICE_ID = 1
CPU_PORT = 64
SetConfig = p4runtime_pb2.SetForwardingPipelineConfigRequest


@functools.cache
def _compile():
    """(program, None) or (None, reason it cannot be compiled here yet)."""
    try:
        import p4sim.v1model.pipeline  # noqa: F401
        from p4sim.backend import compile_file
        from p4sim.switch.device import SwitchDevice  # noqa: F401 - needed by every test
    except ImportError as err:
        return None, f"p4sim compiler/switch not built yet ({err})"
    try:
        return compile_file(PROGRAM), None
    except (ImportError, NotImplementedError) as err:
        return None, f"p4sim compiler incomplete ({type(err).__name__}: {err})"
    except Exception as err:   # the front end may not accept the whole program yet
        if type(err).__name__ == "P4UnsupportedError":
            return None, f"p4sim compiler does not support this program yet: {err}"
        raise


@pytest.fixture(scope="module")
def program():
    prog, reason = _compile()
    if prog is None:
        pytest.skip(reason)
    return prog


@pytest.fixture
def switch(program):
    from p4sim.switch.device import SwitchDevice
    device = SwitchDevice(device_id=DEVICE_ID, cpu_port=CPU_PORT)
    ports = {n: device.add_virtual_port(n) for n in (1, 2, 3)}
    device.start()
    server = P4RuntimeServer(device, "127.0.0.1:0")
    port = server.start()
    yield device, port, ports
    server.stop(grace=0.1)
    device.stop()


@pytest.fixture
def config_files(tmp_path, program):
    p4info = tmp_path / "p4info.txtpb"
    p4info.write_text(text_format.MessageToString(program.p4info))
    blob = tmp_path / "device_config.bin"
    blob.write_bytes(program.device_config())
    return str(p4info), str(blob)


def ipv4(dst: str = "10.0.0.2", src: str = "10.1.0.1", ttl: int = 64, dmac: str = "00:00:00:00:00:02",
         size: int = 0) -> bytes:
    pkt = Ether(dst=dmac, src="00:00:00:00:00:01") / IP(src=src, dst=dst, ttl=ttl) / UDP(sport=1, dport=2) / \
        Raw(bytes(size))
    return bytes(pkt)


def primary(port: int, election_id: int = 1) -> StreamClient:
    c = StreamClient(port, DEVICE_ID)
    c.arbitrate(election_id)
    assert c.recv_arbitration().status.code == code_pb2.OK
    return c


def test_shell_pushes_pipeline_and_programs_every_match_kind(switch, config_files):
    import p4runtime_sh.shell as sh
    _device, port, ports = switch
    sh.setup(device_id=DEVICE_ID, grpc_addr=f"127.0.0.1:{port}", election_id=(0, 2),
             config=sh.FwdPipeConfig(*config_files), verbose=False)
    try:
        te = sh.TableEntry("MyIngress.l2_exact")(action="MyIngress.forward")
        te.match["hdr.ethernet.dstAddr"] = "00:00:00:00:00:02"
        te.action["port"] = "2"
        te.insert()
        te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.forward")
        te.match["hdr.ipv4.dstAddr"] = "10.0.0.0/8"
        te.action["port"] = "2"
        te.insert()
        te = sh.TableEntry("MyIngress.acl_ternary")(action="MyIngress.acl_forward")
        te.match["hdr.ipv4.srcAddr"] = "10.1.0.0&&&255.255.0.0"
        te.action["port"] = "3"
        te.priority = 10
        te.insert()
        te = sh.TableEntry("MyIngress.port_range")(action="MyIngress.drop")
        te.match["hdr.ipv4.totalLen"] = "1000..1500"
        te.priority = 5
        te.insert()
        te = sh.TableEntry("MyIngress.ttl_optional")(action="MyIngress.learn")
        te.match["hdr.ipv4.ttl"] = "7"
        te.match["standard_metadata.ingress_port"] = "1"
        te.priority = 1
        te.insert()
        names = ["l2_exact", "ipv4_lpm", "acl_ternary", "port_range", "ttl_optional"]
        read = {n: list(sh.TableEntry(f"MyIngress.{n}").read()) for n in names}
        assert all(len(v) == 1 for v in read.values()), read
        assert read["acl_ternary"][0].priority == 10
        lpm = read["ipv4_lpm"][0].msg().match[0].lpm
        assert (lpm.value, lpm.prefix_len) == (bytes([10, 0, 0, 0]), 8)
        rng = read["port_range"][0].msg().match[0].range
        assert (rng.low, rng.high) == ((1000).to_bytes(2, "big"), (1500).to_bytes(2, "big"))
        # the entries are live: the ACL (ternary) overrides the LPM's port 2 with port 3
        ports[1].send(ipv4())
        assert ports[3].recv(timeout=3) is not None
        # the range entry drops big packets
        ports[1].send(ipv4(size=1200))
        assert ports[3].recv(timeout=0.5) is None
        te = sh.TableEntry("MyIngress.acl_ternary")
        te.match["hdr.ipv4.srcAddr"] = "10.1.0.0&&&255.255.0.0"
        te.priority = 10
        te.delete()
        ports[1].send(ipv4())
        assert ports[2].recv(timeout=3) is not None
    finally:
        sh.teardown()


def test_shell_programs_profiles_counters_multicast_and_packet_io(switch, config_files):
    """The rest of what p4runtime-shell offers, against the same switch: selector members and
    groups, indirect counters, multicast groups, packet-out and packet-in."""
    import p4runtime_sh.shell as sh
    _device, port, ports = switch
    sh.setup(device_id=DEVICE_ID, grpc_addr=f"127.0.0.1:{port}", election_id=(0, 3),
             config=sh.FwdPipeConfig(*config_files), verbose=False)
    try:
        for member_id, out_port in ((1, 2), (2, 3)):
            m = sh.ActionProfileMember("MyIngress.ecmp_selector")(action="MyIngress.forward",
                                                                   member_id=member_id)
            m.action["port"] = str(out_port)
            m.insert()
        g = sh.ActionProfileGroup("MyIngress.ecmp_selector")(group_id=7)
        g.add(1).add(2)
        g.insert()
        te = sh.TableEntry("MyIngress.ecmp")
        te.match["hdr.ipv4.dstAddr"] = "10.0.0.2"
        te.group_id = 7
        te.insert()
        assert [m.member_id for m in sh.ActionProfileMember("MyIngress.ecmp_selector").read()] == [1, 2]
        assert [len(x.members) for x in sh.ActionProfileGroup("MyIngress.ecmp_selector").read()] == [2]
        ports[1].send(ipv4())
        assert ports[2].recv(timeout=3) is not None or ports[3].recv(timeout=3) is not None
        c = sh.CounterEntry("MyIngress.port_counter")
        c.index = 1
        got = list(c.read())
        assert got[0].packet_count == 1 and got[0].byte_count == len(ipv4())
        mc = sh.MulticastGroupEntry(5)
        mc.add(2).add(3)
        mc.insert()
        assert [len(x.msg().multicast_group_entry.replicas) for x in sh.MulticastGroupEntry(5).read()] == [2]
        sh.PacketOut(ipv4(), egress_port="3", _pad="0").send()
        assert ports[3].recv(timeout=3) == ipv4()
        to_cpu = sh.TableEntry("MyIngress.l2_exact")(action="MyIngress.to_cpu")
        to_cpu.match["hdr.ethernet.dstAddr"] = "00:00:00:00:00:0a"
        to_cpu.insert()
        ports[2].send(ipv4(dst="10.5.0.1", dmac="00:00:00:00:00:0a"))
        seen = []
        sh.PacketIn().sniff(lambda p: seen.append(p), timeout=2)
        assert seen and seen[0].packet.payload == ipv4(dst="10.5.0.1", dmac="00:00:00:00:00:0a")
    finally:
        sh.teardown()


def test_lower_election_id_is_refused_writes(switch, program):
    _device, port, _ports = switch
    a = primary(port, election_id=10)
    a.set_pipeline(program.p4info, program.device_config(), SetConfig.VERIFY_AND_COMMIT)
    b = StreamClient(port, DEVICE_ID)
    b.arbitrate(5)
    assert b.recv_arbitration().status.code == code_pb2.ALREADY_EXISTS
    entry = _l2_entry(program, "00:00:00:00:00:02", 2)
    with pytest.raises(grpc.RpcError) as info:
        b.write(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT, entity=entry))
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.RpcError) as info:
        b.set_pipeline(program.p4info, program.device_config(), SetConfig.VERIFY_AND_COMMIT)
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    a.write(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT, entity=entry))
    a.close()
    b.close()


def test_pipeline_config_checks(switch, program):
    device, port, _ports = switch
    a = primary(port)
    with pytest.raises(grpc.RpcError) as info:
        a.set_pipeline(program.p4info, b"not a device config", SetConfig.VERIFY_AND_COMMIT)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    wrong = p4runtime_pb2.SetForwardingPipelineConfigRequest().config.p4info
    wrong.CopyFrom(program.p4info)
    wrong.tables[0].match_fields[0].bitwidth += 1
    with pytest.raises(grpc.RpcError) as info:
        a.set_pipeline(wrong, program.device_config(), SetConfig.VERIFY_AND_COMMIT)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    a.set_pipeline(program.p4info, program.device_config(), SetConfig.VERIFY)
    assert device.program is None                      # VERIFY changes nothing
    with pytest.raises(grpc.RpcError) as info:
        a.set_pipeline(program.p4info, b"", SetConfig.COMMIT)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION      # nothing saved yet
    a.set_pipeline(program.p4info, program.device_config(), SetConfig.VERIFY_AND_SAVE)
    assert device.program is None
    a.set_pipeline(program.p4info, b"", SetConfig.COMMIT)
    assert device.program is not None
    with pytest.raises(grpc.RpcError) as info:
        a.set_pipeline(program.p4info, program.device_config(), SetConfig.RECONCILE_AND_COMMIT)
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    a.set_pipeline(program.p4info, program.device_config(), SetConfig.VERIFY_AND_COMMIT, cookie=42)
    assert device.program is not None
    Get = p4runtime_pb2.GetForwardingPipelineConfigRequest
    got = a.stub.GetForwardingPipelineConfig(Get(device_id=DEVICE_ID, response_type=Get.ALL)).config
    assert got.p4info == program.p4info and got.cookie.cookie == 42
    assert got.p4_device_config == program.device_config()
    a.close()


def test_packet_out_packet_in_multicast_and_digest(switch, program):
    _device, port, ports = switch
    a = primary(port)
    a.set_pipeline(program.p4info, program.device_config(), SetConfig.VERIFY_AND_COMMIT)
    ids = {m.preamble.name: m for m in program.p4info.controller_packet_metadata}
    out = p4runtime_pb2.StreamMessageRequest()
    out.packet.payload = ipv4()
    out.packet.metadata.add(metadata_id=ids["packet_out"].metadata[0].id, value=b"\x03")
    out.packet.metadata.add(metadata_id=ids["packet_out"].metadata[1].id, value=b"\x00")
    a.send(out)
    assert ports[3].recv(timeout=3) == ipv4()          # header stripped by the program
    U = p4runtime_pb2.Update
    a.write(U(type=U.INSERT, entity=_l2_entry(program, "00:00:00:00:00:09", None, to_cpu=True)))
    ports[1].send(ipv4(dmac="00:00:00:00:00:09"))
    msg = a.recv(timeout=3)
    assert msg.HasField("packet"), msg
    assert msg.packet.payload == ipv4(dmac="00:00:00:00:00:09")
    assert msg.packet.metadata[0].value == b"\x01"     # ingress port 1
    # multicast
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = 5
    pre.multicast_group_entry.replicas.add(instance=0, port=b"\x02")
    pre.multicast_group_entry.replicas.add(instance=0, port=b"\x03")
    a.write(U(type=U.INSERT, entity=p4runtime_pb2.Entity(packet_replication_engine_entry=pre)))
    a.write(U(type=U.INSERT, entity=_l2_entry(program, "00:00:00:00:00:05", None, mcast=5)))
    ports[1].send(ipv4(dmac="00:00:00:00:00:05"))
    assert ports[2].recv(timeout=3) is not None and ports[3].recv(timeout=3) is not None
    # digest
    digest_id = program.p4info.digests[0].preamble.id
    a.write(U(type=U.INSERT, entity=p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry(
        digest_id=digest_id, config=p4runtime_pb2.DigestEntry.Config(max_list_size=1)))))
    table = next(t for t in program.p4info.tables if t.preamble.name == "MyIngress.ttl_optional")
    learn = next(x for x in program.p4info.actions if x.preamble.name == "MyIngress.learn")
    te = p4runtime_pb2.TableEntry(table_id=table.preamble.id, priority=1)
    te.match.add(field_id=table.match_fields[0].id).optional.value = b"\x07"
    te.match.add(field_id=table.match_fields[1].id).exact.value = b"\x01"
    te.action.action.action_id = learn.preamble.id
    a.write(U(type=U.INSERT, entity=p4runtime_pb2.Entity(table_entry=te)))
    ports[1].send(ipv4(ttl=7))
    msg = a.recv(timeout=3)
    assert msg.HasField("digest"), msg
    assert msg.digest.data[0].struct.members[1].bitstring == b"\x01"
    a.close()


def _l2_entry(program, mac: str, port: int | None, to_cpu: bool = False, mcast: int | None = None):
    table = next(t for t in program.p4info.tables if t.preamble.name == "MyIngress.l2_exact")
    actions = {a.preamble.name: a for a in program.p4info.actions}
    te = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
    te.match.add(field_id=table.match_fields[0].id).exact.value = \
        bytes.fromhex(mac.replace(":", "")).lstrip(b"\x00") or b"\x00"
    if to_cpu:
        te.action.action.action_id = actions["MyIngress.to_cpu"].preamble.id
    elif mcast is not None:
        te.action.action.action_id = actions["MyIngress.set_mcast"].preamble.id
        te.action.action.params.add(param_id=1, value=bytes([mcast]))
    else:
        te.action.action.action_id = actions["MyIngress.forward"].preamble.id
        te.action.action.params.add(param_id=1, value=bytes([port]))
    return p4runtime_pb2.Entity(table_entry=te)


def _shell_session(grpc_port: int, config_files: tuple[str, str]) -> None:
    """What a user does with p4runtime-shell: push the pipeline, write an entry, read it back."""
    import p4runtime_sh.shell as sh
    sh.setup(device_id=DEVICE_ID, grpc_addr=f"127.0.0.1:{grpc_port}", election_id=(0, 1),
             config=sh.FwdPipeConfig(*config_files), verbose=False)
    try:
        te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.forward")
        te.match["hdr.ipv4.dstAddr"] = "10.9.0.0/16"
        te.action["port"] = "4"
        te.insert()
        got = list(sh.TableEntry("MyIngress.ipv4_lpm").read())
        assert len(got) == 1 and got[0].msg().match[0].lpm.prefix_len == 16
    finally:
        sh.teardown()


def _wait_for_grpc(port: int, proc, timeout: float = 20.0) -> None:
    """Readiness: poll Capabilities until the server answers (or the process dies)."""
    import time
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        while time.monotonic() < deadline:
            assert proc.poll() is None, "switch process exited"
            try:
                stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=1)
                return
            except grpc.RpcError:
                time.sleep(0.1)
    raise AssertionError(f"no P4Runtime server on port {port} after {timeout}s")


@pytest.mark.parametrize("target", ["p4sim", "bmv2"])
def test_shell_drives_a_switch_process(target, tmp_path, request):
    """The switch as a process, started the way simple_switch_grpc is; p4runtime-shell pushes the
    pipeline, writes an entry and reads it back; SIGTERM shuts the process down cleanly. The same
    test runs against BMv2 when p4c and simple_switch_grpc are installed."""
    import re
    import shutil
    import signal
    import subprocess
    import sys

    if target == "p4sim":
        config_files = request.getfixturevalue("config_files")
        cmd = [sys.executable, "-m", "p4sim.cli", "switch", "--no-p4", "--device-id", str(DEVICE_ID),
               "--cpu-port", str(CPU_PORT), "--grpc-server-addr", "127.0.0.1:0", "--ctl-addr", "127.0.0.1:0"]
    else:
        if not (shutil.which("p4c") and shutil.which("simple_switch_grpc")):
            pytest.skip("BMv2 target: p4c and simple_switch_grpc are not installed here")
        p4info, blob = str(tmp_path / "p4info.txtpb"), str(tmp_path / "p4rt_all.json")
        subprocess.run(["p4c", "--target", "bmv2", "--arch", "v1model", "--p4runtime-files", p4info,
                        "-o", str(tmp_path), PROGRAM], check=True)
        config_files = (p4info, blob)
        port = free_ports(1)[0]         # BMv2 cannot bind port 0 and report it: below the ephemeral range
        cmd = ["simple_switch_grpc", "--no-p4", "--device-id", str(DEVICE_ID), "--",
               "--grpc-server-addr", f"127.0.0.1:{port}", "--cpu-port", str(CPU_PORT)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if target == "p4sim":
            ready = proc.stdout.readline()
            match = re.search(r"grpc=(\S+):(\d+)", ready)
            assert match, (ready, proc.stderr.read() if proc.poll() is not None else "")
            port = int(match.group(2))
        _wait_for_grpc(port, proc)
        _shell_session(port, config_files)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) in (0, -signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_program_loaded_at_start_is_served(program):
    """`p4sim switch PROGRAM`: the program is in place before the server starts; P4Runtime
    serves its P4Info and device config and accepts writes without a SetForwardingPipelineConfig."""
    from p4sim.switch.device import SwitchDevice
    device = SwitchDevice(device_id=DEVICE_ID, cpu_port=CPU_PORT)
    device.load_program(program)
    server = P4RuntimeServer(device, "127.0.0.1:0")
    port = server.start()
    try:
        a = primary(port)
        Get = p4runtime_pb2.GetForwardingPipelineConfigRequest
        got = a.stub.GetForwardingPipelineConfig(Get(device_id=DEVICE_ID, response_type=Get.ALL)).config
        assert got.p4info == program.p4info and got.p4_device_config == program.device_config()
        a.write(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT,
                                     entity=_l2_entry(program, "00:00:00:00:00:07", 1)))
        assert len(device.pipeline.tables["MyIngress.l2_exact"]) == 1
        a.close()
    finally:
        server.stop(grace=0.1)
        device.stop()
