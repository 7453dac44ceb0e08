package hca

import (
	"fmt"
	"slices"
	"syscall"
)

// Destroy verbs: ibv_destroy_qp, ibv_destroy_cq, ibv_destroy_srq,
// ibv_dereg_mr and ibv_dealloc_pd, with the kernel's rules (Linux
// drivers/infiniband/core/verbs.c and uverbs_std_types.c):
//
//   - An object something still uses is refused with EBUSY, and stays as
//     it was: a QP attached to a multicast group (ib_destroy_qp_user:
//     qp->usecnt, which ib_attach_mcast raises; uverbs_free_qp: a
//     non-empty mcast_list), a CQ a QP sends or receives on
//     (ib_destroy_cq_user: cq->usecnt, raised for the QP's send_cq and
//     recv_cq at create), an SRQ a QP takes its receives from
//     (ib_destroy_srq_user: srq->usecnt), a PD with a QP, SRQ, MR or MW in
//     it (uverbs_free_pd: pd->usecnt, raised by each at create). A region
//     with memory windows bound is refused as KeyTable.Deregister refuses
//     it: EINVAL (rxe_dereg_mr; the old ib_dereg_mr's mr->usecnt gave
//     EBUSY, mlx5 keeps no count of its own).
//   - A handle already destroyed (or never made) is refused with ENOENT,
//     as DeallocMW refuses one (the kernel does not find the handle).
//   - A QP is destroyed through RESET, not ERR: mlx5's destroy_qp_common
//     moves a QP not in RESET there (MLX5_CMD_OP_2RST_QP) before the
//     destroy command, so its outstanding work requests complete with no
//     CQE at all (a flush to ERR would write WR_FLUSH_ERR CQEs), its
//     queued packets never leave, and libmlx5's mlx5_destroy_qp then
//     removes its CQEs not yet polled from its CQs (__mlx5_cq_clean),
//     freeing the SRQ WQEs of its receive CQEs (mlx5_free_srq_wqe).
//   - A packet that arrives for a destroyed QP's number is dropped as one
//     for a number the device has no QP of (Counters.NoQPDrops). The
//     fabric delivered it (its deliver event is at the HCA's input), so
//     the lossless checker counts it delivered: losing it is the
//     transport's business, as an RC peer's retries and its retry count
//     settle, and no link lost it.
//   - A destroyed QP's number is not given again: QPNs go up from 0x100,
//     one per QP made, and the model never wraps the 24-bit space. rxe
//     hands out QP numbers cyclically (rxe_pool.c: xa_alloc_cyclic from
//     pool->next), so a freed number comes back only after the rest of
//     its range has been handed out; mlx5's firmware chooses its QPNs
//     (not in our sources).
//
// The firmware commands' time is not modelled: each verb takes effect at
// once. A destroyed object's host memory is not freed (Allocator has no
// free), and the key cache keeps a deregistered key's context (the check
// after a hit refuses the key all the same, as for DeallocMW).

// DestroyQP destroys qp (ibv_destroy_qp): EBUSY while it is attached to a
// multicast group, ENOENT for a QP destroyed already. Its outstanding work
// is dropped without completions, its CQEs not yet polled are removed from
// its CQs (and those landing later are dropped), and packets for its
// number are dropped from now on.
func (d *Device) DestroyQP(qp *QP) error {
	if qp == nil || qp.dev != d || qp.destroyed {
		return fmt.Errorf("hca: %s destroy_qp: no such QP: %w", d.Name, syscall.ENOENT)
	}
	for i := range d.mcast {
		for _, q := range d.mcast[i].qps {
			if q == qp {
				return fmt.Errorf("qp 0x%x: destroy_qp while attached to multicast LID 0x%x: %w", qp.Num, d.mcast[i].mlid, syscall.EBUSY)
			}
		}
	}
	qp.destroyed = true
	d.dropQueued(qp)
	qp.req, qp.resp = nil, nil
	qp.udPending = qp.udPending[:0]
	qp.decoded = qp.decoded[:0]
	qp.fenceWait = false
	qp.timerArmed = false
	qp.State = QPReset
	if d.qpc != nil {
		d.qpc.drop(qp.Num) // as DestroyCQ's
	}
	d.cleanCQ(qp.RecvCQ, qp)
	if qp.SendCQ != qp.RecvCQ {
		d.cleanCQ(qp.SendCQ, qp)
	}
	if qp.srq != nil {
		qp.srq.qps--
	}
	return nil
}

