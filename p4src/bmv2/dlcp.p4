/*
 * dlcp.p4 (v1model / BMv2) -- the DLCP switch: composes the parser and the
 * per-feature controls under p4src/bmv2/control/.
 *
 * Build: p4c --target bmv2 --arch v1model -I p4src/include \
 *            --p4runtime-files dlcp.p4info.txtpb p4src/bmv2/dlcp.p4
 * Run:   simple_switch_grpc --priority-queues 8 --cpu-port 255 ...
 * See docs/dataplane.md (pipeline, tables) and docs/protocol.md (wire format).
 */
#include <core.p4>
#include <v1model.p4>

#include "constants.p4"
#include "sizes.p4"
#include "headers.p4"

#include "parser.p4"
#include "control/checksum.p4"
#include "control/queue_depth.p4"
#include "control/validate.p4"
#include "control/routing.p4"
#include "control/priority_mapping.p4"
#include "control/selective_drop.p4"
#include "control/stats.p4"
#include "control/packetio.p4"

control DlcpIngress(inout dlcp_headers_t hdr,
                    inout dlcp_metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    PacketIoIngress() packetio;
    DlcpValidate() validate;
    Routing() routing;
    PriorityMapping() priority_mapping;
    SelectiveDrop() selective_drop;
    QueueDepthRead() depth_read;
    QueueDepthCount() depth_count;

    apply {
        if (hdr.packet_out.isValid()) {
            packetio.apply(hdr, meta, standard_metadata);
        } else {
            validate.apply(hdr, meta, standard_metadata);
            if (meta.drop == 0) {
                if (!hdr.ipv4.isValid()) {
                    mark_to_drop(standard_metadata);   /* L3 only: ARP is static */
                } else {
                    routing.apply(hdr, meta, standard_metadata);
                    if (meta.drop == 0) {
                        priority_mapping.apply(hdr, meta, standard_metadata);
                    }
                }
            }
        }
        /* Every packet handed to a queue is counted into it, whatever its
         * kind (queue_depth.p4); DLCP DATA may be dropped first on that
         * queue's counted depth (selective_drop.p4). */
        if (meta.drop == 0 && standard_metadata.egress_spec != DLCP_V1MODEL_DROP_PORT) {
            bit<32> depth_cell;
            bit<32> depth_enq;
            depth_read.apply(meta, standard_metadata, depth_cell, depth_enq);
            selective_drop.apply(hdr, meta, standard_metadata);
            depth_count.apply(meta, standard_metadata, depth_cell, depth_enq);
        }
    }
}

control DlcpEgress(inout dlcp_headers_t hdr,
                   inout dlcp_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    QueueDepthRecord() queue_depth;
    PortQueueStats() stats;
    PacketIoEgress() packetio;

    apply {
        queue_depth.apply(hdr, meta, standard_metadata);
        if (meta.drop == 0) {
            stats.apply(meta, standard_metadata);
            packetio.apply(hdr, standard_metadata);
        }
    }
}

V1Switch(DlcpParser(),
         DlcpVerifyChecksum(),
         DlcpIngress(),
         DlcpEgress(),
         DlcpComputeChecksum(),
         DlcpDeparser()) main;
