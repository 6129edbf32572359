"""One interface to the two DLCP programs on p4sim: p4src/bmv2/dlcp.p4 (v1model) and
p4src/tofino/dlcp.p4 (TNA, Tofino1 and Tofino2).

Why this exists: the data-plane tests assert the SAME behaviour on both programs; what differs
is inherent to the targets (docs/dataplane.md, "Target differences") and is hidden here:

* queue depth: BMv2 counts each (port, queue)'s packets in and out and ingress reads the
  difference (``set_depth`` writes the counts); Tofino1 compares the TM's ``enq_qdepth`` in egress (``set_depth`` is the depth the
  TM reports); Tofino2 reads the ghost thread's queue length in ingress (``set_depth`` reports it
  through the ghost block, after installing the port's ghost queue base);
* ECMP member counters: a direct counter on ``ecmp_members`` (BMv2) or the indexed Counter
  ``ecmp_member_packets[group * 16 + member]`` (Tofino).

``send`` runs ingress, the TM hand-over and egress: it returns (port, queue, bytes) per
transmitted copy, so a drop decided in either pipe looks the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from p4sim.v1model.pipeline import QueueMetadata, Transmit
from tests.dataplane.packets import host_ip
from tests.dataplane.tables import DlcpTables

ROOT = Path(__file__).resolve().parents[2]
INCLUDE_DIRS = [str(ROOT / "p4src" / "include")]
PROGRAMS = {"bmv2": ROOT / "p4src" / "bmv2" / "dlcp.p4", "tna": ROOT / "p4src" / "tofino" / "dlcp.p4",
            "t2na": ROOT / "p4src" / "tofino" / "dlcp.p4"}
GHOST_QUEUES_PER_PORT = 16
_compiled: dict[str, Any] = {}


def compiled(name: str) -> Any:
    """The program for target ``name``, compiled once per test session."""
    if name not in _compiled:
        if name == "bmv2":
            from p4sim.backend import compile_file
            _compiled[name] = compile_file(str(PROGRAMS[name]), INCLUDE_DIRS)
        else:
            from p4sim.tna.program import compile_tna
            _compiled[name] = compile_tna(str(PROGRAMS[name]), INCLUDE_DIRS, name)
    return _compiled[name]


def ip_int(addr: str) -> int:
    a, b, c, d = (int(x) for x in addr.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


class DlcpTarget:
    """A fresh pipeline of one program with routes 10.0.<p>.0/24 -> port p for p = 2..6."""

    def __init__(self, name: str, routes: bool = True) -> None:
        self.name = name
        self.program = compiled(name)
        self.pipeline = self.program.instantiate()
        self.tables = DlcpTables(self.pipeline)
        if name == "bmv2":
            from p4sim.v1model.pipeline import V1ModelPath
            self.path = V1ModelPath(self.pipeline)
        else:
            from p4sim.tna.pipeline import TnaPath
            self.path = TnaPath(self.pipeline, cpu_port=192)
        self.depths: dict[tuple[int, int], int] = {}
        if routes:
            for port in range(2, 7):
                self.tables.nexthop(port, port)
                self.tables.route(ip_int(host_ip(port)) & 0xFFFFFF00, 24, port)

    @property
    def tofino(self) -> bool:
        return self.name != "bmv2"

    def set_depth(self, port: int, queue: int, depth: int) -> None:
        """Queue ``queue`` of ``port`` holds ``depth`` (packets on BMv2's estimate, cells on Tofino)."""
        self.depths[(port, queue)] = depth
        if self.name == "bmv2":
            self.tables.queue_depth(port, queue, depth)
        elif self.name == "t2na":
            rt = self.tables.rt
            base = port * GHOST_QUEUES_PER_PORT
            table = self.pipeline.tables["DlcpIngress.ghost_queue_base"]
            entry = rt.TableEntry(match=(rt.Exact(port),),
                                  action=rt.ActionCall("pipe.DlcpIngress.selective_drop.set_ghost_queue_base", (base,)))
            if table.find(entry.match, 0) is None:
                table.insert(entry)
            self.path.ghost(base + queue, depth)

    def queued(self, data: bytes, port: int = 1) -> list[Any]:
        """What ingress hands to the TM (QueuedPacket: egress_port, priority = the queue)."""
        return self.path.ingress(data, port, 0)

    def send(self, data: bytes, port: int = 1) -> list[tuple[int, int, bytes]]:
        """Ingress, TM and egress: (egress port, queue, bytes) per transmitted copy."""
        out = []
        if self.name == "bmv2":     # the depth stays what the test set (egress counts the packet out)
            for (p, q), depth in self.depths.items():
                self.tables.queue_depth(p, q, depth)
        for qp in self.path.ingress(data, port, 0):
            # the TM's report: the port's occupancy (BMv2) or the queue's (Tofino); at least the set depth
            depth = self.depths.get((qp.egress_port, qp.priority), 0)
            for o in self.path.egress(qp, QueueMetadata(0, depth, depth, 0, qp.priority), 0):
                if isinstance(o, Transmit):
                    out.append((o.port, qp.priority, o.data))
        return out

    def forwarded(self, data: bytes, port: int = 1) -> list[tuple[int, int]]:
        """(egress port, queue) of every transmitted copy."""
        return [(p, q) for p, q, _ in self.send(data, port)]

    def member_packets(self, group: int, members: int) -> list[int]:
        """Packets counted per member index of ECMP group ``group``."""
        if self.name == "bmv2":
            by_index = {e.match[1].value: e.packets for e in self.pipeline.tables["DlcpIngress.ecmp_members"]
                        if e.match[0].value == group}
            return [by_index.get(i, 0) for i in range(members)]
        cells = self.pipeline.counters["DlcpIngress.ecmp_member_packets"].cells
        return [cells[(group & 0xFF) * 16 + i][0] for i in range(members)]

    def counter(self, name: str, index: int) -> int:
        """Packets counted in cell ``index`` of the indexed counter ``name``."""
        return self.pipeline.counters[name].cells[index][0]