// Destroyed reports whether the QP was destroyed (DestroyQP).
func (qp *QP) Destroyed() bool { return qp.destroyed }

// dropQueued drops qp's packets and UD completion markers from its VL's
// transmit queues: a QP in RESET sends nothing more. A packet already on
// the wire goes on to the peer.
func (d *Device) dropQueued(qp *QP) {
	v := &d.tx.vl[qp.vl]
	for _, q := range []*txQueue{&v.req, &v.resp} {
		kept := q.items[:q.head]
		for _, e := range q.items[q.head:] {
			if e.qp != qp {
				kept = append(kept, e)
				continue
			}
			switch {
			case e.pkt == nil && e.readRes == 0:
				d.tx.markers-- // a UD completion marker
			case e.pkt != nil:
				if q == &v.req {
					d.tx.freed(int(qp.vl), e.pkt.WireBytes(), d.Cfg.TxBufferBytes)
				}
				d.s.FreePacket(e.pkt)
			}
		}
		q.items = kept
	}
}

// cleanCQ removes qp's CQEs the application has not polled from cq, as
// libmlx5's __mlx5_cq_clean does at mlx5_destroy_qp: from the newest CQE
// back to the oldest, each of qp's is dropped (a receive CQE of an SRQ
// frees its WQE) and each other CQE moves up past the dropped ones,
// keeping its destination slot's owner bit; the consumer index then
// advances by the CQEs dropped.
func (d *Device) cleanCQ(cq *CQ, qp *QP) {
	if cq == nil {
		return
	}
	var b [CQEBytes]byte
	dropped := uint32(0)
	for i := cq.pi; i != cq.ci; {
		i--
		at := cq.buf + uint64(i%uint32(cq.Depth))*CQEBytes
		d.Mem.Read(at, b[:])
		c := DecodeCQE(b[:])
		if c.QPN == qp.Num {
			if c.Receiver && qp.srq != nil {
				qp.srq.freeWQE(uint16(uint32(c.Counter) % uint32(qp.srq.depth)))
			}
			dropped++
			continue
		}
		if dropped > 0 {
			j := i + dropped
			c.Owner = (j/uint32(cq.Depth))&1 == 1
			EncodeCQE(b[:], &c)
			d.Mem.Write(cq.buf+uint64(j%uint32(cq.Depth))*CQEBytes, b[:])
		}
	}
	cq.ci += dropped
}

// DestroyCQ destroys cq (ibv_destroy_cq): EBUSY while a QP not destroyed
// sends or receives on it, ENOENT for a CQ destroyed already, and EBUSY
// while events of it that GetCQEvent returned are not acknowledged
// (libibverbs' ibv_cmd_destroy_cq waits there until comp_events_completed
// reaches the kernel's comp_events_reported, the events read: the model's
// caller cannot wait, so it is told). Its events on the channel not read
// yet are removed (the kernel's ib_uverbs_release_ucq frees the CQ's
// entries of the event list), and an event or an arm still on its way
// finds no CQ (mlx5_eq_comp_int: "Completion event for bogus CQ", dropped).
func (d *Device) DestroyCQ(cq *CQ) error {
	if cq == nil || cq.dev != d || cq.destroyed {
		return fmt.Errorf("hca: %s destroy_cq: no such CQ: %w", d.Name, syscall.ENOENT)
	}
	for _, qp := range d.qps {
		if !qp.destroyed && (qp.SendCQ == cq || qp.RecvCQ == cq) {
			return fmt.Errorf("cq %d: destroy_cq while qp 0x%x uses it: %w", cq.Num, qp.Num, syscall.EBUSY)
		}
	}
	n := &cq.notify
	queued := 0
	if n.ch != nil {
		for _, c := range n.ch.events {
			if c == cq {
				queued++
			}
		}
	}
	if read := n.events - n.acked - uint32(queued); read > 0 {
		return fmt.Errorf("cq %d: destroy_cq with %d events read and not acknowledged (ibv_destroy_cq would wait for ibv_ack_cq_events): %w", cq.Num, read, syscall.EBUSY)
	}
	if queued > 0 {
		n.ch.events = slices.DeleteFunc(n.ch.events, func(c *CQ) bool { return c == cq })
	}
	n.armed = false
	cq.destroyed = true
	if d.cqc != nil {
		// The destroy command takes the context through the firmware:
		// no write-back at a later eviction (not timed).
		d.cqc.drop(cq.Num)
	}
	return nil
}

