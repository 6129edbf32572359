"""P4Runtime table insert rate (batched Writes over real gRPC) and memory with 100,000 entries.

Baseline, measured in the same run: inserting the same entries straight into the runtime
``Table`` (no gRPC, no decoding). Figures are printed as rates and as ratios to that baseline.
Run: .venv/bin/python benchmarks/bench_p4runtime_insert.py [--entries N] [--batch B]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import psutil
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)   # for tests.p4runtime helpers (fixture P4Info, runtime pipeline, client)

from p4sim.p4runtime_server import P4RuntimeServer  # noqa: E402
from p4sim.p4runtime_server.session import PipelineSession  # noqa: E402
from p4sim.runtime.tables import ActionCall, Exact, TableEntry  # noqa: E402
from p4sim.switch.device import SwitchDevice  # noqa: E402
from tests.p4runtime.client import StreamClient  # noqa: E402
from tests.p4runtime.conftest import FIXTURE_P4INFO, build_runtime_pipeline  # noqa: E402

T_EXACT, A_FORWARD = 33554433, 16777218
U = p4runtime_pb2.Update


def load_p4info(size: int) -> p4info_pb2.P4Info:
    with open(FIXTURE_P4INFO) as f:
        p4info = text_format.Parse(f.read(), p4info_pb2.P4Info())
    for t in p4info.tables:
        if t.preamble.id == T_EXACT:
            t.size = size
    return p4info


def canon(v: int) -> bytes:
    return v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big")


def make_update(i: int) -> p4runtime_pb2.Update:
    te = p4runtime_pb2.TableEntry(table_id=T_EXACT)
    te.match.add(field_id=1).exact.value = canon(0x020000000000 + i)
    te.match.add(field_id=2).exact.value = canon(i % 512)
    a = te.action.action
    a.action_id = A_FORWARD
    a.params.add(param_id=1, value=canon(i % 512))
    a.params.add(param_id=2, value=canon(0x0A0000000000 + i))
    return U(type=U.INSERT, entity=p4runtime_pb2.Entity(table_entry=te))


def baseline(p4info: p4info_pb2.P4Info, n: int) -> float:
    table = build_runtime_pipeline(p4info).tables["MyIngress.t_exact"]
    start = time.perf_counter()
    for i in range(n):
        table.insert(TableEntry((Exact(0x020000000000 + i), Exact(i % 512)),
                                ActionCall("MyIngress.forward", (i % 512, 0x0A0000000000 + i))))
    return n / (time.perf_counter() - start)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=1000)
    args = ap.parse_args()
    n = args.entries
    p4info = load_p4info(2 * n)
    base_rate = baseline(p4info, n)

    proc = psutil.Process()
    device = SwitchDevice(device_id=1)
    server = P4RuntimeServer(device, "127.0.0.1:0")
    port = server.start()
    with device.lock:
        device.pipeline = build_runtime_pipeline(p4info)
        server.service.session = PipelineSession(p4info, b"", None, None)
    client = StreamClient(port, 1)
    client.arbitrate(1)
    client.recv_arbitration()
    updates = [make_update(i) for i in range(n)]
    gc.collect()
    rss_before = proc.memory_info().rss
    start = time.perf_counter()
    for off in range(0, n, args.batch):
        client.write(*updates[off:off + args.batch])
    batched = n / (time.perf_counter() - start)
    gc.collect()
    rss_after = proc.memory_info().rss
    assert len(device.pipeline.tables["MyIngress.t_exact"]) == n

    start = time.perf_counter()
    got = client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=T_EXACT)),
                      timeout=600)
    read_rate = len(got) / (time.perf_counter() - start)
    assert len(got) == n

    single_n = min(2000, n)
    deletes = [U(type=U.DELETE, entity=u.entity) for u in updates[:single_n]]
    start = time.perf_counter()
    for d in deletes:
        client.write(d)
    single = single_n / (time.perf_counter() - start)

    client.close()
    server.stop()
    device.stop()
    per_entry = (rss_after - rss_before) / n
    print(f"entries: {n}, batch: {args.batch}")
    print(f"baseline runtime Table.insert:      {base_rate:10.0f} entries/s  (1.00x)")
    print(f"P4Runtime batched Write (gRPC):     {batched:10.0f} entries/s  ({batched / base_rate:.2f}x baseline)")
    print(f"P4Runtime one update per Write:     {single:10.0f} updates/s  ({single / base_rate:.3f}x baseline)")
    print(f"P4Runtime Read of all entries:      {read_rate:10.0f} entries/s  ({read_rate / base_rate:.2f}x baseline)")
    print(f"memory: +{(rss_after - rss_before) / 2**20:.1f} MiB RSS for {n} entries in the server process "
          f"(client in the same process), {per_entry:.0f} bytes/entry; total RSS {rss_after / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
