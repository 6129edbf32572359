"""A hostile P4Runtime fuzzer against a real ``p4sim switch`` process over gRPC (issue 11).

At least ``MINIMUM`` requests: random bytes to every RPC, mutated valid messages (bit flips,
truncation, splices, random ids and values), and out-of-order stream traffic (packet-outs and
digest acks before arbitration, arbitration for other devices, duplicate ids, garbage frames).
Checked throughout: the process never dies and always answers Capabilities within 5 s (no hangs);
every failed Write is atomic (ROLLBACK_ON_ERROR): the tables read back equal to before the batch;
the switch's RSS after the run is within 10 % of its RSS after warm-up; SIGTERM ends it with
status 0. ``DLCP_FUZZ_SECONDS`` (``make fuzz``) keeps going for that long; ``DLCP_FUZZ_SEED``
repeats a run. Budget in ``make test``: about 60-120 s on a shared 2-core machine.
"""

from __future__ import annotations

import os
import queue
import random
import time

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from tests.p4runtime.switch_process import close, start_switch, stop_switch
from tests.p4runtime.test_p4runtime_shell import PROGRAM

MINIMUM = 10_000
DEVICE_ID = 1
ELECTION_ID = 10
METHODS = ("Write", "Read", "SetForwardingPipelineConfig", "GetForwardingPipelineConfig", "Capabilities")
Req = p4runtime_pb2.WriteRequest


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * 4


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One of: bit flips, truncation, a random splice, a duplicated slice, or random bytes."""
    buf = bytearray(data)
    kind = rng.randrange(6)
    if kind == 0 or not buf:
        return rng.randbytes(rng.randrange(0, 200))
    if kind == 1:
        for _ in range(rng.randrange(1, 6)):
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
    elif kind == 2:
        del buf[rng.randrange(len(buf)):]
    elif kind == 3:
        i = rng.randrange(len(buf))
        buf[i:i + rng.randrange(0, 8)] = rng.randbytes(rng.randrange(0, 8))
    elif kind == 4:
        i, j = sorted(rng.randrange(len(buf) + 1) for _ in range(2))
        buf[j:j] = buf[i:j] * rng.randrange(1, 4)
    else:
        buf[rng.randrange(len(buf))] = rng.choice((0x00, 0xFF, 0x7F, 0x80))
    return bytes(buf)


class Fuzzer:
    def __init__(self, address: str, pid: int, rng: random.Random) -> None:
        self.rng = rng
        self.pid = pid
        self.channel = grpc.insecure_channel(address, options=[("grpc.max_receive_message_length", 1 << 28)])
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.raw = {m: (self.channel.unary_stream if m == "Read" else self.channel.unary_unary)(
            f"/p4.v1.P4Runtime/{m}", request_serializer=None, response_deserializer=None) for m in METHODS}
        self.requests = 0
        self.failed_batches = 0
        self.codes: dict[str, int] = {}
        Get = p4runtime_pb2.GetForwardingPipelineConfigRequest
        self.config = self.stub.GetForwardingPipelineConfig(Get(device_id=DEVICE_ID), timeout=30).config
        self.tables = [t for t in self.config.p4info.tables if not t.is_const_table]
        self.actions = {a.preamble.id: a for a in self.config.p4info.actions}

    # -- valid seeds ------------------------------------------------------------------------------
    def entry(self) -> p4runtime_pb2.TableEntry:
        rng = self.rng
        table = rng.choice(self.tables)
        e = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
        for m in table.match_fields:
            width = (m.bitwidth + 7) // 8
            value = rng.randrange(1, 1 << m.bitwidth).to_bytes(width, "big")
            fm = e.match.add(field_id=m.id)
            kind = m.match_type
            if kind == m.EXACT:
                fm.exact.value = value.lstrip(b"\0") or b"\0"
            elif kind == m.LPM:
                fm.lpm.value, fm.lpm.prefix_len = value, m.bitwidth
            elif kind == m.TERNARY:
                fm.ternary.value, fm.ternary.mask = value, value
            elif kind == m.RANGE:
                fm.range.low, fm.range.high = b"\0", value
            else:
                fm.optional.value = value
        if any(m.match_type in (m.TERNARY, m.RANGE, m.OPTIONAL) for m in table.match_fields):
            e.priority = rng.randrange(1, 100)
        ref = rng.choice(table.action_refs)
        action = self.actions.get(ref.id)
        e.action.action.action_id = ref.id
        for p in action.params if action else ():
            e.action.action.params.add(param_id=p.id, value=rng.randrange(1 << min(p.bitwidth, 16)).to_bytes(
                (p.bitwidth + 7) // 8, "big").lstrip(b"\0") or b"\0")
        return e

    def write_request(self, n: int) -> Req:
        req = Req(device_id=DEVICE_ID, atomicity=Req.ROLLBACK_ON_ERROR)
        req.election_id.low = ELECTION_ID
        for _ in range(n):
            req.updates.add(type=self.rng.choice((1, 1, 2, 3)), entity=p4runtime_pb2.Entity(table_entry=self.entry()))
        return req

    def read_all(self) -> list[bytes]:
        req = p4runtime_pb2.ReadRequest(device_id=DEVICE_ID)
        req.entities.add().table_entry.SetInParent()
        out = [e.SerializeToString(deterministic=True) for r in self.stub.Read(req, timeout=30) for e in r.entities]
        return sorted(out)

    # -- one step ---------------------------------------------------------------------------------
    def call(self, method: str, payload: bytes) -> None:
        self.requests += 1
        try:
            if method == "Read":
                for _ in self.raw[method](payload, timeout=10):
                    pass
            else:
                self.raw[method](payload, timeout=60 if method == "SetForwardingPipelineConfig" else 10)   # VERIFY compiles
            code = "OK"
        except grpc.RpcError as err:
            code = err.code().name
            assert err.code() not in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE), \
                f"{method} hung or the server went away: {err.details()}"
        self.codes[code] = self.codes.get(code, 0) + 1

    def atomic_write(self) -> None:
        """A mutated ROLLBACK_ON_ERROR batch; when it fails the tables must be as before."""
        big = self.rng.random() < 0.02        # >= 100 updates: the heap-freeze path (issue 11 leak)
        req = self.write_request(self.rng.randrange(100, 130) if big else self.rng.randrange(1, 12))
        payload = req.SerializeToString()
        if self.rng.random() < 0.7:
            payload = mutate(self.rng, payload)
        before = self.read_all()
        self.requests += 1
        try:
            self.raw["Write"](payload, timeout=10)
            return
        except grpc.RpcError as err:
            assert err.code() not in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE), err.details()
            self.codes[err.code().name] = self.codes.get(err.code().name, 0) + 1
        self.failed_batches += 1
        assert self.read_all() == before, "a failed ROLLBACK_ON_ERROR batch changed the tables"

    def seeds(self, method: str) -> bytes:
        rng = self.rng
        if method == "Write":
            return self.write_request(rng.randrange(1, 4)).SerializeToString()
        if method == "Read":
            req = p4runtime_pb2.ReadRequest(device_id=DEVICE_ID)
            req.entities.add().table_entry.CopyFrom(self.entry() if rng.random() < 0.5 else p4runtime_pb2.TableEntry())
            req.entities.add().counter_entry.SetInParent()
            return req.SerializeToString()
        if method == "SetForwardingPipelineConfig":
            req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
                device_id=DEVICE_ID, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY)
            req.election_id.low = ELECTION_ID
            req.config.p4info.CopyFrom(self.config.p4info)
            cfg = self.config.p4_device_config
            req.config.p4_device_config = cfg if rng.random() < 0.2 else mutate(rng, cfg[:4096])
            return req.SerializeToString()
        if method == "GetForwardingPipelineConfig":
            return p4runtime_pb2.GetForwardingPipelineConfigRequest(
                device_id=DEVICE_ID, response_type=rng.randrange(5)).SerializeToString()
        return p4runtime_pb2.CapabilitiesRequest().SerializeToString()

    def unary(self) -> None:
        method = self.rng.choice(METHODS)
        seed = self.seeds(method)
        self.call(method, mutate(self.rng, seed) if self.rng.random() < 0.85 else seed)

    def stream_burst(self) -> None:
        """Out-of-order and malformed stream traffic on a fresh StreamChannel."""
        rng = self.rng
        msgs: list[bytes] = []
        for _ in range(rng.randrange(1, 8)):
            m = p4runtime_pb2.StreamMessageRequest()
            kind = rng.randrange(5)
            if kind == 0:
                m.packet.payload = rng.randbytes(rng.randrange(0, 80))
                m.packet.metadata.add(metadata_id=rng.randrange(4), value=rng.randbytes(2))
            elif kind == 1:
                m.digest_ack.digest_id = rng.randrange(1 << 32)
                m.digest_ack.list_id = rng.randrange(1 << 64)
            elif kind == 2:
                m.arbitration.device_id = rng.choice((DEVICE_ID, DEVICE_ID, rng.randrange(1 << 64)))
                eid = rng.choice((None, 0, ELECTION_ID, rng.randrange(1, 9), rng.randrange(1 << 128)))
                if eid is not None:
                    m.arbitration.election_id.high, m.arbitration.election_id.low = eid >> 64, eid & ((1 << 64) - 1)
            data = m.SerializeToString()
            msgs.append(mutate(rng, data) if kind >= 3 or rng.random() < 0.3 else data)
        call = self.channel.stream_stream("/p4.v1.P4Runtime/StreamChannel", request_serializer=None,
                                          response_deserializer=None)(iter(msgs), timeout=5)
        self.requests += len(msgs)
        try:
            for _ in call:
                pass
        except grpc.RpcError as err:
            # DEADLINE_EXCEEDED here is the client's own 5 s bound on a stream that stays open
            # (a backup with nothing to say); the server was not stuck: liveness checks that.
            self.codes["stream:" + err.code().name] = self.codes.get("stream:" + err.code().name, 0) + 1

    def alive(self) -> None:
        caps = self.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5)
        assert caps.p4runtime_api_version


@pytest.mark.fuzz
@pytest.mark.slow
def test_fuzz_p4runtime_against_a_switch_process():
    seconds = float(os.environ.get("DLCP_FUZZ_SECONDS", "0"))
    rng = random.Random(int(os.environ.get("DLCP_FUZZ_SEED", "1111")))
    proc, address = start_switch(PROGRAM, "--device-id", str(DEVICE_ID), "--cpu-port", "64")
    try:
        primary = p4runtime_pb2.StreamMessageRequest()
        primary.arbitration.device_id = DEVICE_ID
        primary.arbitration.election_id.low = ELECTION_ID
        channel = grpc.insecure_channel(address)
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        outbox: queue.Queue = queue.Queue()
        outbox.put(primary)
        stream = stub.StreamChannel(iter(outbox.get, None))
        assert next(stream).arbitration.status.code == 0        # primary for the whole run
        fz = Fuzzer(address, proc.pid, rng)
        start = time.monotonic()
        rss_warm = None
        while fz.requests < MINIMUM or time.monotonic() - start < seconds:
            step = rng.random()
            if step < 0.15:
                fz.atomic_write()
            elif step < 0.25:
                fz.stream_burst()
            else:
                fz.unary()
            if fz.requests // 250 != (fz.requests - 1) // 250:
                fz.alive()
                assert proc.poll() is None, "the switch process died"
            if rss_warm is None and fz.requests >= MINIMUM // 5:
                rss_warm = _rss_kib(proc.pid)
        fz.alive()
        elapsed = time.monotonic() - start
        time.sleep(0.5)          # let the deferred heap freeze settle before the last sample
        rss_end = _rss_kib(proc.pid)
        print(f"p4runtime fuzz: {fz.requests} requests in {elapsed:.0f} s, {fz.failed_batches} failed atomic "
              f"batches checked, RSS {rss_warm} -> {rss_end} KiB, codes {sorted(fz.codes.items())}")
        assert rss_end <= rss_warm * 1.10, f"RSS grew {rss_warm} -> {rss_end} KiB over the run"
        internal = {c: n for c, n in fz.codes.items() if "INTERNAL" in c}
        assert not internal, f"server bugs (INTERNAL) answered: {internal}"
        outbox.put(None)
        stream.cancel()
        channel.close()
        fz.channel.close()
        assert "Traceback" not in stop_switch(proc)
    finally:
        close(proc)
