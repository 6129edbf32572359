"""The line a started ``p4sim switch`` prints once it serves, and its reader.

A launcher passes port 0 for the gRPC and ctl addresses and learns the ports the switch bound from this
line, instead of probing free ports that another process may take before the switch binds them (the
race that failed CI runs). The format lives here, beside its parser, so the two cannot drift apart.
"""

from __future__ import annotations

import re


def ready_line(name: str, device_id: int, ctl_address: str, grpc_address: str, ports: str) -> str:
    """``p4sim switch NAME ready: device_id=N ctl=HOST:PORT grpc=HOST:PORT ports=1@eth1,...``;
    GRPC_ADDRESS is "-" when the switch serves no P4Runtime."""
    return (f"p4sim switch {name} ready: device_id={device_id} ctl={ctl_address} "
            f"grpc={grpc_address} ports={ports}")


def ready_ports(line: str) -> tuple[int, int] | None:
    """(gRPC port, ctl port) from a ``ready_line``; None if LINE is not one or it has no gRPC port."""
    if " ready: " not in line:
        return None
    found = [re.search(rf"\b{key}=\S+:(\d+)", line) for key in ("grpc", "ctl")]
    return (int(found[0].group(1)), int(found[1].group(1))) if all(found) else None
