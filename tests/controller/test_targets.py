"""Device-config packing per target; Tofino byte for byte against a hand-built buffer."""

from __future__ import annotations

import pytest

from controller import targets
from controller.errors import ControllerError
from controller.targets import PipelineFiles


def test_tofino_packing_byte_for_byte(tmp_path):
    (tmp_path / "tofino.bin").write_bytes(b"\x01\x02\x03")
    (tmp_path / "context.json").write_bytes(b'{"a":1}')
    files = PipelineFiles("tofino", tmp_path / "p4info.txtpb", program_name="dlcp",
                          tofino_bin=tmp_path / "tofino.bin", context_json=tmp_path / "context.json")
    expected = (b"\x04\x00\x00\x00" b"dlcp"
                b"\x03\x00\x00\x00" b"\x01\x02\x03"
                b"\x07\x00\x00\x00" b'{"a":1}')
    packed = targets.device_config(files)
    assert packed == expected
    assert targets.unpack_tofino(packed) == ("dlcp", b"\x01\x02\x03", b'{"a":1}')


def test_tofino_unpack_truncated():
    with pytest.raises(ControllerError, match="overruns"):
        targets.unpack_tofino(b"\x04\x00\x00\x00dl")
    with pytest.raises(ControllerError, match="truncated before tofino.bin length"):
        targets.unpack_tofino(b"\x00\x00\x00\x00")


@pytest.mark.parametrize("target", ["p4sim", "bmv2"])
def test_json_targets_pass_bytes_through(tmp_path, target):
    cfg = tmp_path / "prog.json"
    cfg.write_bytes(b'{"program": "x"}\n')
    assert targets.device_config(PipelineFiles(target, tmp_path / "p", config=cfg)) == b'{"program": "x"}\n'


def test_missing_files_and_unknown_target(tmp_path):
    with pytest.raises(ControllerError, match="cannot read p4sim device config"):
        targets.device_config(PipelineFiles("p4sim", tmp_path / "p", config=tmp_path / "nope.json"))
    with pytest.raises(ControllerError, match="unknown target 'asic'"):
        targets.device_config(PipelineFiles("asic", tmp_path / "p"))
    with pytest.raises(ControllerError, match="tofino needs program_name"):
        targets.device_config(PipelineFiles("tofino", tmp_path / "p"))


def test_cookie_depends_on_both_parts():
    a = targets.pipeline_cookie(b"p4info", b"cfg")
    assert a == targets.pipeline_cookie(b"p4info", b"cfg")
    assert a != targets.pipeline_cookie(b"p4info", b"cfg2")
    assert 0 < a < 2**63
