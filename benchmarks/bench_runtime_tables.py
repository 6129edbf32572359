"""Benchmark the runtime match engine: lookups/s per table kind against a plain-dict baseline
measured in the same run, and the memory of a 100,000-entry exact table (tracemalloc).

Run: .venv/bin/python benchmarks/bench_runtime_tables.py [--quick]
"""

from __future__ import annotations

import argparse
import random
import time
import tracemalloc

from benchmode import add_quick_flag, announce

from p4sim.runtime.hashes import compute, pack_fields
from p4sim.runtime.tables import ActionCall, Exact, KeyField, Lpm, Table, TableEntry, Ternary


def rate(fn, keys) -> float:
    start = time.perf_counter()
    for k in keys:
        fn(k)
    return len(keys) / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_quick_flag(ap)
    args = ap.parse_args()
    announce(args.quick)
    n_entries = 2_000 if args.quick else 100_000      # exact table size (memory figure too)
    n_lookups = 5_000 if args.quick else 200_000
    rng = random.Random(1)
    # baseline: a bare dict lookup on tuple keys
    base = {(i,): i for i in range(n_entries)}
    keys = [(rng.randrange(n_entries),) for _ in range(n_lookups)]
    baseline = rate(base.get, keys)

    exact = Table("t", [KeyField("x", "exact", 32)], 2 * n_entries, ["a"], None)
    for i in range(n_entries):
        exact.insert(TableEntry((Exact(i),), ActionCall("a", (i & 0x1FF,))))
    r_exact = rate(exact.lookup, keys)

    lpm = Table("t", [KeyField("dst", "lpm", 32)], 2000, ["a"], None)
    for i in range(1000):
        plen = rng.choice((8, 16, 24, 32))
        v = rng.getrandbits(32) & (((1 << plen) - 1) << (32 - plen))
        try:
            lpm.insert(TableEntry((Lpm(v, plen),), ActionCall("a", (i,))))
        except Exception:  # noqa: BLE001 - duplicate random prefix
            pass
    lkeys = [(rng.getrandbits(32),) for _ in range(n_lookups)]
    r_lpm = rate(lpm.lookup, lkeys)

    tern = Table("t", [KeyField("x", "ternary", 16)], 200, ["a"], None)
    for i in range(100):
        m = rng.getrandbits(16)
        tern.insert(TableEntry((Ternary(rng.getrandbits(16) & m, m),), ActionCall("a"), priority=i + 1))
    tkeys_unique = [(rng.getrandbits(16),) for _ in range(n_lookups)]
    r_tern = rate(tern.lookup, tkeys_unique)
    tkeys_flow = [(rng.choice((0x0800, 0x86DD, 0x0806)),) for _ in range(n_lookups)]
    r_tern_memo = rate(tern.lookup, tkeys_flow)

    data = pack_fields([(0x0A000001, 32), (0x0A000002, 32), (6, 8), (1234, 16), (80, 16)])
    r_crc = rate(lambda _: compute("crc32", data), range(n_lookups // 4))
    r_csum = rate(lambda _: compute("csum16", data), range(n_lookups // 4))

    tracemalloc.start()
    t = Table("t", [KeyField("x", "exact", 32)], 2 * n_entries, ["a"], None)
    for i in range(n_entries):
        t.insert(TableEntry((Exact(i),), ActionCall("a", (i & 0x1FF,))))
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    print(f"baseline dict.get on tuple keys      {baseline:12,.0f} lookups/s  (1.00x)")
    print(f"exact, {n_entries:,} entries{' ' * (22 - len(f'{n_entries:,}'))}{r_exact:12,.0f} lookups/s  ({r_exact / baseline:.2f}x)")
    print(f"lpm, {len(lpm):,} routes (4 lengths)        {r_lpm:12,.0f} lookups/s  ({r_lpm / baseline:.2f}x)")
    print(f"ternary, 100 entries, unique keys    {r_tern:12,.0f} lookups/s  ({r_tern / baseline:.2f}x)")
    print(f"ternary, 100 entries, 3 flows (memo) {r_tern_memo:12,.0f} lookups/s  ({r_tern_memo / baseline:.2f}x)")
    print(f"crc32 over a 13-byte 5-tuple         {r_crc:12,.0f} hashes/s   ({r_crc / baseline:.2f}x)")
    print(f"csum16 over a 13-byte 5-tuple        {r_csum:12,.0f} hashes/s   ({r_csum / baseline:.2f}x)")
    print(f"memory, {n_entries:,} exact entries{' ' * (21 - len(f'{n_entries:,}'))}{current / 2**20:8.1f} MiB held, {peak / 2**20:.1f} MiB peak")


if __name__ == "__main__":
    main()
