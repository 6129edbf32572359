/* p4sim's declaration of the Tofino Native Architecture (TNA), written for p4sim from the public
 * API of the tna.p4 family (tofino1_specs.p4, tofino1_base.p4, tofino1_arch.p4): the names,
 * types, parameter directions and intrinsic-metadata layouts match those files so that TNA
 * programs compile unchanged and get the same P4Info names; comments are p4sim's own.
 * __TARGET_TOFINO__ is defined by p4sim as the SDE's compiler defines it (1 for --arch tna,
 * 2 for --arch t2na); including tna.p4 on Tofino2 gives the Tofino2 widths, as in the SDE. */
#ifndef _P4SIM_TNA_P4_
#define _P4SIM_TNA_P4_
#ifndef __TARGET_TOFINO__
#define __TARGET_TOFINO__ 1
#endif
#if __TARGET_TOFINO__ == 1
#define P4SIM_TNA_QUEUE_ID_WIDTH 5
#define P4SIM_TNA_MIRROR_TYPE_WIDTH 3
#define P4SIM_TNA_MIRROR_ID_WIDTH 10
#define P4SIM_TNA_PORT_METADATA_BITS 64
#elif __TARGET_TOFINO__ == 2
#define P4SIM_TNA_QUEUE_ID_WIDTH 7
#define P4SIM_TNA_MIRROR_TYPE_WIDTH 4
#define P4SIM_TNA_MIRROR_ID_WIDTH 8
#define P4SIM_TNA_PORT_METADATA_BITS 192
#else
#error Target does not support tofino native architecture
#endif
#include "tna_base.p4"
#endif
