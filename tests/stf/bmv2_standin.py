"""Stand-ins for p4c, simple_switch and simple_switch_CLI, for testing the BMv2 STF target here.

BMv2 and p4c cannot be installed on this machine, so ``test_stf_bmv2.py`` drives the BMv2
target's orchestration (compile, start, poll readiness, nanomsg packets, CLI batches, clean-up)
against these small programs, installed on a temporary PATH under the real tool names. They
keep BMv2's interfaces, not its P4 semantics:

* ``p4c ... -o DIR PROG.p4`` writes ``DIR/PROG.json`` (a fixed one-table BMv2 JSON);
  a program containing ``#error`` fails with ``PROG.p4(1): [--Werror=...] error: ...``.
* ``simple_switch --packet-in ipc://X --thrift-port N ... JSON`` binds the PAIR socket, then
  listens on N (Thrift comes up last, as in BMv2). A PACKET_IN on port p leaves as PACKET_OUT
  on ``p`` (a wire), or on ``P`` after ``table_set_default MyIngress.t MyIngress.fwd P``;
  ``table_clear`` restores the wire. It counts packets for ``counter_read``. The frame
  ``DEAD`` makes it exit with status 7, as a failed P4 ``assert`` aborts simple_switch.
* ``simple_switch_CLI --thrift-port N`` sends each stdin line to the stand-in switch over TCP
  and prints the reply after a ``RuntimeCmd: `` prompt, like the real CLI's transcript.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import threading

HDR = struct.Struct("<iii")
JSON = {
    "header_types": [{"name": "h_t", "fields": [["a", 8, False]]}],
    "headers": [{"name": "h", "header_type": "h_t"}],
    "actions": [{"name": "MyIngress.fwd", "id": 0, "runtime_data": [{"name": "port", "bitwidth": 9}]}],
    "pipelines": [{"name": "ingress", "tables": [
        {"name": "MyIngress.t", "match_type": "exact", "actions": ["MyIngress.fwd"], "action_ids": [0],
         "key": [{"match_type": "exact", "name": "hdr.h.a", "target": ["h", "a"]}]}]},
        {"name": "egress", "tables": []}],
    "counter_arrays": [{"name": "MyIngress.c", "size": 4, "is_direct": False}],
}


def p4c(argv: list[str]) -> int:
    out, prog = argv[argv.index("-o") + 1], argv[-1]
    with open(prog, encoding="utf-8") as f:
        if "#error" in f.read():
            print(f"{prog}(1): [--Werror=legacy] error: #error stand-in failure", file=sys.stderr)
            return 1
    stem = os.path.splitext(os.path.basename(prog))[0]
    with open(os.path.join(out, stem + ".json"), "w", encoding="utf-8") as f:
        json.dump(JSON, f)
    return 0


def switch(argv: list[str]) -> int:
    import pynng

    addr = argv[argv.index("--packet-in") + 1]
    port = int(argv[argv.index("--thrift-port") + 1])
    state = {"out": None, "packets": 0, "bytes": 0}
    lock = threading.Lock()
    sock = pynng.Pair0(listen=addr)

    def packets() -> None:
        while True:
            msg = sock.recv()
            kind, p, more = HDR.unpack_from(msg)
            if kind != 3:     # PACKET_IN; PORT_ADD and the rest need no answer
                continue
            data = msg[HDR.size:HDR.size + more]
            if data == b"\xde\xad":
                print("Assertion failed (stand-in)", flush=True)
                os._exit(7)
            with lock:
                state["packets"] += 1
                state["bytes"] += len(data)
                out = p if state["out"] is None else state["out"]
            sock.send(HDR.pack(4, out, len(data)) + data)

    def handle(line: str) -> str:
        words = line.split()
        with lock:
            if words[:3] == ["table_set_default", "MyIngress.t", "MyIngress.fwd"]:
                state["out"] = int(words[3])
                return "Setting default action of MyIngress.t"
            if words[:1] == ["table_clear"]:
                state["out"] = None
                return "Clearing table"
            if words[:1] == ["table_add"]:
                return "Entry has been added with handle 0"
            if words[:1] == ["counter_read"]:
                return f"{words[1]}[{words[2]}]= BmCounterValue(packets={state['packets']}, bytes={state['bytes']})"
        return f"Error: unknown command {words[0]!r}"

    def serve(conn: socket.socket) -> None:
        with conn, conn.makefile("rw") as f:
            for line in f:
                f.write(handle(line) + "\n")
                f.flush()

    threading.Thread(target=packets, daemon=True).start()
    srv = socket.create_server(("127.0.0.1", port))
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def cli(argv: list[str]) -> int:
    port = int(argv[argv.index("--thrift-port") + 1])
    with socket.create_connection(("127.0.0.1", port)) as conn, conn.makefile("rw") as f:
        for line in sys.stdin:
            if not line.strip():
                continue
            f.write(line.strip() + "\n")
            f.flush()
            print("RuntimeCmd: " + f.readline().strip())
    print("RuntimeCmd: ")
    return 0


if __name__ == "__main__":
    tool = os.path.basename(sys.argv[0])
    sys.exit({"p4c": p4c, "simple_switch": switch, "simple_switch_CLI": cli}[tool](sys.argv[1:]))
