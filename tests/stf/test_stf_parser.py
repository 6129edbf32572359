"""The STF file parser and key-value rules (no compiler needed)."""

from __future__ import annotations

import pytest

from p4sim.errors import StfError
from p4sim.runtime.tables import Exact, Lpm, Optional_, Range, Ternary
from p4sim.stf.parser import (
    AddCommand,
    CheckCounterCommand,
    CliCommand,
    ExpectCommand,
    PacketCommand,
    SetDefaultCommand,
    key_value,
    parse_file,
    parse_int,
    parse_text,
)

SAMPLE = """\
# a comment
add ingress.t 10 hdr.h.f1:0x****0101 h.f2:5 setb1(val:0x7f, port:2) = A
add tab1 dstAddr:0xa1a2a3a4a5a6 act(port:2)
setdefault ethertype_match l2_packet()
packet 0 01010101 03030303   # trailing comment
expect 1 *1010101 0303 0303 $
expect 5
wait
mc_mgrp_create 1
mc_node_create 0 1 2
check_counter cnt(10) packets == 2
"""


def test_parse_sample():
    cmds = parse_text(SAMPLE, "x.stf").commands
    add = cmds[0]
    assert isinstance(add, AddCommand)
    assert (add.table, add.priority, add.action, add.handle) == ("ingress.t", 10, "setb1", "A")
    assert add.keys == [("hdr.h.f1", "0x****0101"), ("h.f2", "5")]
    assert add.args == [("val", "0x7f"), ("port", "2")]
    assert cmds[1].priority is None and cmds[1].args == [("port", "2")]
    assert isinstance(cmds[2], SetDefaultCommand) and cmds[2].args == []
    pkt = cmds[3]
    assert isinstance(pkt, PacketCommand) and pkt.port == 0 and pkt.data == bytes.fromhex("0101010103030303")
    exp = cmds[4]
    assert isinstance(exp, ExpectCommand) and exp.pattern == "*101010103030303$" and exp.line == 6
    assert cmds[5].pattern is None
    assert cmds[6].kind == "wait"
    assert isinstance(cmds[7], CliCommand) and cmds[7].words == ["1"]
    assert cmds[8].words == ["0", "1", "2"]
    cc = cmds[9]
    assert isinstance(cc, CheckCounterCommand) and (cc.name, cc.index, cc.op, cc.value) == ("cnt", 10, "==", 2)


def test_validity_key_written_as_the_call_is_a_key_not_the_action():
    # issue 14: `hdr.t.isValid():1` names the key p4c calls `hdr.t.$valid$`
    add = parse_text("add t hdr.t.isValid():1 k:2 set_port(port:2)\n").commands[0]
    assert add.keys == [("hdr.t.isValid()", "1"), ("k", "2")]
    assert (add.action, add.args) == ("set_port", [("port", "2")])
    add = parse_text("add t 3 t.isValid():0 NoAction()\n").commands[0]
    assert (add.priority, add.keys, add.action) == (3, [("t.isValid()", "0")], "NoAction")


def test_keywords_case_insensitive_and_ports():
    cmds = parse_text("ADD t k:1 a()\nPACKET 3 00\n").commands
    assert cmds[0].kind == "add" and cmds[1].port == 3


def test_packet_with_odd_hex_digits_ends_in_a_low_nibble_byte_as_p4c_reads_it():
    (cmd,) = parse_text("packet 0 01 2\n").commands
    assert cmd.data == bytes([0x01, 0x02])


@pytest.mark.parametrize("text,fragment", [
    ("packet 0 0x01", "invalid packet data character 'X'"),
    ("expect one 00", "port 'one' is not a decimal number"),
    ("add t k:1", "add needs an action"),
    ("add t k a()", "is not FIELD:VALUE"),
    ("add t k:1 a(p)", "is not NAME:VALUE"),
    ("frobnicate 1", "unknown STF command 'frobnicate'"),
])
def test_errors_name_file_and_line(text, fragment):
    with pytest.raises(StfError) as err:
        parse_text("# first line\n" + text, "tests/x.stf")
    assert str(err.value).startswith("tests/x.stf:2: error: ")
    assert fragment in str(err.value)


