/* A parser that loops without advancing: every packet spins until p4sim's per-packet parser work
 * bound (16384 state visits) drops it. Used to check that control paths stay responsive. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { ethernet_t ethernet; }
struct meta_t { }

parser SpinParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start { transition select(std.ingress_port) { 9w1: start; default: accept; } }
}
control NoVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control SpinIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { std.egress_spec = 2; }
}
control SpinEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control NoCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control SpinDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }

V1Switch(SpinParser(), NoVerify(), SpinIngress(), SpinEgress(), NoCompute(), SpinDeparser()) main;
