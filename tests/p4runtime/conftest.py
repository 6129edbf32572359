"""Fixtures for the P4Runtime server tests: the hand-written P4Info and a runtime pipeline for it.

``runtime_pipeline`` builds real ``p4sim.runtime`` objects (tables, profiles, externs, PRE) for
the fixture P4Info, the way the backend's ``instantiate`` does for a compiled program, so the
server's Write/Read paths are tested against the real match engine before the compiler exists.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

HERE = os.path.dirname(__file__)
FIXTURE_P4INFO = os.path.join(HERE, "fixture.p4info.txtpb")


def load_fixture_p4info() -> p4info_pb2.P4Info:
    with open(FIXTURE_P4INFO) as f:
        return text_format.Parse(f.read(), p4info_pb2.P4Info())


def build_runtime_pipeline(p4info: p4info_pb2.P4Info) -> SimpleNamespace:
    """Fresh runtime state for ``p4info`` (every object keyed by its P4Info name)."""
    tables_mod = pytest.importorskip("p4sim.runtime.tables", reason="p4sim.runtime.tables not built yet")
    externs = pytest.importorskip("p4sim.runtime.externs", reason="p4sim.runtime.externs not built yet")
    profiles = pytest.importorskip("p4sim.runtime.action_profiles", reason="action profiles not built yet")
    pre = pytest.importorskip("p4sim.runtime.pre", reason="p4sim.runtime.pre not built yet")
    from p4sim.p4runtime_server.p4info_index import MATCH_KINDS as kinds
    actions = {a.preamble.id: a.preamble.name for a in p4info.actions}
    profile_names = {p.preamble.id: p.preamble.name for p in p4info.action_profiles}
    tables = {}
    for t in p4info.tables:
        keys = [tables_mod.KeyField(m.name, kinds[m.match_type], m.bitwidth) for m in t.match_fields]
        default = None
        if t.const_default_action_id:
            default = tables_mod.ActionCall(actions[t.const_default_action_id], ())
        tables[t.preamble.name] = tables_mod.Table(
            t.preamble.name, keys, t.size, [actions[r.id] for r in t.action_refs], default,
            default_is_const=bool(t.const_default_action_id),
            implementation=profile_names.get(t.implementation_id))
    action_profiles = {}
    for p in p4info.action_profiles:
        names = sorted({actions[r.id] for t in p4info.tables if t.implementation_id == p.preamble.id
                        for r in t.action_refs})
        action_profiles[p.preamble.name] = profiles.ActionProfile(
            p.preamble.name, p.size, names, with_selector=p.with_selector, max_group_size=p.max_group_size)
    value_sets = {}
    try:
        from p4sim.backend.rt import ValueSet
        for v in p4info.value_sets:
            value_sets[v.preamble.name] = ValueSet(v.preamble.name, [m.bitwidth for m in v.match], v.size)
    except ImportError:
        pass
    return SimpleNamespace(
        tables=tables,
        action_profiles=action_profiles,
        counters={c.preamble.name: externs.Counter(c.preamble.name, c.size) for c in p4info.counters},
        direct_counters={c.preamble.name: externs.DirectCounter(c.preamble.name) for c in p4info.direct_counters},
        meters={m.preamble.name: externs.Meter(m.preamble.name, m.size, "bytes") for m in p4info.meters},
        direct_meters={m.preamble.name: externs.DirectMeter(m.preamble.name) for m in p4info.direct_meters},
        registers={r.preamble.name: externs.Register(r.preamble.name, r.size,
                                                     r.type_spec.bitstring.bit.bitwidth)
                   for r in p4info.registers},
        value_sets=value_sets,
        pre=pre.PacketReplicationEngine(),
        digest_sink=None,
        log=None,
    )


@pytest.fixture
def p4info() -> p4info_pb2.P4Info:
    return load_fixture_p4info()


@pytest.fixture
def pipeline(p4info) -> SimpleNamespace:
    return build_runtime_pipeline(p4info)


@pytest.fixture
def session(p4info):
    from p4sim.p4runtime_server.session import PipelineSession
    return PipelineSession(p4info, b"", None, None)


DEVICE_ID = 1


@pytest.fixture
def device():
    """A real SwitchDevice (device id 1, CPU port 64) for the gRPC tests."""
    switch_device = pytest.importorskip("p4sim.switch.device", reason="p4sim.switch.device not built yet")
    dev = switch_device.SwitchDevice(device_id=DEVICE_ID, cpu_port=64)
    yield dev
    dev.stop()


@pytest.fixture
def server(device):
    """The P4Runtime server on an ephemeral loopback port (``server.port``)."""
    from p4sim.p4runtime_server import P4RuntimeServer
    srv = P4RuntimeServer(device, "127.0.0.1:0")
    srv.port = srv.start()
    yield srv
    srv.stop(grace=0.1)


@pytest.fixture
def loaded(server, device, p4info):
    """The server with the fixture pipeline in place (as after VERIFY_AND_COMMIT)."""
    from p4sim.p4runtime_server.session import PipelineSession
    with device.lock:
        device.pipeline = build_runtime_pipeline(p4info)
        server.service.session = PipelineSession(p4info, b"fixture", 7, None)
    return server
