"""Static checks of p4src: the wire format, the control API names, both targets alike.

These run without any P4 compiler: they read the P4 text (tests/dataplane/p4text.py) and
compare it with docs/contracts-dlcp.md, the BMv2 tree with the Tofino tree, and generated
files with their generators.
"""

from __future__ import annotations

import struct

import pytest

from tests.dataplane import make_stf, p4text
from tests.dataplane.packets import dlcp_header

# docs/contracts-dlcp.md, the DLCP header table, in wire order.
CONTRACT_DLCP_FIELDS = [
    ("version", 4), ("msg_type", 4), ("layer_class", 3), ("reserved0", 1), ("mag_class", 4),
    ("flags", 8), ("dtype", 4), ("reserved1", 4), ("job_id", 16), ("worker_id", 16),
    ("iteration", 32), ("tensor_id", 16), ("count", 16), ("offset", 32), ("seq", 32),
]

CONTRACT_CONSTANTS = {
    "DLCP_UDP_PORT_DEFAULT": 9290, "DLCP_HEADER_LEN": 24, "DLCP_VERSION": 1,
    "DLCP_MSG_DATA": 0, "DLCP_MSG_PROBE": 1, "DLCP_MSG_BITMAP": 2, "DLCP_MSG_DONE": 3,
    "DLCP_MSG_CONTROL": 4,
    "DLCP_FLAG_CRITICAL": 0x80, "DLCP_FLAG_LAST": 0x40, "DLCP_FLAG_RETX": 0x20,
    "DLCP_FLAG_PULL": 0x10, "DLCP_FLAG_ECN_CAPABLE": 0x08,
    "DLCP_DTYPE_FLOAT32": 0, "DLCP_DTYPE_FLOAT16": 1, "DLCP_DTYPE_BFLOAT16": 2, "DLCP_DTYPE_INT8": 3,
}

# Every control-plane name of docs/contracts-dlcp.md that the P4 text names globally.
CONTRACT_NAMES = {
    "DlcpIngress.ipv4_routes", "DlcpIngress.route_to_nexthop", "DlcpIngress.route_to_group",
    "DlcpIngress.drop", "DlcpIngress.nexthops", "DlcpIngress.set_nexthop",
    "DlcpIngress.ecmp_groups", "DlcpIngress.set_ecmp_group", "DlcpIngress.ecmp_members",
    "DlcpIngress.ecmp_member_packets", "DlcpIngress.priority_map", "DlcpIngress.set_queue",
    "DlcpIngress.drop_thresholds", "DlcpIngress.set_thresholds", "DlcpEgress.port_queue_tx",
    "DlcpIngress.selective_drops", "DlcpIngress.ecn_marks", "DlcpIngress.malformed",
    "DlcpEgress.egress_safety_drops",
}
TOFINO_ONLY_NAMES = {"DlcpIngress.ghost_queue_base", "queue_depth_reg"}
# Added after the contract (docs/dataplane.md "Queue-depth freshness"): BMv2 ages its per-port
# depth record; Tofino's depths are never stale, but it has the table for API symmetry.
DEPTH_FRESHNESS_NAMES = {"DlcpIngress.depth_settings", "DlcpIngress.set_depth_max_age"}


def test_constants_match_contract() -> None:
    consts = p4text.constants()
    for name, value in CONTRACT_CONSTANTS.items():
        assert name in consts, f"constants.p4 lacks {name}"
        assert consts[name][1] == value, f"{name} = {consts[name][1]}, contract says {value}"
        assert value < (1 << consts[name][0]), f"{name} does not fit bit<{consts[name][0]}>"


def test_dlcp_header_layout_matches_contract() -> None:
    fields = p4text.header_fields("dlcp_h")
    assert fields == CONTRACT_DLCP_FIELDS
    assert sum(w for _, w in fields) == 8 * p4text.constants()["DLCP_HEADER_LEN"][1]


def test_packet_builder_packs_fields_where_the_p4_header_puts_them() -> None:
    # Distinct all-ones-ish values, so a shifted or swapped field shows.
    values = dict(version=0xA, msg_type=0x5, layer_class=0x6, mag_class=0x9, flags=0xC3, dtype=0xB,
                  job_id=0x1234, worker_id=0x5678, iteration=0x9ABCDEF0, tensor_id=0x0FED,
                  count=0xBEEF, offset=0x01020304, seq=0xA0B0C0D0)
    raw = int.from_bytes(dlcp_header(**values), "big")
    pos = 24 * 8
    for name, width in p4text.header_fields("dlcp_h"):
        pos -= width
        got = (raw >> pos) & ((1 << width) - 1)
        assert got == values.get(name, 0), name


