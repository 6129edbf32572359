"""Issue 11: hostile P4 sources get one ``file:line:col: error:`` line quickly -- never a
traceback, a hang or unbounded memory: invalid UTF-8, a control instantiating itself, 2,000
nested ternaries, huge widths and literals, and macro bombs (a 30-level doubling ``#define``,
a 3,000-deep macro chain). Each case ran for hours or ended in a traceback before."""

from __future__ import annotations

import re
import time

import pytest

from p4sim.errors import P4CompileError
from p4sim.frontend import load_program

PROGRAM = """#include <core.p4>
#include <v1model.p4>
{TOP}
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { bit<8> v; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    {LOCALS}
    apply { {APPLY} }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

LINE = re.compile(r"^[^\n]+\.p4:\d+:\d+: (error|unsupported): [^\n]+$")


def program(top: str = "", locals_: str = "", apply: str = "") -> str:
    return PROGRAM.replace("{TOP}", top).replace("{LOCALS}", locals_).replace("{APPLY}", apply)


def doubling_macros(levels: int) -> str:
    return "#define A0 x\n" + "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, levels + 1))


CASES = {
    "self_instantiating_control": (
        program(top="control C(inout bit<8> x) { C() c; apply { c.apply(x); } }"),
        "self-referencing types not supported: 'C' within 'control C'", 3),
    "self_instantiating_control_used": (
        program(top="control C(inout bit<8> x) { C() c; apply { c.apply(x); } }",
                locals_="C() c;", apply="c.apply(meta.v);"),
        "self-referencing types not supported", 3),
    "self_instantiating_parser": (
        program(top="parser Q(packet_in p) { Q() q; state start { q.apply(p); transition accept; } }"),
        "self-referencing types not supported: 'Q' within 'parser Q'", 3),
    "nested_ternaries": (
        program(top="const bit<8> T = " + "true ? " * 2000 + "1" + " : 2" * 2000 + ";"),
        "nest too deeply", 3),
    "bit_2_pow_40": (program(top="header big_t { bit<1099511627776> f; }"),
                     "widths up to 2048 are supported", 3),
    "bit_shift_40": (program(top="header big_t { bit<(1 << 40)> f; }"),
                     "widths up to 2048 are supported", 3),
    "int_4096": (program(top="typedef int<4096> wide_t;"), "widths up to 2048 are supported", 3),
    "varbit_huge": (program(top="header v_t { varbit<(1 << 40)> f; }"), "widths up to 2048", 3),
    "huge_stack": (program(top="struct many_t { h_t[1 << 30] s; }").replace(
        "{TOP}", ""), "header stack size 1073741824", 3),
    "decimal_10000_digits": (program(top="const bit<8> L = " + "9" * 10000 + ";"),
                             "integer literal too large (10000 digits", 3),
    "hex_10000_digits": (program(top="const bit<8> L = 0x" + "f" * 10000 + ";"),
                         "integer literal too large", 3),
    "width_prefix_huge": (program(top="const bit<8> L = " + "9" * 5000 + "w1;"),
                          "integer literal width 9999", 3),
    "doubling_define_30": (doubling_macros(30) + program(top="const bit<8> M = A30;"),
                           "macro expansion too large (expanding", 34),
    "macro_chain_3000": ("".join(f"#define B{i} B{i + 1}\n" for i in range(3000)) +
                         program(top="const bit<8> M = B0;"), "macro expansion nests deeper than 200", 3003),
    "doubling_define_in_if": (doubling_macros(30) + "#if A30\n#endif\n" + program(),
                              "macro expansion too large", 32),
    "doubling_define_in_include": (doubling_macros(30) + "#include A30\n" + program(),
                                   "macro expansion too large", 32),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_source_is_one_line_error_fast(tmp_path, case):
    text, expected, line = CASES[case]
    if case == "huge_stack":
        text = program().replace("struct headers_t { h_t h; }", "struct headers_t { h_t[1 << 30] h; }")
        line = 5
    path = tmp_path / "hostile.p4"
    path.write_text(text)
    start = time.perf_counter()
    with pytest.raises(P4CompileError) as info:
        load_program(str(path))
    seconds = time.perf_counter() - start
    message = str(info.value)
    assert LINE.match(message), message[:300]
    assert expected in message, message[:300]
    assert message.startswith(f"{path}:{line}:"), message[:300]
    assert "internal error" not in message
    assert seconds < 20, seconds


def test_invalid_utf8_names_line_and_column(tmp_path):
    path = tmp_path / "bad.p4"
    path.write_bytes(b"#include <core.p4>\nconst bit<8> x = 1; // caf\xe9\n")
    with pytest.raises(P4CompileError) as info:
        load_program(str(path))
    assert str(info.value) == f"{path}:2:27: error: invalid UTF-8 (byte 0xe9): P4 source must be UTF-8 text"


def test_invalid_utf8_in_an_included_file(tmp_path):
    (tmp_path / "inc.p4").write_bytes(b"\n\n  \xff\n")
    path = tmp_path / "main.p4"
    path.write_text('#include "inc.p4"\n')
    with pytest.raises(P4CompileError) as info:
        load_program(str(path))
    assert str(info.value).startswith(f"{tmp_path / 'inc.p4'}:3:3: error: invalid UTF-8 (byte 0xff)")


def test_compile_cli_prints_one_line(tmp_path, capsys):
    from p4sim.cli import main

    path = tmp_path / "bad.p4"
    path.write_bytes(b"\xff\xfe")
    assert main(["compile", "-o", str(tmp_path), str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid UTF-8" in err and "Traceback" not in err
