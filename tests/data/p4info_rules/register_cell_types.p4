// issue 14: register cell types in P4Info: int<W> is an int bitstring, a serializable enum is
// named (and listed in type_info), bit<W> a bit bitstring
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
enum bit<8> E_t { A = 1, B = 2 }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { register<int<8>>(4) ri; register<E_t>(2) re; register<bit<16>>(8) rb;
    apply { ri.write(0, -1); re.write(1, E_t.B); rb.write(2, 7); } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
