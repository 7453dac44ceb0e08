package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWQEFetchSplitsAtMRRSBoundary: a send WQE of 8 WQEBBs (512 bytes)
// fetched from ring slot 4 is read at sq base + 4 × 64 = base + 256, as
// the RTL's hca_wqe_fetch addresses it (rd_req_addr = base + slot × 64).
// The ring is page-aligned (Malloc), so at MRRS 512 the read splits at
// base + 512: ReadRequest(base + 256, 512, 512) = 512 − 256 = 256, then
// 256: two requests, where the count split (⌈512 / 512⌉) made one. The
// same WQE at slot 0 is one request. The WQE: an inline RDMA WRITE of 476
// bytes, ctrl 16 + remote address 16 + ⌈(4 + 476) / 16⌉ × 16 = 480 inline,
// 512 bytes, too large for BlueFlame (256), so it is fetched; the four
// WQEs before it (one WQEBB, inline, 8 bytes) go by BlueFlame and are not
// read. Inline data needs no payload read nor L_Key check, so the WQE
// fetch is A's only PCIe read.
func TestWQEFetchSplitsAtMRRSBoundary(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before int   // one-WQEBB BlueFlame WQEs posted first: the big WQE's slot
		reqs   int64 // read requests of the big WQE's fetch
	}{
		{"slot 0", 0, 1},
		{"slot 4", 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.MaxInlineBytes = 476
			require.Equal(t, 512, cfg.PCIe.MRRSBytes)
			require.GreaterOrEqual(t, cfg.WQEPrefetchDepth, 8, "the window takes the WQE in one read")
			p := newPair(t, edrLink(), cfg, 4096)
			require.Zero(t, p.qa.sqBuf%uint64(cfg.PCIe.MRRSBytes))
			var wcs [8]WC
			n := 0
			for k := 0; k < tc.before; k++ {
				wr := SendWR{ID: uint64(k), Opcode: WRRDMAWrite, Signaled: true, Inline: true,
					LocalAddr: p.bufA, Length: 8, RemoteAddr: p.bufB, RKey: p.mrB.RKey}
				require.Equal(t, 1, WQEBBs(&wr))
				require.NoError(t, p.a.PostSend(p.qa, &wr))
			}
			big := SendWR{ID: 99, Opcode: WRRDMAWrite, Signaled: true, Inline: true,
				LocalAddr: p.bufA, Length: 476, RemoteAddr: p.bufB, RKey: p.mrB.RKey}
			require.Equal(t, 8, WQEBBs(&big))
			require.NoError(t, p.a.PostSend(p.qa, &big))
			p.runUntil(t, func() bool { n += p.a.PollCQ(p.qa.SendCQ, wcs[n:]); return n == tc.before+1 })
			require.Equal(t, tc.before+1, n)
			require.Equal(t, WCSuccess, wcs[tc.before].Status)
			require.Equal(t, uint64(99), wcs[tc.before].WRID)
			assert.Equal(t, tc.reqs, p.a.PCIe.ReadRequests)
			assert.Equal(t, int64(8*WQEBBBytes), p.a.PCIe.ReadBytes)
		})
	}
}
