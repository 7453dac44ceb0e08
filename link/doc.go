// Package link models an InfiniBand SerDes link: generation, width, lane
// signalling rate, line encoding, FEC and its latency, propagation by cable
// length and medium, and serialization at the data rate. Both directions of a
// link are independent wires.
//
// Timing contract (what every block downstream relies on): a packet that
// starts on the wire at t occupies it for its serialization time S; its head
// arrives at t + FEC + propagation and its tail S later, so a cut-through
// receiver can forward before the tail is in.
//
// Port is one end of a link on a device. It owns the outgoing wire, the
// per-VL credit senders (package credit) for the peer's receive buffers, and
// the per-VL receive-buffer accounting whose free space it advertises back in
// flow-control packets that travel on the reverse wire with the same latency.
//
// A port's outgoing wire may corrupt packets at a post-FEC bit error rate
// (SetBitErrorRate, link.ber): one draw per packet from the port's own
// stream. The receiver discards a corrupted data packet at its tail (no
// buffer, no credit, the owner never sees it) and ignores a corrupted
// flow-control packet; ABR resynchronises to the sender's FCTBS at its next
// flow-control packet (docs/fabric.md, "Link errors"). Or its errors come
// from the FEC (SetPreFECErrorRate, link.pre_fec_ber): the wire's stream is
// cut into RS codewords, each uncorrectable with the probability a pre-FEC
// bit error rate gives (CodewordFailure), and a failed codeword corrupts
// every packet with a bit in it, so packets that share one are lost
// together.
package link