def test_controller_headers_have_contract_widths() -> None:
    assert p4text.header_fields("packet_in_h") == [("ingress_port", 9), ("_pad", 7)]
    assert p4text.header_fields("packet_out_h") == [("egress_port", 9), ("_pad", 7)]


def test_both_targets_name_every_contract_object() -> None:
    bmv2 = p4text.global_names("bmv2")
    tofino = p4text.global_names("tofino")
    assert CONTRACT_NAMES <= bmv2, sorted(CONTRACT_NAMES - bmv2)
    assert CONTRACT_NAMES <= tofino, sorted(CONTRACT_NAMES - tofino)


def test_both_targets_name_the_depth_freshness_table() -> None:
    for target in ("bmv2", "tofino"):
        names = p4text.global_names(target)
        assert DEPTH_FRESHNESS_NAMES <= names, (target, sorted(DEPTH_FRESHNESS_NAMES - names))


def test_targets_share_names_except_documented_tofino_extras() -> None:
    bmv2 = p4text.global_names("bmv2")
    tofino = p4text.global_names("tofino")
    assert bmv2 - tofino == set()
    assert tofino - bmv2 <= TOFINO_ONLY_NAMES


def test_targets_have_the_same_file_structure() -> None:
    def files(target: str) -> set[str]:
        return {p.name for p in (p4text.P4SRC / target / "control").glob("*.p4")}
    # checksum lives in the TNA deparsers; the ECMP range entries are generated for TNA.
    assert files("bmv2") - {"checksum.p4"} == files("tofino") - {"ecmp_index_entries.p4"}
    for target in ("bmv2", "tofino"):
        assert (p4text.P4SRC / target / "dlcp.p4").is_file()
        assert (p4text.P4SRC / target / "parser.p4").is_file()


def test_udp_port_table_is_named_as_in_contract_and_no_value_set() -> None:
    for target in ("bmv2", "tofino"):
        assert "DlcpIngress.dlcp_udp_ports" in p4text.global_names(target), target
        for path in (p4text.P4SRC / target).rglob("*.p4"):
            assert "value_set<" not in p4text.strip_comments(path.read_text()), path


def test_tofino_ecmp_entries_are_generated_and_cover_the_hash_space() -> None:
    import importlib.util
    path = p4text.P4SRC / "tofino" / "gen_ecmp_index_entries.py"
    spec = importlib.util.spec_from_file_location("gen_ecmp_index_entries", path)
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    committed = (p4text.P4SRC / "tofino" / "control" / "ecmp_index_entries.p4").read_text()
    assert committed == gen.render(), "run python p4src/tofino/gen_ecmp_index_entries.py"
    by_n: dict[int, list[tuple[int, int, int]]] = {}
    for n, lo, hi, idx in gen.entries():
        by_n.setdefault(n, []).append((lo, hi, idx))
    for n, rows in by_n.items():
        assert [idx for _, _, idx in rows] == list(range(n))
        assert rows[0][0] == 0 and rows[-1][1] == 0xFFFF
        assert all(rows[i][1] + 1 == rows[i + 1][0] for i in range(n - 1))
        sizes = [hi - lo + 1 for lo, hi, _ in rows]
        assert max(sizes) - min(sizes) <= 1     # uniform


def test_stf_files_are_up_to_date() -> None:
    for name, text in make_stf.render_all().items():
        path = make_stf.STF_DIR / name
        assert path.is_file(), f"missing {path}: run python -m tests.dataplane.make_stf"
        assert path.read_text() == text, f"{path} is stale: run python -m tests.dataplane.make_stf"


def tables_without_installer_comment(text: str) -> list[str]:
    """Tables whose preceding comment (since the previous declaration) names no installer."""
    import re
    missing = []
    for m in re.finditer(r"\btable\s+(\w+)\s*\{", text):
        before = text[:m.start()]
        start = before.rfind("}") + 1
        if not re.search(r"[Ii]nstalled by|[Nn]obody installs", before[start:]):
            missing.append(m.group(1))
    return missing


def test_installer_comment_check_can_fail() -> None:
    assert tables_without_installer_comment("a { } table t { }") == ["t"]
    assert tables_without_installer_comment("/* Installed by x */ a { } table t { }") == ["t"]
    assert tables_without_installer_comment("x; /* Installed by the controller */ table t { }") == []


@pytest.mark.parametrize("target", ["bmv2", "tofino"])
def test_every_table_has_a_who_installs_comment(target: str) -> None:
    for path in (p4text.P4SRC / target / "control").glob("*.p4"):
        assert tables_without_installer_comment(path.read_text()) == [], path.name


def test_header_struct_format_agrees_with_width_sum() -> None:
    assert struct.calcsize("!BBBBHHIHHII") == 24
