"""STF -> simple_switch_CLI translation for the BMv2 target (no binaries needed).

The BMv2 JSON below is written by hand the way p4c's BMv2 back end lays one out (``actions``
with ``runtime_data``, ``pipelines[].tables[]`` with ``key[].target``/``match_type``,
``headers``/``header_types`` for widths). Expected CLI lines follow bmv2stf.py and BMv2's
``runtime_CLI.py`` syntax: ``table_add T A KEYS => ARGS [PRIO]`` with priority ``10000 - STF``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4sim.stf import bmv2_commands as bc
from p4sim.stf.parser import parse_line

JSON = {
    "header_types": [
        {"name": "scalars_0", "fields": [["meta.x", 16, False]]},
        {"name": "ethernet_t", "fields": [["dstAddr", 48, False], ["srcAddr", 48, False], ["etherType", 16, False]]},
        {"name": "ipv4_t", "fields": [["ttl", 8, False], ["protocol", 8, False], ["dstAddr", 32, False]]},
    ],
    "headers": [
        {"name": "scalars", "header_type": "scalars_0"},
        {"name": "ethernet", "header_type": "ethernet_t"},
        {"name": "ipv4", "header_type": "ipv4_t"},
    ],
    "actions": [
        {"name": "NoAction", "id": 0, "runtime_data": []},
        {"name": "MyIngress.set_port", "id": 1, "runtime_data": [{"name": "port", "bitwidth": 9}]},
        {"name": "MyIngress.set_nhop", "id": 2, "runtime_data": [
            {"name": "dmac", "bitwidth": 48}, {"name": "port", "bitwidth": 9}]},
        {"name": "MyIngress.drop", "id": 3, "runtime_data": []},
    ],
    "pipelines": [
        {"name": "ingress", "tables": [
            {"name": "MyIngress.ex", "match_type": "exact", "actions": ["MyIngress.set_port", "NoAction"],
             "action_ids": [1, 0],
             "key": [{"match_type": "exact", "name": "hdr.ethernet.etherType", "target": ["ethernet", "etherType"]},
                     {"match_type": "exact", "name": "hdr.ipv4.isValid()", "target": ["ipv4", "$valid$"]}]},
            {"name": "MyIngress.ipv4_lpm", "match_type": "lpm",
             "actions": ["MyIngress.set_nhop", "MyIngress.drop"], "action_ids": [2, 3],
             "key": [{"match_type": "lpm", "name": "hdr.ipv4.dstAddr", "target": ["ipv4", "dstAddr"]}]},
            {"name": "MyIngress.acl", "match_type": "ternary",
             "actions": ["MyIngress.set_port", "MyIngress.drop"], "action_ids": [1, 3],
             "key": [{"match_type": "ternary", "name": "hdr.ethernet.dstAddr", "target": ["ethernet", "dstAddr"]},
                     {"match_type": "exact", "name": "hdr.ipv4.protocol", "target": ["ipv4", "protocol"]}]},
            {"name": "MyIngress.ranges", "match_type": "range",
             "actions": ["MyIngress.set_port"], "action_ids": [1],
             "key": [{"match_type": "range", "name": "hdr.ipv4.ttl", "target": ["ipv4", "ttl"]},
                     {"match_type": "optional", "name": "meta.x", "target": ["scalars", "meta.x"]}]},
        ]},
        {"name": "egress", "tables": []},
    ],
    "register_arrays": [{"name": "MyIngress.reg", "size": 4, "bitwidth": 32}],
    "counter_arrays": [{"name": "MyIngress.c", "size": 4, "is_direct": False}],
    "meter_arrays": [{"name": "MyIngress.m", "size": 4}],
}


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> bc.Bmv2Program:
    path = tmp_path_factory.mktemp("json") / "prog.json"
    path.write_text(json.dumps(JSON))
    return bc.Bmv2Program.from_file(str(path))


def one(program: bc.Bmv2Program, line: str) -> str:
    cmd = parse_line(line, 1)
    assert cmd is not None
    (out,) = bc.translate(program, cmd)
    return out


def test_program_model_reads_tables_actions_and_widths(program: bc.Bmv2Program) -> None:
    assert list(program.tables) == ["MyIngress.ex", "MyIngress.ipv4_lpm", "MyIngress.acl", "MyIngress.ranges"]
    ex = program.tables["MyIngress.ex"]
    assert [(k.target, k.match_type, k.width) for k in ex.keys] == [
        ("ethernet.etherType", "exact", 16), ("ipv4.$valid$", "exact", 1)]
    assert program.actions["MyIngress.set_nhop"] == [("dmac", 48), ("port", 9)]
    assert not ex.needs_priority and program.tables["MyIngress.acl"].needs_priority
    assert program.tables["MyIngress.ranges"].needs_priority


@pytest.mark.parametrize(("stf", "cli"), [
    # exact keys by target suffix and by P4 name; a missing exact key is 0; suffix table/action names
    ("add ex etherType:0x0800 set_port(port:3)", "table_add MyIngress.ex MyIngress.set_port 0x0800 0 => 3"),
    ("add ex hdr.ethernet.etherType:0x86dd ipv4.$valid$:1 set_port(port:2)",
     "table_add MyIngress.ex MyIngress.set_port 0x86dd 1 => 2"),
    ("add ex ipv4.valid:1 NoAction()", "table_add MyIngress.ex NoAction 0 1 =>"),
    # lpm: explicit /len, '*' digits, decimal = full width
    ("add ipv4_lpm dstAddr:0x0A000000/8 set_nhop(dmac:0x000000000002, port:1)",
     "table_add MyIngress.ipv4_lpm MyIngress.set_nhop 0x0A000000/8 => 0x000000000002 1"),
    ("add ipv4_lpm dstAddr:0x0a01**** drop()", "table_add MyIngress.ipv4_lpm MyIngress.drop 0x0a010000/16 =>"),
    ("add ipv4_lpm dstAddr:167772161 drop()", "table_add MyIngress.ipv4_lpm MyIngress.drop 167772161/32 =>"),
    # action arguments in runtime_data order whatever the STF order
    ("add ipv4_lpm dstAddr:10.0.0.0/8 set_nhop(port:4, dmac:0x0a)",
     "table_add MyIngress.ipv4_lpm MyIngress.set_nhop 10.0.0.0/8 => 0x0a 4"),
    # ternary: '*' digits -> mask per digit; priority inverted (10000 - p); default priority 1
    ("add acl 5 dstAddr:0x0000000000** protocol:6 set_port(port:1)",
     "table_add MyIngress.acl MyIngress.set_port 0x000000000000&&&0xFFFFFFFFFF00 6 => 1 9995"),
    ("add acl dstAddr:0xAABBCCDDEEFF&&&0xFF0000000000 drop()",
     "table_add MyIngress.acl MyIngress.drop 0xAABBCCDDEEFF&&&0xFF0000000000 0 => 9999"),
    ("add acl 100 dstAddr:0b1*** drop()", "table_add MyIngress.acl MyIngress.drop 0b1000&&&0b1000 0 => 9900"),
    ("add acl 2 dstAddr:17 drop()", "table_add MyIngress.acl MyIngress.drop 17&&&0xffffffffffff 0 => 9998"),
    # a ternary key left out is 0&&&0
    ("add acl 7 protocol:17 drop()", "table_add MyIngress.acl MyIngress.drop 0&&&0 17 => 9993"),
    # range (.. and ->, '*' digits, single value) and optional (value, wildcard)
    ("add ranges 3 ttl:1..10 x:5 set_port(port:1)",
     "table_add MyIngress.ranges MyIngress.set_port 1->10 5&&&0xffff => 1 9997"),
    ("add ranges 3 ttl:0x1* set_port(port:1)",
     "table_add MyIngress.ranges MyIngress.set_port 0x10->0x1f 0&&&0 => 1 9997"),
    ("add ranges 1 x:* set_port(port:1)",
     "table_add MyIngress.ranges MyIngress.set_port 0->0xff 0&&&0 => 1 9999"),
    ("add ranges 1 ttl:9 x:0x10&&&0xffff set_port(port:1)",
     "table_add MyIngress.ranges MyIngress.set_port 9->9 0x10&&&0xffff => 1 9999"),
])
def test_add_becomes_table_add(program: bc.Bmv2Program, stf: str, cli: str) -> None:
    assert one(program, stf) == cli


def test_setdefault_has_no_arrow(program: bc.Bmv2Program) -> None:
    assert one(program, "setdefault ex set_port(port:5)") == "table_set_default MyIngress.ex MyIngress.set_port 5"
    assert one(program, "setdefault ipv4_lpm drop()") == "table_set_default MyIngress.ipv4_lpm MyIngress.drop"
    assert (one(program, "setdefault ipv4_lpm set_nhop(port:2, dmac:0x1)")
            == "table_set_default MyIngress.ipv4_lpm MyIngress.set_nhop 0x1 2")


def test_remove_all_clears_every_table(program: bc.Bmv2Program) -> None:
    cmd = parse_line("remove all", 1)
    assert bc.translate(program, cmd) == [
        "table_clear MyIngress.ex", "table_clear MyIngress.ipv4_lpm", "table_clear MyIngress.acl",
        "table_clear MyIngress.ranges"]


@pytest.mark.parametrize(("stf", "cli"), [
    ("mirroring_add 5 2", "mirroring_add 5 2"),
    ("mc_mgrp_create 1", "mc_mgrp_create 1"),
    ("mc_node_create 0 2 3", "mc_node_create 0 2 3"),
    ("mc_node_associate 1 0", "mc_node_associate 1 0"),
    ("register_write reg 1 0xdead", "register_write MyIngress.reg 1 0xdead"),
    ("register_reset MyIngress.reg", "register_reset MyIngress.reg"),
    ("counter_write c 2 5 100", "counter_write MyIngress.c 2 5 100"),
    ("meter_set_rates m 0 0.0001:1 0.0005:1", "meter_set_rates MyIngress.m 0 0.0001:1 0.0005:1"),
    ("table_add acl drop 0x0&&&0x0 0 => 1", "table_add MyIngress.acl MyIngress.drop 0x0&&&0x0 0 => 1"),
    ("table_set_default ex set_port 4", "table_set_default MyIngress.ex MyIngress.set_port 4"),
    # a name that resolves to nothing stays as written, for simple_switch_CLI to report
    ("register_write nosuch 0 1", "register_write nosuch 0 1"),
])
def test_pass_through_commands_keep_syntax_and_widen_names(program: bc.Bmv2Program, stf: str, cli: str) -> None:
    assert one(program, stf) == cli


def test_check_counter_reads_the_counter(program: bc.Bmv2Program) -> None:
    cmd = parse_line("check_counter c(2) packets == 3", 1)
    assert bc.counter_read_line(program, cmd, 2) == "counter_read MyIngress.c 2"


@pytest.mark.parametrize(("stf", "why"), [
    ("add nosuch a:1 drop()", "no table 'nosuch'"),
    ("add ex nokey:1 NoAction()", "has no key 'nokey'"),
    ("add ex etherType:1 set_nhop(port:1, dmac:2)", "no action 'set_nhop'"),
    ("add ex etherType:1 set_port(prt:1)", "has no parameter 'prt'"),
    ("add ex etherType:1 set_port()", "missing parameter 'port'"),
])
def test_bad_names_are_value_errors(program: bc.Bmv2Program, stf: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        one(program, stf)


def test_packet_and_expect_have_no_cli_form(program: bc.Bmv2Program) -> None:
    with pytest.raises(ValueError, match="no BMv2 CLI form"):
        bc.translate(program, parse_line("packet 0 00", 1))


def test_not_a_bmv2_json_is_one_user_error(tmp_path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(bc.UserError, match=r"x\.json: not a BMv2 JSON program"):
        bc.Bmv2Program.from_file(str(bad))


TRANSCRIPT = """Obtaining JSON from switch...
Done
Control utility for runtime P4 table manipulation
RuntimeCmd: Adding entry to exact match table MyIngress.ex
match key:           EXACT-08:00
action:              MyIngress.set_port
runtime data:        00:03
Entry has been added with handle 7
RuntimeCmd: Error in table_add: Invalid table operation (DUPLICATE_ENTRY)
RuntimeCmd: this is the value of MyIngress.c[2]= BmCounterValue(packets=3, bytes=192)
RuntimeCmd: Invalid table (nosuch)
RuntimeCmd:
"""


def test_cli_replies_are_parsed() -> None:
    assert bc.parse_handle(TRANSCRIPT) == 7
    assert bc.parse_counter(TRANSCRIPT) == (3, 192)
    assert bc.cli_errors(TRANSCRIPT) == ["Error in table_add: Invalid table operation (DUPLICATE_ENTRY)",
                                         "Invalid table (nosuch)"]
    assert bc.parse_handle("RuntimeCmd:") is None and bc.parse_counter("nothing") is None
    # what simple_switch_CLI 1.15.5 really prints (issue 17: "counter_read gave no value")
    assert bc.parse_counter("RuntimeCmd: I.c[0]=  (192 bytes, 3 packets)\nRuntimeCmd: \n") == (3, 192)
    assert bc.cli_errors("RuntimeCmd: Setting default action of MyIngress.ex\n") == []


# -- dry run over the whole corpus --------------------------------------------------------------

CORPUS = Path(__file__).parent / "corpus"
PAIRS = sorted(p for p in CORPUS.glob("*.stf") if p.with_suffix(".p4").is_file())
_KINDS = {2: "exact", 3: "lpm", 4: "ternary", 5: "range", 6: "optional"}


def _json_like_p4c(p4info) -> dict:
    """A BMv2 JSON with p4c's names, built from p4sim's P4Info (p4c uses the same names in both).

    Key ``name`` is the P4 expression (as p4c writes it); ``target`` drops the top-level struct
    (``hdr.h.a`` -> ``["h", "a"]``, ``hdr.h.isValid()`` -> ``["h", "$valid$"]``) as p4c does.
    """
    actions = {a.preamble.id: a for a in p4info.actions}
    fields: dict[str, list] = {}
    tables = []
    for t in p4info.tables:
        keys = []
        for m in t.match_fields:
            parts = m.name.split(".")
            hdr, fld = (parts[-2], parts[-1]) if len(parts) >= 3 else ("scalars", m.name)
            fld = "$valid$" if fld == "isValid()" else fld      # p4c's target for validity keys
            fields.setdefault(hdr, []).append([fld, m.bitwidth, False])
            keys.append({"match_type": _KINDS.get(m.match_type, "exact"), "name": m.name, "target": [hdr, fld]})
        kinds = {k["match_type"] for k in keys}
        kind = next((k for k in ("range", "ternary", "optional", "lpm") if k in kinds), "exact")
        tables.append({"name": t.preamble.name, "match_type": kind, "key": keys,
                       "actions": [actions[r.id].preamble.name for r in t.action_refs]})
    names = lambda objs: [{"name": o.preamble.name} for o in objs]  # noqa: E731
    return {
        "header_types": [{"name": f"{h}_t", "fields": f} for h, f in fields.items()],
        "headers": [{"name": h, "header_type": f"{h}_t"} for h in fields],
        "actions": [{"name": a.preamble.name, "runtime_data": [{"name": p.name, "bitwidth": p.bitwidth}
                                                              for p in a.params]} for a in p4info.actions],
        "pipelines": [{"name": "ingress", "tables": tables}, {"name": "egress", "tables": []}],
        "register_arrays": names(p4info.registers),
        "counter_arrays": names(p4info.counters) + names(p4info.direct_counters),
        "meter_arrays": names(p4info.meters) + names(p4info.direct_meters),
        "action_profiles": names(p4info.action_profiles),
        "parse_vsets": names(p4info.value_sets),
    }


@pytest.mark.usefixtures("need_compiler")
@pytest.mark.parametrize("stf", PAIRS, ids=[p.stem for p in PAIRS])
def test_corpus_translates_for_bmv2(stf: Path) -> None:
    """Every control-plane line of the corpus becomes a CLI line whose names BMv2 would know."""
    from p4sim.backend import compile_file
    from p4sim.stf.parser import AddCommand, CheckCounterCommand, CliCommand, parse_file

    program = bc.Bmv2Program.from_json(_json_like_p4c(compile_file(str(stf.with_suffix(".p4"))).p4info))
    known = set(program.tables) | set(program.all_externs())
    for cmd in parse_file(str(stf)).commands:
        if isinstance(cmd, CheckCounterCommand):
            line = bc.counter_read_line(program, cmd, 0)
            assert line.split()[1] in known, line
            continue
        if cmd.kind in ("packet", "expect", "wait", "no_packet", "priority_queues"):
            continue            # priority_queues: a simple_switch start-up option, not a CLI line
        lines = bc.translate(program, cmd)
        assert lines, cmd
        for line in lines:
            words = line.split()
            if isinstance(cmd, AddCommand | CliCommand) and words[0] in bc._NAMED:
                if cmd.kind.startswith(("mc_", "mirroring", "set_crc")):
                    continue
                assert words[1] in known, f"{stf.name}:{cmd.line}: {line}"
            if isinstance(cmd, AddCommand):
                table = program.tables[words[1]]
                assert words[2] in table.actions
                n_args = len(program.actions[words[2]])
                tail = words[words.index("=>") + 1:]
                assert len(tail) == n_args + (1 if table.needs_priority else 0), line
                assert len(words[3:words.index("=>")]) == len(table.keys), line
