"""A stand-in device for p4sim's real P4Runtime server, used until ``p4sim compile`` exists.

The server (``p4sim.p4runtime_server``) and the runtime tables/counters (``p4sim.runtime``) are the
real ones; only the device is reduced to what the server touches (device id, lock, program,
pipeline state), built from the hand-written DLCP P4Info. No packets flow through it: tests that
need traffic use a real ``p4sim switch`` process instead.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

from p4.config.v1 import p4info_pb2

KINDS = {p4info_pb2.MatchField.EXACT: "exact", p4info_pb2.MatchField.LPM: "lpm",
         p4info_pb2.MatchField.TERNARY: "ternary", p4info_pb2.MatchField.RANGE: "range",
         p4info_pb2.MatchField.OPTIONAL: "optional"}


def build_pipeline(p4info: p4info_pb2.P4Info) -> SimpleNamespace:
    from p4sim.backend.rt import ValueSet
    from p4sim.runtime import externs, pre, tables
    actions = {a.preamble.id: a.preamble.name for a in p4info.actions}
    direct = {c.direct_table_id: c.preamble.name for c in p4info.direct_counters}
    tbls = {}
    for t in p4info.tables:
        keys = [tables.KeyField(m.name, KINDS[m.match_type], m.bitwidth) for m in t.match_fields]
        tbls[t.preamble.name] = tables.Table(t.preamble.name, keys, t.size, [actions[r.id] for r in t.action_refs],
                                             None)
    return SimpleNamespace(
        tables=tbls, action_profiles={},
        counters={c.preamble.name: externs.Counter(c.preamble.name, c.size) for c in p4info.counters},
        direct_counters={c.preamble.name: externs.DirectCounter(c.preamble.name, table=direct.get(c.direct_table_id))
                         for c in p4info.direct_counters},
        meters={}, direct_meters={},
        registers={r.preamble.name: externs.Register(r.preamble.name, r.size, r.type_spec.bitstring.bit.bitwidth)
                   for r in p4info.registers},
        value_sets={v.preamble.name: ValueSet(v.preamble.name, [m.bitwidth for m in v.match], v.size)
                    for v in p4info.value_sets},
        pre=pre.PacketReplicationEngine(), digest_sink=None, log=None)


class StandInDevice:
    """What ``P4RuntimeServer`` needs from a switch, with the DLCP program already loaded."""

    def __init__(self, device_id: int, p4info: p4info_pb2.P4Info, loaded: bool = True) -> None:
        self.device_id = device_id
        self.lock = threading.RLock()
        self.program = SimpleNamespace(name="dlcp", p4info=p4info, device_config=lambda: b"stand-in",
                                       instantiate=lambda: build_pipeline(p4info)) if loaded else None
        self.pipeline = build_pipeline(p4info) if loaded else None

    def load_program(self, program) -> None:
        with self.lock:
            self.program, self.pipeline = program, program.instantiate()

    def set_packet_in_handler(self, fn) -> None:
        pass

    def set_digest_handler(self, fn) -> None:
        pass


class StandInSwitch:
    """A real P4Runtime gRPC server over a stand-in device; ``restart`` loses all state, like a crash."""

    def __init__(self, device_id: int, p4info: p4info_pb2.P4Info, port: int = 0) -> None:
        from p4sim.p4runtime_server.server import P4RuntimeServer
        self._server_cls = P4RuntimeServer
        self.device_id, self.p4info = device_id, p4info
        self.device = StandInDevice(device_id, p4info)
        self.server = P4RuntimeServer(self.device, f"127.0.0.1:{port}")
        self.port = self.server.start()
        self.address = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.stop(grace=0)

    def restart(self) -> None:
        self.stop()
        self.device = StandInDevice(self.device_id, self.p4info)
        self.server = self._server_cls(self.device, self.address)
        self.server.start()

    def entries(self, table: str) -> list:
        return list(self.device.pipeline.tables[table])