// DestroySRQ destroys s (ibv_destroy_srq): EBUSY while a QP not destroyed
// takes its receives from it, ENOENT for an SRQ destroyed already. Its
// WQEs still posted are dropped without completions, and reads of them in
// flight put nothing on chip.
func (d *Device) DestroySRQ(s *SRQ) error {
	if s == nil || s.dev != d || s.destroyed {
		return fmt.Errorf("hca: %s destroy_srq: no such SRQ: %w", d.Name, syscall.ENOENT)
	}
	if s.qps > 0 {
		return fmt.Errorf("srq %d: destroy_srq while %d QPs use it: %w", s.Num, s.qps, syscall.EBUSY)
	}
	s.destroyed = true
	s.cache.clear()
	s.limit = 0
	if d.srqc != nil {
		d.srqc.drop(s.Num) // as DestroyCQ's
	}
	return nil
}

// DeregMR deregisters mr (ibv_dereg_mr): its keys name nothing from now
// on. A region with memory windows bound is refused with EINVAL, and a key
// that names no live region (deregistered already) likewise
// (KeyTable.Deregister, rxe's rules).
//
// A fast-registration region (AllocMR) is deregistered by its handle,
// whatever its key's variant now and whether FREE or mapped (ib_dereg_mr
// of an MR from ib_alloc_mr: the mkey is destroyed in either state);
// a mapped one's pages leave the MTT cache, as at an invalidation.
func (d *Device) DeregMR(mr MR) error {
	addr, n, err := d.Keys.deregister(mr.LKey)
	if err == nil && d.mtt != nil && n > 0 {
		for p := addr >> d.pageShift; p <= (addr+n-1)>>d.pageShift; p++ {
			d.mtt.drop(p)
		}
	}
	return err
}

// DeallocPD frees protection domain pd (ibv_dealloc_pd): EBUSY while a QP,
// SRQ, memory region or memory window not yet destroyed is in it, ENOENT
// for a PD never allocated or freed already.
func (d *Device) DeallocPD(pd uint32) error {
	if pd == 0 || pd >= d.nextPD || d.freedPDs[pd] {
		return fmt.Errorf("hca: %s dealloc_pd: no such PD %d: %w", d.Name, pd, syscall.ENOENT)
	}
	busy := func(what string) error {
		return fmt.Errorf("pd %d: dealloc_pd while %s is in it: %w", pd, what, syscall.EBUSY)
	}
	for _, qp := range d.qps {
		if !qp.destroyed && qp.PD == pd {
			return busy(fmt.Sprintf("qp 0x%x", qp.Num))
		}
	}
	for _, s := range d.srqs {
		if !s.destroyed && s.PD == pd {
			return busy(fmt.Sprintf("srq %d", s.Num))
		}
	}
	if key, ok := d.Keys.inPD(pd); ok {
		return busy(fmt.Sprintf("key %#x", key))
	}
	if d.freedPDs == nil {
		d.freedPDs = map[uint32]bool{}
	}
	d.freedPDs[pd] = true
	return nil
}

// inPD returns the key of a live region (registered, not deregistered) or
// an allocated memory window in pd, if there is one.
func (t *KeyTable) inPD(pd uint32) (uint32, bool) {
	for i := range t.entries {
		e := &t.entries[i]
		// A freed window's entry is zero (FreeWindow), a deregistered
		// region's not valid; a fast-registration region counts while it
		// is allocated, FREE or mapped (ib_alloc_mr raises the PD's
		// usecnt as ib_reg_user_mr does), and not once deregistered
		// (frPages 0).
		if e.PD == pd && (e.Window != 0 || e.valid || e.frPages > 0) {
			return e.LKey, true
		}
	}
	return 0, false
}

// checkLive refuses to make an object in a PD freed by DeallocPD or on a
// CQ destroyed by DestroyCQ: with the verbs the handle is gone (a use of
// it is the application's bug, libibverbs' memory freed), so the model
// says so instead of building on it (EINVAL).
func (d *Device) checkLive(pd uint32, cqs ...*CQ) error {
	if d.freedPDs[pd] {
		return fmt.Errorf("hca: %s: pd %d is freed (dealloc_pd): %w", d.Name, pd, syscall.EINVAL)
	}
	for _, cq := range cqs {
		if cq != nil && cq.destroyed {
			return fmt.Errorf("hca: %s: cq %d is destroyed (destroy_cq): %w", d.Name, cq.Num, syscall.EINVAL)
		}
	}
	return nil
}
