package workload

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// TestPerftestUDSGEs: a UD send test with its buffers cut into n
// scatter/gather elements (workload.sges on workload.connection UD).
//
//   - The WQE the client posts is ctrl 16 + datagram 48 + 16 per element
//     (mlx5_wqe_ctrl_seg, mlx5_wqe_av, mlx5_wqe_data_seg): 4 + n 16-byte
//     segments in its ctrl DS count, ⌈(64 + 16n) / 64⌉ WQEBBs, and its
//     elements hold the message's bytes. Inline (send_lat of 32 bytes),
//     the CPU copies the elements into one inline segment: 16 + 48 +
//     align16(4 + 32) = 112 bytes, 7 segments, whatever n.
//   - It moves the bytes one element moves: the same packets and 64-byte
//     block hops on the link (the datagrams are the same), none dropped,
//     the destination equal to the source (data_verified), the GRH area
//     and payload landing across the receive list where one element puts
//     them.
//   - Each element's L_Key is checked: every key_check item (a send's
//     gather element, a receive's scatter element) becomes n. An inline
//     send checks no key with one element or n, so on send_lat of 32
//     bytes only the receives' checks remain, on both sides (each host
//     sends and receives), and they too become n.
func TestPerftestUDSGEs(t *testing.T) {
	for _, tc := range []struct {
		test        string
		size, iters int
		sges        int
		srq         bool
	}{
		{"send_bw", 2048, 300, 3, false},
		{"send_bw", 4096, 200, 30, false},
		{"send_bw", 2048, 300, 4, true},
		{"send_lat", 1000, 30, 5, false},
		{"send_lat", 32, 30, 2, false}, // inline
	} {
		t.Run(fmt.Sprintf("%s/%d/%d/srq=%v", tc.test, tc.size, tc.sges, tc.srq), func(t *testing.T) {
			run := edrRun(tc.test, tc.size, tc.iters)
			run.Connection, run.UseSRQ = "UD", tc.srq
			runN := run
			runN.SGEs = tc.sges

			pt, err := BuildPerftest(runN)
			require.NoError(t, err)
			p := pt.p
			w := p.wr(0, 0, true, 0)
			// PostSend gives the WQE its list's length (the WR carries 0).
			for _, e := range w.SGL {
				w.Length += e.Length
			}
			var buf [hca.MaxWQEBytes + hca.WQEBBBytes]byte
			var inline []byte
			segs := 4 + tc.sges
			if p.inline {
				inline = make([]byte, tc.size)
				segs = 4 + (4+tc.size+15)/16
			}
			size := hca.EncodeSendWQE(buf[:], &w, 0, p.qp[0][0].Num, inline)
			assert.Equal(t, segs, int(buf[7]&0x3f), "ctrl DS count")
			assert.Equal(t, (segs*16+63)/64*64, size, "WQE bytes")
			wqe, err := hca.DecodeUDSendWQE(buf[:size])
			require.NoError(t, err)
			assert.Equal(t, uint32(tc.size), wqe.Length)
			if !p.inline {
				require.Len(t, wqe.SGL, tc.sges)
			}

			m1, err := RunPerftest(run)
			require.NoError(t, err)
			mn, err := pt.Run()
			require.NoError(t, err)
			assert.Equal(t, true, mn["data_verified"], "%v", mn["data_errors"])
			for _, k := range []string{"data_verified", "packets_delivered", "block_hops", "host1_ud_drops", "iterations"} {
				assert.Equal(t, m1[k], mn[k], k)
			}
			assert.Zero(t, mn["host1_ud_drops"])
			items := func(m map[string]any, host string) int64 {
				return m["stages"].(map[string]any)[host].(map[string]any)["key_check"].(map[string]any)["items"].(int64)
			}
			n := int64(tc.sges)
			assert.Equal(t, n*items(m1, "host0"), items(mn, "host0"), "client key checks")
			assert.Equal(t, n*items(m1, "host1"), items(mn, "host1"), "server key checks")
		})
	}
}
