"""Helpers shared by the controller tests (imported by name: this directory has no __init__.py,
so that ``tests/controller`` never shadows the ``controller`` package)."""

from __future__ import annotations

import textwrap
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
P4INFO = FIXTURES / "dlcp.p4info.txtpb"


def three_switch_yaml(ports: list[int], p4info: Path = P4INFO, config: str = "/dev/null", extra: str = "") -> str:
    """s1 - s3 (two parallel links) - s2, host h1 on s1, h2 on s2; gRPC ports from ``ports``."""
    return textwrap.dedent(f"""\
        defaults:
          target: p4sim
          pipeline: {{p4info: {p4info}, config: {config}}}
        switches:
          s1: {{grpc: "127.0.0.1:{ports[0]}", device_id: 1}}
          s2: {{grpc: "127.0.0.1:{ports[1]}", device_id: 2}}
          s3: {{grpc: "127.0.0.1:{ports[2]}", device_id: 3}}
        hosts:
          h1: {{ip: 10.0.0.1, mac: "00:00:00:00:00:01", switch: s1, port: 1}}
          h2: {{ip: 10.0.0.2, mac: "00:00:00:00:00:02", switch: s2, port: 1}}
        links:
          - [s1:2, s3:1]
          - [s1:3, s3:2]
          - [s3:3, s2:2]
        """) + extra

