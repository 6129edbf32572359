"""The per-pipe objects of generated TNA code (p4sim.tna.pipe_structs) on the Tofino DLCP program:
``_FRESH_<pipe>()`` builds each pipe's objects as their classes do, and the egress pipe builds only
the headers its code names (issue 15: the TNA path's per-packet cost).

Why this exists: the egress pipe used to build all nine headers per packet; the ones it leaves out
must look exactly like fresh invalid headers to anything that reads them, and must never carry
state from one packet to the next.
"""

from __future__ import annotations

import pytest

from tests.dataplane.targets import compiled

HEADERS = ("bridged_md", "ethernet", "ipv4", "ipv4_options", "tcp", "udp", "dlcp", "packet_in", "packet_out")


def _namespace():
    return compiled("tna").instantiate().namespace


def test_the_egress_pipe_builds_only_the_headers_its_code_names() -> None:
    ns = _namespace()
    first, second = ns["_FRESH_egress"]()[0], ns["_FRESH_egress"]()[0]
    built = {f for f in HEADERS if getattr(first, f) is not getattr(second, f)}
    assert built == {"bridged_md", "ethernet", "ipv4", "ipv4_options"}
    first, second = ns["_FRESH_ingress"]()[0], ns["_FRESH_ingress"]()[0]
    assert all(getattr(first, f) is not getattr(second, f) for f in HEADERS)      # ingress names all nine


def test_a_header_the_pipe_never_names_reads_as_fresh_and_refuses_writes() -> None:
    ns = _namespace()
    h = ns["_FRESH_egress"]()[0]
    tcp = h.tcp
    assert isinstance(tcp, ns["H_tcp_h"]) and tcp._v is False and tcp.src_port == 0 and tcp.flags == 0
    with pytest.raises(AssertionError, match="never names"):
        tcp.src_port = 80
    assert h.tcp.src_port == 0
    copy = h._copy()                                   # whole-struct copy, compare, invalidate still work
    assert copy._eq(h) and type(copy.tcp) is ns["H_tcp_h"]
    copy.tcp._v = True
    assert not copy._eq(h)
    h._setinvalid()
    assert h.tcp._v is False


def _fields(obj: object) -> dict[str, object]:
    """Every slot of ``obj`` (headers as their own field dicts), reading lazily built headers too."""
    out = {}
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            value = getattr(obj, slot)
            out[slot] = _fields(value) if hasattr(type(value), "__slots__") else value
    return out


def test_fresh_builds_each_pipes_objects_as_their_classes_do_with_the_unwritten_presets() -> None:
    ns = _namespace()
    for pipe, classes in (("ingress", ns["_NEW_ingress_parser"][1:] + (ns["_NEW_ingress"][4],)),
                          ("egress", ns["_NEW_egress_parser"][1:] + (ns["_NEW_egress"][5],))):
        first, second = ns[f"_FRESH_{pipe}"](), ns[f"_FRESH_{pipe}"]()
        assert [type(o) for o in first] == list(classes)
        assert all(a is not b for a, b in zip(first, second, strict=True))      # fresh per packet
        expected = [_fields(cls()) for cls in classes]
        if pipe == "ingress":       # Tofino: no unicast copy, no resubmission unless ingress writes them
            assert first[3].ucast_egress_port == 1 << 9 and first[5].resubmit_type == 1 << 3
            expected[3]["ucast_egress_port"], expected[5]["resubmit_type"] = 1 << 9, 1 << 3
        assert [_fields(o) for o in first] == expected


def test_an_egress_intrinsic_header_filled_beforehand_is_not_read_back_from_the_bytes() -> None:
    """``_PREFILL_egress``: the egress parser's first extract of eg_intr_md is skipped when the
    header comes valid (TnaPath filled it with what it would have packed in front of the packet);
    an invalid one is extracted from the bytes as before."""
    ns = _namespace()
    assert ns["_PREFILL_egress"] is True
    parse = ns["_BLOCK_egress_parser"]
    eth = bytes.fromhex("0000000000aa" "0000000000bb" "86dd") + b"not ipv4"
    prefix = bytearray(27)
    prefix[0:2] = (7).to_bytes(2, "big")                    # egress_port 7 in the bytes
    bridged = bytes(9)
    for filled in (False, True):
        h, m, eg, prs, dpr, oport = ns["_FRESH_egress"]()
        if filled:
            eg.egress_port, eg.enq_qdepth, eg._v = 5, 1234, True
        off = parse(bytes(prefix) + bridged + eth, h, m, eg)
        assert off == 27 + 9 + 14 and h.ethernet._v and h.ethernet.ether_type == 0x86DD
        assert (eg._v, eg.egress_port, eg.enq_qdepth) == ((True, 5, 1234) if filled else (True, 7, 0))

