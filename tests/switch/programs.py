"""Compiled test programs and probe packets shared by the switch tests.

Tests that need the p4sim compiler or the v1model packet path skip with a reason until those
parts exist (``p4sim.backend.compile_file``, ``p4sim.v1model.pipeline.V1ModelPath``).
"""

from __future__ import annotations

import functools
import importlib
import os
import struct

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

HERE = os.path.dirname(os.path.abspath(__file__))
TM_PROBE_P4 = os.path.join(HERE, "p4", "tm_probe.p4")
CLONE_RECIRC_P4 = os.path.join(HERE, "p4", "clone_recirc.p4")
PROBE_PORT = 9999
PROBE_FIELDS = ("seq", "enq_timestamp", "enq_qdepth", "deq_qdepth", "deq_timedelta", "qid", "egress_port")
_PROBE = struct.Struct("!7I")


@functools.cache
def compiled(path: str):
    from p4sim.backend import compile_file
    return compile_file(path)


@functools.cache
def missing_parts(program: str = TM_PROBE_P4) -> str | None:
    """Why ``program`` cannot run here yet (None when it can): compiles it once as the probe."""
    try:
        backend = importlib.import_module("p4sim.backend")
        v1 = importlib.import_module("p4sim.v1model.pipeline")
    except ImportError as err:
        return f"the p4sim compiler / v1model path is not importable yet ({err})"
    if not hasattr(backend, "compile_file") or not hasattr(v1, "V1ModelPath"):
        return "p4sim.backend.compile_file or p4sim.v1model.pipeline.V1ModelPath does not exist yet"
    from p4sim.errors import P4UnsupportedError
    try:
        compiled(program)
    except (ImportError, NotImplementedError) as err:
        return f"the p4sim compiler is not complete yet ({type(err).__name__}: {err})"
    except SyntaxError as err:   # the back end generated invalid Python: its bug, reported as a skip
        return f"p4sim's back end generates invalid Python for {os.path.basename(program)} ({err})"
    except P4UnsupportedError as err:
        return f"p4sim does not support {os.path.basename(program)} yet: {err}"
    return None


def needs_program(program: str = TM_PROBE_P4):
    """Skip marker for tests that run ``program`` on p4sim."""
    why = missing_parts(program)
    return pytest.mark.skipif(why is not None, reason=str(why))


needs_compiler = needs_program(TM_PROBE_P4)


def probe_frame(seq: int, prio: int = 0, size: int = 100, src_mac: str = "02:77:00:00:00:01",
                dst_mac: str = "02:77:00:00:00:02") -> bytes:
    """An IPv4/UDP probe to port 9999 whose DSCP top bits select the priority queue."""
    pkt = Ether(src=src_mac, dst=dst_mac) / IP(src="10.77.0.1", dst="10.77.0.200", tos=prio << 5) / \
        UDP(sport=4000, dport=PROBE_PORT) / Raw(_PROBE.pack(seq, 0, 0, 0, 0, 0, 0))
    pad = max(0, size - len(pkt))
    return bytes(pkt / Raw(bytes(pad)))


def read_probe(frame: bytes) -> dict | None:
    pkt = Ether(frame)
    if UDP not in pkt or pkt[UDP].dport != PROBE_PORT:
        return None
    payload = bytes(pkt[UDP].payload)
    return dict(zip(PROBE_FIELDS, _PROBE.unpack_from(payload), strict=True))
