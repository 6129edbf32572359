"""Competing traffic for experiments: long-lived TCP bulk flows, paced bulk UDP, incast bursts.

Runs inside a Mininet host (``python -m mininet_topos.background ...``). ``--tcp`` is a bulk TCP
transfer as any backup or data-loading job runs it (kernel congestion control, default cubic, as
fast as the network allows) to a ``--sink`` on the destination host. UDP bulk flows are ordinary,
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


TCP_PORT = 5001
_CHUNK = bytes(64 * 1024)


def _stopper() -> list[bool]:
    flag = [False]
    signal.signal(signal.SIGTERM, lambda *_: flag.__setitem__(0, True))
    return flag


def run_tcp(dst: str, port: int, duration: float, cc: str | None) -> dict:
    """Send as fast as TCP allows for ``duration`` s (reconnecting while the sink is not up yet)."""
    stop = _stopper()
    start = time.monotonic()
    sent = 0
    sock = None
    while sock is None and not stop[0] and time.monotonic() - start < min(duration, 30):
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            if cc:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
            sock.connect((dst, port))
        except OSError:
            sock.close()
            sock = None
            time.sleep(0.1)
    if sock is None:
        return {"dst": dst, "kind": "tcp", "error": "sink never accepted", "bytes": 0}
    sock.settimeout(0.5)
    while not stop[0] and time.monotonic() - start < duration:
        try:
            sent += sock.send(_CHUNK)
        except TimeoutError:
            continue
        except OSError:
            break
    sock.close()
    return {"dst": dst, "kind": "tcp", "bytes": sent, "seconds": round(time.monotonic() - start, 3)}


def run_sink(port: int, duration: float) -> dict:
    """Accept bulk TCP connections and discard what arrives (threads, one per connection)."""
    import threading
    stop = _stopper()
    srv = socket.create_server(("0.0.0.0", port), reuse_port=False)
    srv.settimeout(0.5)
    got = [0]

    def drain(conn: socket.socket) -> None:
        conn.settimeout(0.5)
        while not stop[0]:
            try:
                n = len(conn.recv(1 << 16))
            except TimeoutError:
                continue
            except OSError:
                break
            if not n:
                break
            got[0] += n
        conn.close()

    start = time.monotonic()
    while not stop[0] and time.monotonic() - start < duration:
        try:
            conn, _ = srv.accept()
        except TimeoutError:
            continue
        threading.Thread(target=drain, args=(conn,), daemon=True).start()
    srv.close()
    return {"sink": port, "bytes": got[0]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="paced bulk UDP and incast bursts for DLCP experiments")
    p.add_argument("--dst", default="", help="destination IPv4 address")
    p.add_argument("--port", type=int, default=DISCARD_PORT, help="UDP destination port (default 9)")
    p.add_argument("--rate-mbps", type=float, default=20.0, help="paced bulk rate (0: bursts only)")
    p.add_argument("--size", type=int, default=1200, help="UDP payload bytes per packet")
    p.add_argument("--duration", type=float, default=30.0, help="seconds to run (SIGTERM stops early)")
    p.add_argument("--burst", type=int, default=0, help="packets per incast burst (0: none)")
    p.add_argument("--burst-every", type=float, default=0.5, help="seconds between bursts")
    p.add_argument("--tcp", action="store_true", help="one long-lived bulk TCP flow to --dst:--port (5001)")
    p.add_argument("--cc", help="--tcp: congestion control (TCP_CONGESTION; default: the system's net.ipv4.tcp_congestion_control)")
    p.add_argument("--sink", action="store_true", help="accept bulk TCP on --port (5001) and discard it")
    args = p.parse_args(argv)
    if not args.sink and not args.dst:
        p.error("--dst is required (except with --sink)")
    if args.sink or args.tcp:
        port = TCP_PORT if args.port == DISCARD_PORT else args.port
        result = run_sink(port, args.duration) if args.sink else run_tcp(args.dst, port, args.duration, args.cc)
        print(json.dumps(result), flush=True)
        return 0
    if not 0 < args.size <= 1472:
        p.error(f"--size {args.size}: must be 1..1472 (one Ethernet frame)")
    result = run(args.dst, args.port, args.rate_mbps * 1e6, args.size, args.duration, args.burst,
                 args.burst_every)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
