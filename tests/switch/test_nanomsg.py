"""BMv2's nanomsg packet interface as PTF's ``nn`` platform drives it (pynng PAIR, "<iii" framing)."""

from __future__ import annotations

import struct
import time

import pynng
import pytest

from p4sim.switch.device import SwitchDevice
from p4sim.switch.nanomsg import INFO_CTRS, INFO_HWADDR, INFO_REP, PACKET_IN, PORT_ADD, PORT_SET_STATUS
from p4sim.switch.ports import PortError


def test_nn_port_messages_and_info_replies(tmp_path):
    addr = f"ipc://{tmp_path}/sw.ipc"
    dev = SwitchDevice(name="s-nn")
    group = dev.add_nanomsg(addr)
    dev.start()
    ptf = pynng.Pair0(recv_timeout=2000, send_timeout=1000)
    try:
        ptf.dial(addr, block=True)
        ptf.send(struct.pack("<iii", PORT_ADD, 1, 0))
        ptf.send(struct.pack("<iii", PORT_ADD, 2, 0))
        frame = bytes(range(60))
        ptf.send(struct.pack("<iii", PACKET_IN, 1, len(frame)) + frame)
        ptf.send(struct.pack("<iii", 5, 1, INFO_CTRS))
        reply = ptf.recv()
        kind, port, info = struct.unpack_from("<iii", reply)
        assert (kind, port, info) == (INFO_REP, 1, INFO_CTRS)
        assert struct.unpack_from("<iii", reply, 12) == (0, 1, 0)   # status ok, 1 rx, 0 tx
        ptf.send(struct.pack("<iii", 5, 2, INFO_HWADDR))
        reply = ptf.recv()
        assert struct.unpack_from("<iiii", reply) == (INFO_REP, 2, INFO_HWADDR, 1)   # unsupported
        ptf.send(struct.pack("<iii", PORT_SET_STATUS, 2, 1))
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and 2 not in group.down:
            time.sleep(0.01)
        assert group.ports == {1, 2}
        assert not group.has_port(2) and group.has_port(1)
        assert dev.counters["rx"] == 1            # the frame entered ingress (no program: dropped)
        assert dev.counters["drop_no_pipeline"] == 1
    finally:
        ptf.close()
        dev.stop()


def test_nn_bad_address_is_user_error():
    dev = SwitchDevice(name="s-nn2")
    try:
        with pytest.raises(PortError, match="--packet-in bogus://x: cannot listen"):
            dev.add_nanomsg("bogus://x")
    finally:
        dev.stop()


def test_nn_hostile_messages_are_ignored(tmp_path):
    addr = f"ipc://{tmp_path}/sw.ipc"
    dev = SwitchDevice(name="s-nn3")
    group = dev.add_nanomsg(addr)
    dev.start()
    ptf = pynng.Pair0(recv_timeout=2000, send_timeout=1000)
    try:
        ptf.dial(addr, block=True)
        ptf.send(b"\x01\x02")                                        # too short
        ptf.send(struct.pack("<iii", PACKET_IN, -4, 10) + bytes(10))   # port out of range
        ptf.send(struct.pack("<iii", 99, 1, 0))                        # unknown type
        ptf.send(struct.pack("<iii", PACKET_IN, 1, 1 << 30) + bytes(60))  # length larger than the data
        ptf.send(struct.pack("<iii", 5, 1, INFO_CTRS))
        reply = ptf.recv()                                             # still answering
        assert struct.unpack_from("<iii", reply) == (INFO_REP, 1, INFO_CTRS)
        assert group.bad_messages == 3
        deadline = time.monotonic() + 2
        while dev.counters["rx"] < 1 and time.monotonic() < deadline:   # counted after the batch
            time.sleep(0.01)
        assert dev.counters["rx"] == 1
    finally:
        ptf.close()
        dev.stop()