def test_priority_queues_directive():
    assert parse_text("packet 0 00\n").priority_queues == 1           # BMv2's default: one queue
    assert parse_text("priority_queues 8\npacket 0 00\n").priority_queues == 8
    for text, fragment in (("priority_queues 0", "not in 1..32"), ("priority_queues 33", "not in 1..32"),
                           ("priority_queues eight", "decimal number of queues"),
                           ("packet 0 00\npriority_queues 8", "before the first packet")):
        with pytest.raises(StfError, match=fragment):
            parse_text(text, "q.stf")


def test_missing_file(tmp_path):
    with pytest.raises(StfError, match="cannot read STF file"):
        parse_file(str(tmp_path / "nope.stf"))


def test_parse_int_forms():
    assert [parse_int(t) for t in ("0x1F", "0b101", "0o17", "0010", "1_000")] == [31, 5, 15, 10, 1000]
    assert parse_int("10.0.1.2") == 0x0A000102
    assert parse_int("00:11:22:aa:bb:cc") == 0x001122AABBCC
    assert parse_int("2001:db8::1") == 0x20010DB8000000000000000000000001
    with pytest.raises(ValueError):
        parse_int("10.0.0.300")
    assert key_value("10.1.0.0/16", "lpm", 32) == Lpm(0x0A010000, 16)
    add = parse_text("add t dmac:00:11:22:33:44:55 fwd(smac:aa:bb:cc:dd:ee:ff)\n").commands[0]
    assert add.keys == [("dmac", "00:11:22:33:44:55")] and add.args == [("smac", "aa:bb:cc:dd:ee:ff")]


def test_ternary_from_star_digits():
    assert key_value("0x****0101", "ternary", 32) == Ternary(0x0101, 0x0000FFFF)
    assert key_value("0x0a0*", "ternary", 16) == Ternary(0x0A00, 0xFFF0)
    assert key_value("0b1*1", "ternary", 3) == Ternary(0b101, 0b101)
    # the mask covers only the digits written (as bmv2stf builds it)
    assert key_value("0x1", "ternary", 16) == Ternary(1, 0xF)
    assert key_value("0x0a&&&0xf0", "ternary", 8) == Ternary(0x00, 0xF0)
    assert key_value("7", "ternary", 8) == Ternary(7, 0xFF)


def test_lpm_from_star_digits_and_slash():
    assert key_value("0x0a0b****", "lpm", 32) == Lpm(0x0A0B0000, 16)
    assert key_value("0x0a000001", "lpm", 32) == Lpm(0x0A000001, 32)
    assert key_value("0x0a000000/8", "lpm", 32) == Lpm(0x0A000000, 8)
    assert key_value("0x0a0b0c0d/8", "lpm", 32) == Lpm(0x0A000000, 8)  # host bits dropped
    assert key_value("10", "lpm", 8) == Lpm(10, 8)


def test_exact_range_optional():
    assert key_value("0x1FF", "exact", 9) == Exact(0x1FF)
    with pytest.raises(ValueError, match="does not fit"):
        key_value("0x10000", "exact", 9)
    assert key_value("10..20", "range", 16) == Range(10, 20)
    assert key_value("10->20", "range", 16) == Range(10, 20)
    assert key_value("0x1*", "range", 8) == Range(0x10, 0x1F)
    assert key_value("5", "range", 8) == Range(5, 5)
    with pytest.raises(ValueError, match="low > high"):
        key_value("9..3", "range", 8)
    assert key_value("6", "optional", 8) == Optional_(6)
    assert key_value("*", "optional", 8) is None
    assert key_value("17&&&255", "optional", 8) == Optional_(17)
    assert key_value("0x11&&&0x00", "optional", 8) is None
    assert key_value("10.0.1.1&&&255.255.255.0", "ternary", 32) == Ternary(0x0A000100, 0xFFFFFF00)
