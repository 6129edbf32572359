"""simulation.pcap_drain on pcaps written by p4sim's own pcap writer: the share of its link rate a
switch port delivered while it had a backlog.

Why this exists: that share is the cross-check's evidence that Mininet's software switches lose
link time to their stalls (and what `crosscheck --switch-rate-share` gives ns-3's ports); the
reading must give a port that sends at its full rate 1.0 and one that sends at half of it 0.5,
and bad input must be one line. Budget: < 2 s, no ns-3, no Mininet.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4sim.switch.pcap import PcapWriter
from simulation import pcap_drain

FRAME = 1500
WIRE_S = 8 * FRAME / 20e6          # 0.6 ms at 20 Mbit/s


def _frames(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        pkt = Ether() / IP(src="10.0.1.1", dst="10.0.2.1", id=i) / UDP(sport=5000, dport=9290)
        out.append(bytes(pkt / bytes(FRAME - len(pkt))))
    return out


def _write(pdir: Path, name: str, stamped: list[tuple[float, bytes]]) -> None:
    w = PcapWriter(str(pdir / name))
    for t, frame in stamped:
        w.write(frame, t)
    w.close()


@pytest.mark.parametrize("spacing, share", [(WIRE_S, 1.0), (2 * WIRE_S, 0.5)])
def test_share_of_link_rate_sent_while_backlogged(tmp_path: Path, spacing: float, share: float) -> None:
    """10 packets arrive at once (one from another port too); they leave ``spacing`` apart."""
    pdir = tmp_path / "leaf2-pcap"
    frames = _frames(10)
    t0 = 1_700_000_000.0
    _write(pdir, "leaf2-eth5_in.pcap", [(t0, f) for f in frames[:9]])
    _write(pdir, "leaf2-eth6_in.pcap", [(t0, frames[9])])
    _write(pdir, "leaf2-eth1_out.pcap", [(t0 + spacing * (i + 1), f) for i, f in enumerate(frames)])
    _write(pdir, "leaf2-eth2_out.pcap", [])
    got = pcap_drain.port_drain(tmp_path, "leaf2", 1, 20e6)
    assert set(got) == {"udp"}
    assert got["udp"]["packets"] == 10
    assert got["udp"]["share_of_rate"] == pytest.approx(share, abs=0.01)
    assert got["udp"]["backlogged_s"] == pytest.approx(10 * spacing, abs=1e-4)


def test_bad_input_is_one_line(tmp_path: Path, capsys) -> None:
    assert pcap_drain.main([str(tmp_path), "leaf2:1"]) == 2
    assert capsys.readouterr().err == f"pcap_drain: {tmp_path}/leaf2-pcap/leaf2-eth1_out.pcap: not found (run dlcp-exp with --pcap)\n"
    assert pcap_drain.main([str(tmp_path), "leaf2"]) == 2
    assert capsys.readouterr().err == "pcap_drain: port 'leaf2': expected SWITCH:PORT, e.g. leaf2:1\n"
    (tmp_path / "leaf2-pcap").mkdir()
    (tmp_path / "leaf2-pcap" / "leaf2-eth1_out.pcap").write_bytes(b"not a pcap")
    assert pcap_drain.main([str(tmp_path), "leaf2:1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pcap_drain: ") and "not a little-endian microsecond pcap" in err and err.count("\n") == 1
