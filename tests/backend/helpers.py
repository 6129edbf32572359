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

EMPTY = "apply { }"


def frontend_ready() -> bool:
    if importlib.util.find_spec("p4sim.frontend.typecheck") is None:
        return False
    try:
        from p4sim.frontend.typecheck import check_program  # noqa: F401
    except ImportError:
        return False
    return True


needs_frontend = pytest.mark.skipif(not frontend_ready(),
                                    reason="p4sim.frontend type checker not committed yet")


def compile_source(tmp_path, source: str, name: str = "prog"):
    from p4sim.backend import compile_file

    path = tmp_path / f"{name}.p4"
    path.write_text(V1_PRELUDE + textwrap.dedent(source))
    return compile_file(str(path))


def simple_program(tmp_path, header: str, ingress: str, meta: str = "bit<8> x;", egress: str = EMPTY,
                   extra: str = "", parser: str = "state start { pkt.extract(hdr.h); transition accept; }",
                   headers: str = "hdr_t h;", deparser: str = "apply { pkt.emit(hdr.h); }", late: str = ""):
    """A v1model program: header ``hdr_t { header }``, struct headers_t { headers },
    metadata ``meta_t { meta }``, the given parser states and ingress/egress bodies; ``extra``
    goes before the header declarations, ``late`` after them."""
    src = f"""
    {extra}
    header hdr_t {{ {header} }}
    struct meta_t {{ {meta} }}
    struct headers_t {{ {headers} }}
    {late}
    parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
        {parser}
    }}
    control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
    control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
        {ingress}
    }}
    control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
        {egress}
    }}
    control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
    control D(packet_out pkt, in headers_t hdr) {{ {deparser} }}
    V1Switch(P(), VC(), I(), E(), CC(), D()) main;
    """
    return compile_source(tmp_path, src)


def path_for(program):
    from p4sim.v1model.pipeline import V1ModelPath

    return V1ModelPath(program.instantiate())
