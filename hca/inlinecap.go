package hca

// A QP's inline limit as libmlx5 derives it from the caps it is created
// for (rdma-core providers/mlx5/verbs.c: sq_overhead, mlx5_calc_send_wqe,
// mlx5_calc_sq_size):
//
//	size      = sq_overhead + 16 × max_send_sge
//	inl_size  = sq_overhead + align(4 + max_inline_data, 16)  (max_inline_data > 0)
//	wqe_size  = align(max(size, inl_size), 64)
//	max_inline_data (the QP's, returned in the cap) = wqe_size − sq_overhead − 4
//
// and a post whose inline bytes exceed it is refused with ENOMEM
// (providers/mlx5/qp.c, set_data_inl_seg: inl > qp->max_inline_data).

// Send WQE overheads (libmlx5's sq_overhead, bytes) for QPs created with
// ibv_create_qp's default send ops.
const (
	// rcSQOverhead: an RC QP's default ops include bind-MW and local
	// invalidate, so its overhead is the UMR WQE's: ctrl 16 +
	// mlx5_wqe_umr_ctrl_seg 48 + mlx5_wqe_mkey_context_seg 64 + max(KLM
	// 16, 64) = 192, above RDMA's 16 + 16 and an atomic's 16 + 16 + 16
	// (_sq_overhead).
	rcSQOverhead = dsBytes + 48 + 64 + 64
	// udSQOverhead: ctrl 16 + mlx5_wqe_datagram_seg 48 (SEND, SEND with
	// immediate and TSO are a UD QP's ops; none adds a segment).
	udSQOverhead = dsBytes + datagramBytes
	// inlineHeaderBytes is mlx5_wqe_inl_data_seg's byte_count.
	inlineHeaderBytes = 4
)

// SendWQESize returns the send WQE size libmlx5 sizes a QP's send queue
// for (mlx5_calc_send_wqe): the overhead and the larger of max_send_sge
// data segments and an inline segment of max_inline_data bytes, rounded
// up to a 64-byte basic block.
func SendWQESize(ud bool, maxSendSGE, maxInlineData int) int {
	overhead := sqOverhead(ud)
	size := overhead + maxSendSGE*dsBytes
	if maxInlineData > 0 {
		size = max(size, overhead+roundUp(inlineHeaderBytes+maxInlineData, dsBytes))
	}
	return roundUp(size, WQEBBBytes)
}

// QPInlineLimit returns the max_inline_data libmlx5 gives a QP created for
// maxSendSGE gather elements and maxInlineData inline bytes
// (mlx5_calc_sq_size): what its send WQE size holds after the overhead and
// the inline segment's 4-byte header, at least maxInlineData.
func QPInlineLimit(ud bool, maxSendSGE, maxInlineData int) int {
	return SendWQESize(ud, maxSendSGE, maxInlineData) - sqOverhead(ud) - inlineHeaderBytes
}

// sqOverhead is libmlx5's sq_overhead for an RC or (ud) a UD QP.
func sqOverhead(ud bool) int {
	if ud {
		return udSQOverhead
	}
	return rcSQOverhead
}

// roundUp returns n rounded up to a multiple of the power of two a.
func roundUp(n, a int) int { return (n + a - 1) &^ (a - 1) }
