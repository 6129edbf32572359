"""Issue 11: a device config pushed over P4Runtime must not read the switch host's files.

Its ``#include`` directives resolve only among the config's own sources and the architecture
files p4sim ships; a forbidden path and a missing one get the same one-line error (so neither
contents nor existence leak), and files the preprocessor never read (an include inside ``#if 0``)
are never copied into the device config that GetForwardingPipelineConfig hands back.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from p4sim.backend.program import CompiledProgram, DeviceConfigError, compile_file
from p4sim.errors import P4CompileError
from tests.backend.helpers import needs_frontend

BODY = """
#include <core.p4>
#include <v1model.p4>
{include}
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { bit<8> v; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = PORT; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def config(sources: dict[str, str], main: str = "prog.p4") -> bytes:
    doc = {"format": "p4sim-device-config", "version": 1, "name": "prog", "arch": "v1model",
           "main": main, "sources": sources,
           "sha256": hashlib.sha256(json.dumps(sources, sort_keys=True).encode()).hexdigest()}
    return json.dumps(doc).encode()


def load_error(include: str) -> str:
    with pytest.raises(P4CompileError) as info:
        CompiledProgram.from_device_config(config({"prog.p4": BODY.replace("{include}", include)}))
    return str(info.value)


@needs_frontend
def test_own_sources_and_shipped_architecture_files_resolve():
    sources = {"prog.p4": BODY.replace("{include}", '#include "lib/port.p4"'),
               "lib/port.p4": '#include "value.p4"\n', "lib/value.p4": "const bit<9> PORT = 3;\n"}
    program = CompiledProgram.from_device_config(config(sources))
    assert sorted(json.loads(program.device_config())["sources"]) == ["lib/port.p4", "lib/value.p4", "prog.p4"]


@needs_frontend
@pytest.mark.parametrize("path", ["/etc/passwd", "/etc/hostname", "../../../../../../etc/passwd",
                                  "/proc/self/environ", "/usr/include/stdio.h"])
def test_host_files_are_invisible_and_indistinguishable_from_missing_ones(path):
    forbidden = load_error(f'#include "{path}"')
    missing = load_error(f'#include "{path}.does-not-exist"')
    assert forbidden == f"prog.p4:4:1: error: cannot find include file '{path}'"
    assert missing == forbidden.replace(path, path + ".does-not-exist")
    assert "root:" not in forbidden
    angled = load_error(f"#include <{path}>")
    assert angled == forbidden


@needs_frontend
def test_locations_name_the_config_files_not_the_temporary_directory():
    message = load_error("syntax error here")
    assert message.startswith("prog.p4:4:"), message


@needs_frontend
def test_unread_include_is_not_copied_into_the_device_config(tmp_path):
    """The old source collector scanned for ``#include`` lines itself and copied host files
    named in a dead ``#if 0`` branch into the config that GetForwardingPipelineConfig returns."""
    path = tmp_path / "prog.p4"
    path.write_text(BODY.replace("{include}", '#if 0\n#include "/etc/passwd"\n#endif\n'
                                 "const bit<9> PORT = 1;"))
    program = compile_file(str(path))
    sources = json.loads(program.device_config())["sources"]
    assert list(sources) == ["prog.p4"]
    reloaded = CompiledProgram.from_device_config(program.device_config())
    assert reloaded.p4info == program.p4info


@pytest.mark.parametrize("name", ["", "/", "a/", "x\u0000y.p4", "\ud800.p4"])
def test_unusable_source_names_are_refused_in_one_line(name):
    with pytest.raises(DeviceConfigError) as info:
        CompiledProgram.from_device_config(config({name: "x", "prog.p4": "y"}))
    assert "\n" not in str(info.value)


@needs_frontend
def test_a_file_including_a_sibling_directory_resolves_from_the_sources_root():
    """Laid out as the public open-p4studio examples are: ``tna_x/prog.p4`` includes
    ``"common/value.p4"``, found on the compiler's include path (the sources' common root),
    not beside ``prog.p4``. The push used to fail with "cannot open include file"."""
    sources = {"tna_x/prog.p4": BODY.replace("{include}", '#include "common/value.p4"'),
               "common/value.p4": "const bit<9> PORT = 3;\n"}
    program = CompiledProgram.from_device_config(config(sources, main="tna_x/prog.p4"))
    assert sorted(json.loads(program.device_config())["sources"]) == ["common/value.p4", "tna_x/prog.p4"]
