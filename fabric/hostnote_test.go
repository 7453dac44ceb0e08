package fabric

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// b2bWriteBW is an ib_write_bw back to back on the default link (NDR 4x)
// that names no host profile.
const b2bWriteBW = `
topology: {kind: back-to-back}
workload: {kind: perftest, test: write_bw, size: 65536, iterations: 200}
`

// TestHostNoteNamesTheHostBound: an NDR perftest without hca.profile runs
// on the default ConnectX-5 host, whose PCIe Gen3 x16 reads payload at
//
//	8 GT/s × 16 lanes × 128/130 = 126.03 Gb/s raw, × 64 / (64 + 20) = 96.02 Gb/s
//
// (64-byte read completions, each with 20 bytes of STP, header and LCRC;
// the tag bound, 64 reads of 512 bytes a ≈540 ns round trip, is ≈490 Gb/s,
// far above), against the link's 400 Gb/s. The note says so with those
// numbers, and it is true: the run's bandwidth is under the PCIe bound and
// near it (the bound holds only the payload's reads; WQE reads, doorbells
// and the first message's latency take the rest, a few per cent).
func TestHostNoteNamesTheHostBound(t *testing.T) {
	l, err := Load([]byte(b2bWriteBW), nil)
	require.NoError(t, err)
	read := 8.0 * 16 * 128 / 130 * 64 / (64 + 20)
	want := fmt.Sprintf("note: hca.profile is not set, so every host is the default cx5 (PCIe Gen3 x16: DMA reads at most %.1f Gb/s) on NDR 4x links (400.0 Gb/s): the hosts' PCIe, not the links, bounds bandwidth; set hca.profile: cx7, the NDR host (profiles: cx5, cx6, cx7, cx8)", read)
	assert.Equal(t, want, HostNote(l))

	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	bw := m["bw_gbps"].(float64)
	assert.LessOrEqual(t, bw, read, "the PCIe bound holds")
	assert.Greater(t, bw, 0.95*read, "and it is what bounds the run, not the 400 Gb/s link")

	// The note's advice works: with the NDR host the same test passes the
	// old bound by far.
	l7, err := Load([]byte(b2bWriteBW), []string{"hca.profile=cx7"})
	require.NoError(t, err)
	m7, err := Run(l7, RunOptions{})
	require.NoError(t, err)
	assert.Greater(t, m7["bw_gbps"].(float64), 2*read)
}

// TestHostNoteOnlyWhenItApplies: no note when the user chose the host (a
// profile, even cx5, or a PCIe section), when the default host is the
// link's own (EDR: a ConnectX-5 is PCIe-bound on EDR too), when the PCIe
// keeps up (FDR 4x, 54.5 Gb/s), or when no HCA runs (synthetic traffic).
// It does apply through a host cable faster than the link section's.
func TestHostNoteOnlyWhenItApplies(t *testing.T) {
	for _, c := range []struct {
		name string
		yaml string
		sets []string
		note bool
	}{
		{"default NDR host link", b2bWriteBW, nil, true},
		{"profile named", b2bWriteBW, []string{"hca.profile=cx5"}, false},
		{"PCIe named", b2bWriteBW, []string{"hca.pcie.lanes=16"}, false},
		{"EDR", b2bWriteBW, []string{"link.generation=EDR"}, false},
		{"FDR", b2bWriteBW, []string{"link.generation=FDR"}, false},
		{"HDR", b2bWriteBW, []string{"link.generation=HDR"}, true},
		{"synthetic", "topology: {kind: single-switch, hosts: 4}\nworkload: {kind: uniform}\n", nil, false},
		{"collective", "topology: {kind: single-switch, hosts: 4}\nworkload: {kind: allreduce, size: 4096}\n", nil, true},
		{"EDR switch, HDR host cables", "link: {generation: EDR}\ntopology: {kind: single-switch, hosts: 4, host_link_generation: HDR}\nworkload: {kind: perftest}\n", nil, true},
		{"NDR switch, EDR host cables", "topology: {kind: single-switch, hosts: 4, host_link_generation: EDR}\nworkload: {kind: perftest}\n", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Load([]byte(c.yaml), c.sets)
			require.NoError(t, err)
			if c.note {
				assert.NotEmpty(t, HostNote(l))
			} else {
				assert.Empty(t, HostNote(l))
			}
		})
	}
}
