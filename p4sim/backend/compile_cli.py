"""``p4sim compile PROGRAM.p4 -o OUT_DIR``: write the P4Info and the device config.

Writes ``OUT_DIR/<name>.p4info.txtpb`` (P4Info in text format, as p4c's ``--p4runtime-files``)
and ``OUT_DIR/<name>.p4sim.json`` (the device config a P4Runtime client pushes to a p4sim switch).
"""

from __future__ import annotations

import argparse
import os

from p4sim.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("compile", help="compile a v1model P4 program (P4Info + device config)")
    p.add_argument("program", metavar="PROGRAM.p4")
    p.add_argument("-o", "--out-dir", default=".", metavar="OUT_DIR", help="output directory (default: .)")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="add DIR to the #include search path (repeatable)")
    p.add_argument("--p4runtime-files", metavar="FILE", default=None,
                   help="also write the P4Info to FILE (text format; .json/.bin by extension as p4c)")
    p.add_argument("--arch", choices=("v1model", "tna", "t2na"), default="v1model",
                   help="v1model (default), tna (Tofino1) or t2na (Tofino2): p4sim's Tofino model")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from google.protobuf import json_format

    from p4sim.backend.p4info import to_text
    from p4sim.backend.program import compile_file

    if getattr(args, "arch", "v1model") in ("tna", "t2na"):
        from p4sim.tna.program import compile_tna
        program = compile_tna(args.program, args.include_dirs, args.arch)
    else:
        program = compile_file(args.program, args.include_dirs)
    try:
        os.makedirs(args.out_dir, exist_ok=True)
        info_path = os.path.join(args.out_dir, f"{program.name}.p4info.txtpb")
        cfg_path = os.path.join(args.out_dir, f"{program.name}.p4sim.json")
        with open(info_path, "w", encoding="utf-8") as fh:
            fh.write(to_text(program.p4info))
        with open(cfg_path, "wb") as fh:
            fh.write(program.device_config())
        if args.p4runtime_files:
            path = args.p4runtime_files
            if path.endswith(".json"):
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(json_format.MessageToJson(program.p4info))
            elif path.endswith(".bin"):
                with open(path, "wb") as fh:
                    fh.write(program.p4info.SerializeToString())
            else:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(to_text(program.p4info))
    except OSError as err:
        raise UserError(f"{err.filename}: cannot write: {err.strerror}") from None
    print(f"wrote {info_path} and {cfg_path}")
    return 0
