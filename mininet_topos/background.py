"""Competing traffic for experiments: paced bulk UDP flows and periodic incast bursts.

Runs inside a Mininet host (``python -m mininet_topos.background ...``). Bulk flows are ordinary,
non-DLCP UDP (so the switches route them per flow, in the default queue); a burst sends ``--burst``
packets back to back every ``--burst-every`` seconds, the incast pattern that builds queues.
Counts are printed as one JSON line at exit so the runner can record what competed.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import time

DISCARD_PORT = 9  # RFC 863 discard: nothing listens, the receiver host just drops it


def run(dst: str, port: int, rate_bps: float, size: int, duration: float, burst: int,
        burst_every: float) -> dict:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = bytes(size)
    gap = size * 8 / rate_bps if rate_bps > 0 else None
    start = time.monotonic()
    next_send = start
    next_burst = start + burst_every if burst else float("inf")
    sent = errors = 0
    stop = False

    def _stop(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    while not stop:
        now = time.monotonic()
        if now - start >= duration:
            break
        if now >= next_burst:
            for _ in range(burst):
                try:
                    sock.sendto(payload, (dst, port))
                    sent += 1
                except OSError:
                    errors += 1
            next_burst += burst_every
        if gap is not None and now >= next_send:
            try:
                sock.sendto(payload, (dst, port))
                sent += 1
            except OSError:
                errors += 1  # ENOBUFS when the link is saturated: keep going
            next_send += gap
            if next_send < now - 0.1:  # fell far behind: do not burst to catch up
                next_send = now
        sleep_for = min(next_send if gap else next_burst, next_burst) - time.monotonic()
        if sleep_for > 0:
            time.sleep(min(sleep_for, 0.01))
    return {"dst": dst, "sent": sent, "errors": errors, "bytes": sent * size,
            "seconds": round(time.monotonic() - start, 3)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="paced bulk UDP and incast bursts for DLCP experiments")
    p.add_argument("--dst", required=True, help="destination IPv4 address")
    p.add_argument("--port", type=int, default=DISCARD_PORT, help="UDP destination port (default 9)")
    p.add_argument("--rate-mbps", type=float, default=20.0, help="paced bulk rate (0: bursts only)")
    p.add_argument("--size", type=int, default=1200, help="UDP payload bytes per packet")
    p.add_argument("--duration", type=float, default=30.0, help="seconds to run (SIGTERM stops early)")
    p.add_argument("--burst", type=int, default=0, help="packets per incast burst (0: none)")
    p.add_argument("--burst-every", type=float, default=0.5, help="seconds between bursts")
    args = p.parse_args(argv)
    if not 0 < args.size <= 1472:
        p.error(f"--size {args.size}: must be 1..1472 (one Ethernet frame)")
    result = run(args.dst, args.port, args.rate_mbps * 1e6, args.size, args.duration, args.burst,
                 args.burst_every)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
