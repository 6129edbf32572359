"""Both P4 programs go through p4sim's front end (p4c's grammar): the BMv2 program is parsed
and, once p4sim's type checker exists, checked; the TNA program (for which no compiler runs
here) is preprocessed for Tofino1 and Tofino2 and parsed against a parse-only stub of the
TNA declarations (tests/dataplane/fixtures/tna_stub/).

p4sim's grammar has no object initializers (`RegisterAction<...>(r) a = { ... };`, a TNA
idiom), so their bodies are blanked before parsing; everything else is parsed as written.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from p4sim.frontend import parser as frontend_parser
from p4sim.frontend.preprocessor import Preprocessed, preprocess

ROOT = Path(__file__).resolve().parents[2]
STUB = Path(__file__).resolve().parent / "fixtures" / "tna_stub"


def blank_object_initializers(text: str) -> str:
    """`...) name = { body };` -> `...) name;` keeping line numbers."""
    out: list[str] = []
    i = 0
    pattern = re.compile(r"\)\s*(\w+)\s*=\s*\{")
    while (m := pattern.search(text, i)) is not None:
        out.append(text[i:m.start()] + ") " + m.group(1))
        j, depth = m.end(), 1
        while depth:
            depth += (text[j] == "{") - (text[j] == "}")
            j += 1
        out.append("\n" * text[m.end():j].count("\n"))
        i = j
    out.append(text[i:])
    return "".join(out)


def test_blanking_keeps_lines_and_removes_bodies() -> None:
    src = "RegisterAction<a, b, c>(r) x = {\n void apply(inout a v) { v = 1; }\n};\nfoo;"
    assert blank_object_initializers(src) == "RegisterAction<a, b, c>(r) x\n\n;\nfoo;"


def test_bmv2_program_parses() -> None:
    path = ROOT / "p4src" / "bmv2" / "dlcp.p4"
    pre = preprocess(path.read_text(), str(path), [str(ROOT / "p4src" / "include")])
    program = frontend_parser.parse_program(pre)
    names = {getattr(d, "name", None) for d in program.decls}
    assert {"DlcpParser", "DlcpIngress", "DlcpEgress", "DlcpDeparser", "main"} <= names


def test_bmv2_program_type_checks() -> None:
    from p4sim.frontend import load_program
    load_program(str(ROOT / "p4src" / "bmv2" / "dlcp.p4"), [str(ROOT / "p4src" / "include")])


@pytest.mark.parametrize("tofino", [1, 2])
def test_tofino_program_parses(tofino: int) -> None:
    path = ROOT / "p4src" / "tofino" / "dlcp.p4"
    text = f"#define __TARGET_TOFINO__ {tofino}\n" + path.read_text()
    pre = preprocess(text, str(path), [str(ROOT / "p4src" / "include"), str(STUB)])
    program = frontend_parser.parse_program(Preprocessed(blank_object_initializers(pre.text),
                                                         pre.line_map, pre.files))
    names = {getattr(d, "name", None) for d in program.decls}
    assert {"DlcpIngressParser", "DlcpIngress", "DlcpEgress", "pipe", "main"} <= names
    assert ("DlcpGhost" in names) == (tofino == 2)
