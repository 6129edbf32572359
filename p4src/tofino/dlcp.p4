/*
 * dlcp.p4 (TNA / Tofino1 and Tofino2) -- the DLCP switch: composes the
 * parsers and per-feature controls under p4src/tofino/control/.  Same
 * P4Info names as p4src/bmv2/dlcp.p4 (see docs/dataplane.md for the few
 * target differences).
 *
 * Build: bf-p4c --target tofino  --arch tna  -I p4src/include p4src/tofino/dlcp.p4
 *        bf-p4c --target tofino2 --arch t2na -I p4src/include p4src/tofino/dlcp.p4
 * Options: -DDLCP_CPU_PORT=<pcie port> (default 192), -DDLCP_SPRAY_RANDOM,
 *          -DDLCP_PORT_FROM_CONTROLLER_ONLY.
 */
#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#ifndef DLCP_CPU_PORT
#define DLCP_CPU_PORT 192
#endif

#include "constants.p4"
#include "sizes.p4"
#include "headers.p4"
#include "headers_tna.p4"

#include "parser.p4"
#include "control/queue_depth.p4"
#include "control/validate.p4"
#include "control/routing.p4"
#include "control/priority_mapping.p4"
#include "control/selective_drop.p4"
#include "control/stats.p4"
#include "control/packetio.p4"

control DlcpIngress(inout dlcp_tna_headers_t hdr,
                    inout dlcp_metadata_t meta,
                    in ingress_intrinsic_metadata_t ig_intr_md,
                    in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    PacketIoIngress() packetio;
    DlcpValidate() validate;
    Routing() routing;
    PriorityMapping() priority_mapping;
    SelectiveDrop() selective_drop;

    apply {
        if (hdr.packet_out.isValid()) {
            packetio.apply(hdr, ig_intr_md, ig_tm_md);
            return;
        }
        validate.apply(hdr, meta, ig_prsr_md, ig_dprsr_md);
        if (meta.drop == 1) {
            return;
        }
        if (!hdr.ipv4.isValid()) {
            ig_dprsr_md.drop_ctl = 1;
            return;
        }
        routing.apply(hdr, meta, ig_intr_md, ig_dprsr_md, ig_tm_md);
        if (meta.drop == 1) {
            return;
        }
        priority_mapping.apply(hdr, meta, ig_tm_md);
        selective_drop.apply(hdr, meta, ig_dprsr_md, ig_tm_md);
        packetio.apply(hdr, ig_intr_md, ig_tm_md);
        if (hdr.packet_in.isValid()) {
            return;                 /* to the CPU: egress is bypassed */
        }
        hdr.bridged_md.setValid();
        hdr.bridged_md.is_dlcp = meta.is_dlcp;
        hdr.bridged_md.has_thresholds = meta.has_thresholds;
        hdr.bridged_md._pad0 = 0;
        hdr.bridged_md.msg_type = meta.msg_type;
        hdr.bridged_md.queue = meta.queue;
        hdr.bridged_md._pad1 = 0;
        hdr.bridged_md.mag_class = meta.mag_class;
        hdr.bridged_md.flags = meta.flags;
        hdr.bridged_md._pad2 = 0;
        hdr.bridged_md.drop_depth = meta.drop_depth;
        hdr.bridged_md._pad3 = 0;
        hdr.bridged_md.ecn_depth = meta.ecn_depth;
    }
}

control DlcpEgress(inout dlcp_tna_headers_t hdr,
                   inout dlcp_eg_metadata_t meta,
                   in egress_intrinsic_metadata_t eg_intr_md,
                   in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                   inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                   inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    QueueDepthRecord() queue_depth;
    EgressSelectiveDrop() selective_drop;
    PortQueueStats() stats;

    apply {
        queue_depth.apply(hdr, meta, eg_intr_md);
        selective_drop.apply(hdr, eg_intr_md, eg_dprsr_md);
        if (eg_dprsr_md.drop_ctl == 0) {
            stats.apply(hdr, eg_intr_md);
        }
        hdr.bridged_md.setInvalid();
    }
}

Pipeline(DlcpIngressParser(),
         DlcpIngress(),
         DlcpIngressDeparser(),
         DlcpEgressParser(),
         DlcpEgress(),
         DlcpEgressDeparser()
#if __TARGET_TOFINO__ == 2
         , DlcpGhost()
#endif
         ) pipe;

Switch(pipe) main;
