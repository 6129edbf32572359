"""Per-target packing of the P4Runtime device config (``ForwardingPipelineConfig.p4_device_config``).

- ``p4sim``: the bytes of ``OUT/<name>.p4sim.json`` written by ``p4sim compile``.
- ``bmv2``: the bytes of the BMv2 JSON written by ``p4c --target bmv2``.
- ``tofino``: bf-p4c's outputs packed the way Tofino P4Runtime servers (PI/Stratum-bf) read them,
  the layout p4runtime-shell's ``config_builders/tofino.py`` documents: little-endian int32 length +
  program name, int32 length + ``tofino.bin``, int32 length + ``context.json``.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

from controller.errors import ControllerError

TARGETS = ("p4sim", "bmv2", "tofino")


@dataclass(frozen=True)
class PipelineFiles:
    """Where one switch's compiled program lives. ``config`` for p4sim/bmv2; the rest for tofino."""

    target: str
    p4info: Path
    config: Path | None = None
    program_name: str | None = None
    tofino_bin: Path | None = None
    context_json: Path | None = None


def _read(path: Path | None, what: str) -> bytes:
    if path is None:
        raise ControllerError(f"pipeline: missing {what} path")
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise ControllerError(f"{path}: cannot read {what}: {err.strerror}") from None


def pack_tofino(program_name: str, tofino_bin: bytes, context_json: bytes) -> bytes:
    """The Tofino device config: three (int32 little-endian length, bytes) records."""
    name = program_name.encode("utf-8")
    out = bytearray()
    for blob in (name, tofino_bin, context_json):
        out += struct.pack("<i", len(blob))
        out += blob
    return bytes(out)


def unpack_tofino(data: bytes) -> tuple[str, bytes, bytes]:
    """Inverse of ``pack_tofino`` (for inspection and tests); UserError on a truncated buffer."""
    parts = []
    pos = 0
    for what in ("program name", "tofino.bin", "context.json"):
        if pos + 4 > len(data):
            raise ControllerError(f"tofino device config truncated before {what} length")
        (length,) = struct.unpack_from("<i", data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise ControllerError(f"tofino device config: {what} length {length} overruns the buffer")
        parts.append(data[pos:pos + length])
        pos += length
    return parts[0].decode("utf-8"), parts[1], parts[2]


def device_config(files: PipelineFiles) -> bytes:
    """The device config bytes for ``files.target``."""
    if files.target in ("p4sim", "bmv2"):
        return _read(files.config, f"{files.target} device config")
    if files.target == "tofino":
        if not files.program_name:
            raise ControllerError("pipeline: tofino needs program_name")
        return pack_tofino(files.program_name, _read(files.tofino_bin, "tofino.bin"),
                           _read(files.context_json, "context.json"))
    raise ControllerError(f"unknown target '{files.target}' (one of {', '.join(TARGETS)})")


def pipeline_cookie(p4info_bytes: bytes, config: bytes) -> int:
    """A 64-bit cookie naming this exact pipeline, so the controller can tell if a switch runs it."""
    digest = hashlib.sha256(p4info_bytes + b"\0" + config).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)
