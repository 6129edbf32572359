"""Helpers for backend tests: compile a small P4 program from a string and push packets.

Tests that need the front end skip (with the reason) until ``p4sim.frontend`` can type-check.
"""

from __future__ import annotations

import importlib.util
import os
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
P4_DIR = os.path.join(HERE, "p4")

V1_PRELUDE = """
#include <core.p4>
#include <v1model.p4>
"""

# Boilerplate blocks for tests that only care about one control: parser extracts one header
# `h` of type `hdr_t` (declared by the test), checksum controls are empty, deparser emits `h`.
SIMPLE_ARCH = """
struct headers_t { hdr_t h; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
"""


def frontend_ready() -> bool:
    return importlib.util.find_spec("p4sim.frontend.typecheck") is not None


needs_frontend = pytest.mark.skipif(not frontend_ready(),
                                    reason="p4sim.frontend type checker not committed yet")


def compile_source(tmp_path, source: str, name: str = "prog"):
    from p4sim.backend import compile_file

    path = tmp_path / f"{name}.p4"
    path.write_text(V1_PRELUDE + textwrap.dedent(source))
    return compile_file(str(path))


def simple_program(tmp_path, header: str, ingress_body: str, meta: str = "bit<8> x;",
                   egress_body: str = "", extra: str = ""):
    """A v1model program with header ``hdr_t`` (fields given), metadata, and an ingress."""
    src = f"""
    header hdr_t {{ {header} }}
    struct meta_t {{ {meta} }}
    {extra}
    {SIMPLE_ARCH.replace('apply { } }' + chr(10) + 'control D', 'apply { } }' + chr(10) + 'control D')}
    control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
        {ingress_body}
    }}
    V1Switch(P(), VC(), I(), E(), CC(), D()) main;
    """
    if egress_body:
        src = src.replace("control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) "
                          "{ apply { } }",
                          f"control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) "
                          f"{{ {egress_body} }}")
    return compile_source(tmp_path, src)


def path_for(program):
    from p4sim.v1model.pipeline import V1ModelPath

    return V1ModelPath(program.instantiate())
