"""Regression tests for issue 11's remote code execution: text that came from the program (file
names, annotation strings, string literals, names) must enter p4sim's generated Python only as
literals, never as code.

Each test plants a payload that would create a marker file if it ever ran as Python, compiles
(directly and through a device config, as P4Runtime does), pushes packets through every block
that uses the text (including a failing ``assert`` whose message names the file), and checks
that the marker was never created, that the payload appears in the generated source only inside
string tokens, and that the program still works.
"""

from __future__ import annotations

import io
import json
import os
import tokenize

import pytest

from tests.backend.helpers import needs_frontend

# Breaks out of a '...' or "..." literal, or starts a new line of code, if pasted unescaped.
PAYLOADS = (
    "'+__import__('pathlib').Path('PWNED').touch()+'",
    '"+__import__("pathlib").Path("PWNED").touch()+"',
    "x')\n__import__('pathlib').Path('PWNED').touch()\n('",
)
P4_PAYLOADS = (   # the same as P4 string-literal bodies (\" and \n escapes)
    "'+__import__('pathlib').Path('PWNED').touch()+'",
    '\\"+__import__(\\"pathlib\\").Path(\\"PWNED\\").touch()+\\"',
    "x')\\n__import__('pathlib').Path('PWNED').touch()\\n('",
)

PROGRAM = """
#include <core.p4>
#include <v1model.p4>

error { {E} }
header h_t { bit<8> a; bit<8> b; bit<8> class; bit<8> import; }
@controller_header("packet_in") @name("{S}")
header cpu_t { bit<16> port; }
struct headers_t { h_t h; }
struct meta_t { @field_list(1) @alias("{S}") bit<8> v; bit<8> _x; }
struct digest_t { bit<8> a; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @name("{S}") value_set<bit<8>>(4) vs;
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.a != 9, error.{E});
        transition select(hdr.h.a) { vs: accept; default: accept; }
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @name("{S}") register<bit<8>>(4) r;
    @name("{S}.c") counter(4, CounterType.packets) c;
    @name("{S}.m") meter(4, MeterType.packets) m;
    @name("{S}.dc") direct_counter(CounterType.packets) dc;
    @name("{S}.set") action set(@name("{S}") bit<9> port) { sm.egress_spec = port; }
    @name("{S}.t") table t {
        key = { hdr.h.a: exact @name("{S}"); hdr.h.class: ternary @name("{S}.k2"); }
        actions = { set; @defaultonly NoAction; }
        counters = dc;
        const entries = { (1, _): set(2); }
        default_action = NoAction();
    }
    apply {
        log_msg("{S} a={}", {hdr.h.a});
        r.write(0, hdr.h.a);
        c.count(0);
        bit<8> colour;
        m.execute_meter(0, colour);
        t.apply();
        hdr.h.import = hdr.h.class + meta._x;
        digest<digest_t>(1, {hdr.h.a});
        if (sm.instance_type == 0) { resubmit_preserving_field_list(0); }
        assert(hdr.h.b != 7);
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def hostile_program(p4_payload: str) -> str:
    return PROGRAM.replace("{S}", p4_payload).replace("{E}", "Bad_import__pathlib")


def payload_outside_strings(source: str) -> list[str]:
    """Tokens of ``source`` (outside string literals and comments) that carry payload text."""
    bad = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.STRING, tokenize.COMMENT):
            continue
        if "__import__" in tok.string or "PWNED" in tok.string:
            bad.append(f"{tok.start}: {tok.string!r}")
    return bad


def run_packets(program) -> list[tuple[int, bytes]]:
    from p4sim.v1model.pipeline import V1ModelPath

    path = V1ModelPath(program.instantiate())
    out = path.process(bytes([1, 2, 3, 4]), 0)
    path.process(bytes([1, 7, 0, 0]), 0)       # the assert fails: its message names the file
    return out


@needs_frontend
@pytest.mark.parametrize("index", range(len(PAYLOADS)))
def test_hostile_file_and_annotation_text_is_never_code(tmp_path, monkeypatch, index):
    from p4sim.backend.program import CompiledProgram, compile_file

    monkeypatch.chdir(tmp_path)
    name = PAYLOADS[index].replace("/", "_") + ".p4"
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    path = src_dir / name
    path.write_text(hostile_program(P4_PAYLOADS[index]))
    program = compile_file(str(path))
    assert payload_outside_strings(program.source) == []
    assert run_packets(program) == [(2, bytes([1, 2, 3, 3]))]
    # the same program as a device config from the wire, recompiled on load
    reloaded = CompiledProgram.from_device_config(program.device_config())
    assert payload_outside_strings(reloaded.source) == []
    assert run_packets(reloaded) == [(2, bytes([1, 2, 3, 3]))]
    assert not os.path.exists(tmp_path / "PWNED")


@needs_frontend
def test_hostile_device_config_source_name(tmp_path, monkeypatch):
    """A pushed config names its own files: the name is part of every location in the program."""
    import hashlib

    from p4sim.backend.program import CompiledProgram

    monkeypatch.chdir(tmp_path)
    main = PAYLOADS[0] + ".p4"
    sources = {main: hostile_program(P4_PAYLOADS[0])}
    doc = {"format": "p4sim-device-config", "version": 1, "name": PAYLOADS[0], "arch": "v1model",
           "main": main, "sources": sources,
           "sha256": hashlib.sha256(json.dumps(sources, sort_keys=True).encode()).hexdigest()}
    program = CompiledProgram.from_device_config(json.dumps(doc).encode())
    assert payload_outside_strings(program.source) == []
    assert run_packets(program) == [(2, bytes([1, 2, 3, 3]))]
    assert not os.path.exists(tmp_path / "PWNED")


@needs_frontend
def test_compile_cli_with_quote_in_file_name(tmp_path, capsys):
    """``p4sim compile "bob's prog.p4"`` compiles (it ended in a SyntaxError traceback)."""
    from p4sim.cli import main

    path = tmp_path / "bob's prog.p4"
    path.write_text(hostile_program("x"))
    assert main(["compile", "-o", str(tmp_path / "out"), str(path)]) == 0
    assert (tmp_path / "out" / "bob's prog.p4info.txtpb").exists()
    assert (tmp_path / "out" / "bob's prog.p4sim.json").exists()


def test_identifier_mangler_keeps_only_ascii_identifier_characters():
    from p4sim.backend.typegen import ident, py_literal, pyfield

    for text in PAYLOADS + ("a.b<c>", "\u00b2x", "ä", "x\ny", "class", "_x", "size"):
        mangled = ident(text)
        assert all(c.isascii() and (c.isalnum() or c == "_") for c in mangled), mangled
        field = pyfield(text)
        assert field.isidentifier() and field.isascii(), field
        assert eval(py_literal(text)) == text   # noqa: S307 - the literal encoder's round trip
