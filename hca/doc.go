// Package hca models an InfiniBand host channel adapter (HCA) and its host:
// sparse host memory, a PCIe link, the verbs objects an application creates
// (protection domains, memory regions, RC queue pairs, completion queues),
// and the HCA pipeline that turns a doorbell into packets on the wire and
// packets from the wire into bytes in host memory and completions.
//
// The pipeline, in hardware order (docs/hca.md tabulates every knob):
//
//  1. doorbell and scheduler: a doorbell (MMIO or BlueFlame write) marks a QP
//     as having work; the scheduler picks QPs round robin;
//  2. WQE fetch: DMA-reads send/receive WQEs from host memory in 64-byte
//     blocks (WQEBBs, mlx5 layout), up to a prefetch depth;
//  3. key check: L_Key for local buffers, R_Key at the responder (valid key,
//     PD, access flag, bounds) through a translation cache;
//  4. DMA engine: payload reads and writes over PCIe, bound by bandwidth,
//     MPS/MRRS and outstanding reads;
//  5. RC transport: segmentation into MTU packets, 24-bit PSNs, ACK/NAK,
//     go-back-N retry, RNR, caps on outstanding reads and atomics;
//  6. CQE writer: 64-byte CQEs with status and opcode, CQ overrun detection.
//
// The pure logic (key checks, segmentation, requester and responder state
// machines, PCIe timing, WQE and CQE formats) has no simulator import and is
// tested by tables. Facts cite ../shared/reference/ib-facts.md by section.
package hca
