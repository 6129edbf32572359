"""PTF tests for tests/ptf/l3/l3_router.p4: plain PTF, no p4sim imports, so they run unchanged
against BMv2 simple_switch and against p4sim (veth or nn platform). Ports 1, 2 and 3."""

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest

ROUTER_MAC = "02:00:00:00:00:fe"
NHOP = {1: "02:00:00:00:01:01", 2: "02:00:00:00:02:02", 3: "02:00:00:00:03:03"}


class RouterTest(BaseTest):
    def setUp(self):
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()

    def routed(self, ip_dst, port, ttl=64, **kw):
        sent = tu.simple_udp_packet(eth_dst=ROUTER_MAC, eth_src="02:00:00:00:09:09", ip_dst=ip_dst,
                                    ip_ttl=ttl, **kw)
        expected = tu.simple_udp_packet(eth_dst=NHOP[port], eth_src=ROUTER_MAC, ip_dst=ip_dst,
                                        ip_ttl=ttl - 1, **kw)
        return sent, expected


class ForwardTest(RouterTest):
    """Each prefix leaves on its port with rewritten MACs, TTL - 1 and a correct checksum."""

    def runTest(self):
        for in_port, ip_dst, out_port in [(1, "10.0.2.7", 2), (2, "10.0.1.9", 1), (3, "10.0.1.1", 1)]:
            sent, expected = self.routed(ip_dst, out_port)
            tu.send_packet(self, in_port, sent)
            tu.verify_packet(self, expected, out_port)
        tu.verify_no_other_packets(self)


class LongestPrefixTest(RouterTest):
    """10.0.2.3/32 beats 10.0.2.0/24."""

    def runTest(self):
        sent, expected = self.routed("10.0.2.3", 3)
        tu.send_packet(self, 1, sent)
        tu.verify_packet(self, expected, 3)
        tu.verify_no_other_packets(self)


class PayloadSizesTest(RouterTest):
    def runTest(self):
        for size in (64, 256, 1000, 1500):
            sent, expected = self.routed("10.0.1.4", 1, pktlen=size)
            tu.send_packet(self, 2, sent)
            tu.verify_packet(self, expected, 1)
        tu.verify_no_other_packets(self)


class DropNoRouteTest(RouterTest):
    def runTest(self):
        sent, _ = self.routed("192.168.1.1", 1)
        tu.send_packet(self, 1, sent)
        tu.verify_no_other_packets(self, timeout=0.5)


class DropTtlTest(RouterTest):
    def runTest(self):
        sent, _ = self.routed("10.0.2.7", 2, ttl=1)
        tu.send_packet(self, 1, sent)
        tu.verify_no_other_packets(self, timeout=0.5)


class DropBadChecksumTest(RouterTest):
    def runTest(self):
        sent, _ = self.routed("10.0.2.7", 2)
        sent["IP"].chksum = 0x1234
        tu.send_packet(self, 1, sent)
        tu.verify_no_other_packets(self, timeout=0.5)


class DropNonIpTest(RouterTest):
    def runTest(self):
        tu.send_packet(self, 1, tu.simple_arp_packet())
        tu.verify_no_other_packets(self, timeout=0.5)
