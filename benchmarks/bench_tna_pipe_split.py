"""Benchmark: CPU per packet of ingress alone and of egress alone, p4src/tofino/dlcp.p4 on p4sim's TNA
model against p4src/bmv2/dlcp.p4 on the v1model path, the same tables and packets, in the same run.

Why this exists: issue 15 asks the TNA path's per-packet cost to come within a few % of v1model's
where the program logic is the same; the whole-path rate (bench_tna_pipeline.py) moves by about
0.1 between runs on a loaded machine. Timing each pipe alone over the same packets, as the minimum
of many interleaved rounds, shows which pipe the difference sits in and how large it is in µs
(docs/performance.md, "The generated TNA code's per-packet work").

Egress runs over the packets ingress queued, with fixed queue metadata (depth 3, 2; no drop).

Run: .venv/bin/python benchmarks/bench_tna_pipe_split.py [--packets N] [--rounds R] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_dataplane_pipeline import packet_cases  # noqa: E402
from bench_tna_pipeline import setup  # noqa: E402
from benchmode import add_quick_flag, announce  # noqa: E402

from p4sim.v1model.packet_path import QueueMetadata  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=None, help="packets per case (default 400)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds, minimum kept (default 25)")
    add_quick_flag(parser)
    args = parser.parse_args()
    announce(args.quick)
    n = args.packets if args.packets is not None else (20 if args.quick else 400)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 25)
    targets = {name: setup(name) for name in ("bmv2", "tna")}
    qmeta = QueueMetadata(enq_timestamp=100, enq_qdepth=3, deq_qdepth=2, deq_timedelta=5, qid=0)
    for case, frames in packet_cases(n).items():
        queued = {name: [q for f in frames for q in t.path.ingress(f, 1, 0)] for name, t in targets.items()}
        best: dict[tuple[str, str], float] = {}
        for _ in range(rounds):
            for name, t in targets.items():
                ingress, egress = t.path.ingress, t.path.egress
                start = time.process_time()
                for f in frames:
                    ingress(f, 1, 0)
                middle = time.process_time()
                for q in queued[name]:
                    egress(q, qmeta, 10)
                end = time.process_time()
                for part, spent, count in (("in", middle - start, len(frames)), ("eg", end - middle, len(queued[name]))):
                    us = spent / max(count, 1) * 1e6
                    best[name, part] = min(best.get((name, part), us), us)
        v_in, v_eg, t_in, t_eg = best["bmv2", "in"], best["bmv2", "eg"], best["tna", "in"], best["tna", "eg"]
        print(f"{case:38s} ingress v1model {v_in:.2f} tna {t_in:.2f} us ({t_in - v_in:+.2f}); "
              f"egress v1model {v_eg:.2f} tna {t_eg:.2f} us ({t_eg - v_eg:+.2f}); "
              f"TNA/v1model time {(t_in + t_eg) / max(v_in + v_eg, 1e-9):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
