"""P4Runtime table insert rate (batched Writes over real gRPC) and memory with 100,000 entries.

The server (a SwitchDevice with the fixture pipeline, a real P4RuntimeServer on a loopback port)
runs in this process; the client runs in a separate process, as a controller would. Baseline,
measured in the same run: inserting the same entries straight into the runtime ``Table`` (no
gRPC, no decoding). Figures are printed as rates and as ratios to that baseline.
Run: .venv/bin/python benchmarks/bench_p4runtime_insert.py [--entries N] [--batch B] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)   # for tests.p4runtime helpers (fixture P4Info, runtime pipeline, client)

from benchmode import add_quick_flag, announce  # noqa: E402

T_EXACT, A_FORWARD = 33554433, 16777218


def load_p4info(size: int):
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    from tests.p4runtime.conftest import FIXTURE_P4INFO
    with open(FIXTURE_P4INFO) as f:
        p4info = text_format.Parse(f.read(), p4info_pb2.P4Info())
    for t in p4info.tables:
        if t.preamble.id == T_EXACT:
            t.size = size
    return p4info


def canon(v: int) -> bytes:
    return v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big")


def make_update(i: int, kind: int = 1):
    from p4.v1 import p4runtime_pb2
    te = p4runtime_pb2.TableEntry(table_id=T_EXACT)
    te.match.add(field_id=1).exact.value = canon(0x020000000000 + i)
    te.match.add(field_id=2).exact.value = canon(i % 512)
    a = te.action.action
    a.action_id = A_FORWARD
    a.params.add(param_id=1, value=canon(i % 512))
    a.params.add(param_id=2, value=canon(0x0A0000000000 + i))
    return p4runtime_pb2.Update(type=kind, entity=p4runtime_pb2.Entity(table_entry=te))


def client_process(port: int, n: int, batch: int, singles: int, out) -> None:
    """The controller side: pre-serialised batches (server capacity), then one-update Writes and
    a Read of everything (with the client's own protobuf costs included)."""
    import grpc
    from p4.v1 import p4runtime_pb2

    from tests.p4runtime.client import StreamClient
    client = StreamClient(port, 1)
    client.arbitrate(1)
    client.recv_arbitration()
    raw = client.channel.unary_unary("/p4.v1.P4Runtime/Write", request_serializer=None,
                                     response_deserializer=None)
    t0 = time.perf_counter()
    blobs = []
    for off in range(0, n, batch):
        req = p4runtime_pb2.WriteRequest(device_id=1)
        req.election_id.low = 1
        req.updates.extend(make_update(i) for i in range(off, min(n, off + batch)))
        blobs.append(req.SerializeToString())
    build = time.perf_counter() - t0
    start = time.perf_counter()
    for blob in blobs:
        raw(blob, timeout=120)
    server_side = time.perf_counter() - start
    results = {"batched": n / server_side, "batched_e2e": n / (server_side + build)}
    start = time.perf_counter()
    got = client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=T_EXACT)),
                      timeout=600)
    results["read"] = len(got) / (time.perf_counter() - start)
    single_n = min(singles, n)
    start = time.perf_counter()
    for i in range(single_n):
        client.write(make_update(i, kind=p4runtime_pb2.Update.DELETE))
    results["single"] = single_n / (time.perf_counter() - start)
    client.close()
    del grpc
    out.put(results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=None, help="entries installed (default 100,000)")
    ap.add_argument("--batch", type=int, default=1000)
    add_quick_flag(ap)
    args = ap.parse_args()
    announce(args.quick)
    n = args.entries if args.entries is not None else (1000 if args.quick else 100_000)
    singles = 100 if args.quick else 2000        # one-update Writes (deletes of the first entries)

    import psutil

    from p4sim.p4runtime_server import P4RuntimeServer
    from p4sim.p4runtime_server.session import PipelineSession
    from p4sim.runtime.tables import ActionCall, Exact, TableEntry
    from p4sim.switch.device import SwitchDevice
    from tests.p4runtime.conftest import build_runtime_pipeline

    p4info = load_p4info(2 * n)
    table = build_runtime_pipeline(p4info).tables["MyIngress.t_exact"]
    start = time.perf_counter()
    for i in range(n):
        table.insert(TableEntry((Exact(0x020000000000 + i), Exact(i % 512)),
                                ActionCall("MyIngress.forward", (i % 512, 0x0A0000000000 + i))))
    base_rate = n / (time.perf_counter() - start)
    del table
    gc.collect()

    proc = psutil.Process()
    device = SwitchDevice(device_id=1)
    server = P4RuntimeServer(device, "127.0.0.1:0")
    port = server.start()
    with device.lock:
        device.pipeline = build_runtime_pipeline(p4info)
        server.service.session = PipelineSession(p4info, b"", None, None)
    rss_before = proc.memory_info().rss
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=client_process, args=(port, n, args.batch, singles, out))
    child.start()
    results = out.get(timeout=1800)
    child.join()
    # the client deleted the first min(singles, n) entries; memory is per entry still installed
    gc.collect()
    installed = len(device.pipeline.tables["MyIngress.t_exact"])
    rss_after = proc.memory_info().rss
    server.stop()
    device.stop()
    per_entry = (rss_after - rss_before) / max(1, installed)
    print(f"entries: {n}, batch: {args.batch}")
    print(f"baseline runtime Table.insert (no gRPC):   {base_rate:9.0f} entries/s  (1.00x)")
    print(f"batched Write, server side (pre-encoded):  {results['batched']:9.0f} entries/s  "
          f"({results['batched'] / base_rate:.3f}x baseline)")
    print(f"batched Write incl. client protobuf build: {results['batched_e2e']:9.0f} entries/s  "
          f"({results['batched_e2e'] / base_rate:.3f}x baseline)")
    print(f"one update per Write (client stub):        {results['single']:9.0f} updates/s  "
          f"({results['single'] / base_rate:.3f}x baseline)")
    print(f"Read of the whole table (client stub):     {results['read']:9.0f} entries/s  "
          f"({results['read'] / base_rate:.3f}x baseline)")
    print(f"server memory: +{(rss_after - rss_before) / 2**20:.1f} MiB RSS for {installed} entries "
          f"({per_entry:.0f} bytes/entry); server process RSS {rss_after / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
