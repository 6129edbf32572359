"""A ``p4sim switch`` process for the P4Runtime tests: start it on ephemeral ports, learn its gRPC
address from the ``ready`` line, stop it with SIGTERM (checking the exit status) and clean up."""

from __future__ import annotations

import re
import signal
import subprocess
import sys


def start_switch(*args: str) -> tuple[subprocess.Popen, str]:
    """``p4sim switch ARGS --grpc-server-addr 127.0.0.1:0 --ctl-addr 127.0.0.1:0`` unless ARGS name
    addresses; returns (process, "127.0.0.1:PORT")."""
    defaults = [] if "--grpc-server-addr" in args else ["--grpc-server-addr", "127.0.0.1:0"]
    defaults += [] if "--ctl-addr" in args else ["--ctl-addr", "127.0.0.1:0"]
    proc = subprocess.Popen([sys.executable, "-m", "p4sim.cli", "switch", *defaults, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    match = re.search(r"grpc=(\S+)", line)
    if not match:
        proc.kill()
        proc.wait()
        err = proc.stderr.read()
        close(proc)
        raise AssertionError(f"switch did not start: {line!r} {err[-2000:]}")
    return proc, match.group(1)


def stop_switch(proc: subprocess.Popen, timeout: float = 20) -> str:
    """SIGTERM; asserts exit status 0 within ``timeout``; returns what it wrote on stderr."""
    try:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=timeout) == 0
        return proc.stderr.read()
    finally:
        close(proc)


def close(proc: subprocess.Popen) -> None:
    """Kill if still running and close the pipes (idempotent)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None and not pipe.closed:
            pipe.close()
