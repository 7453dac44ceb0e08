package fabric

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/verif"
)

// TestPreFECBERValidated: link.pre_fec_ber out of range, beside link.ber,
// or on links without an RS FEC is one line naming the key, the value and
// what is allowed; so is a topology file's cable that runs without one
// (refused when the run builds it, as a user's error).
func TestPreFECBERValidated(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"link.pre_fec_ber=-1e-5"}, "link.pre_fec_ber: -1e-05 is out of range (0 for off, up to 0.01: the bit error rate ahead of the RS FEC)"},
		{[]string{"link.pre_fec_ber=0.02"}, "link.pre_fec_ber: 0.02 is out of range (0 for off, up to 0.01: the bit error rate ahead of the RS FEC)"},
		{[]string{"link.pre_fec_ber=1e-3", "link.ber=1e-9"},
			"link.pre_fec_ber: 0.001 and link.ber 1e-09 are both set; give one (pre_fec_ber: failed RS codewords, ber: independent post-FEC bit errors)"},
		{[]string{"link.generation=EDR", "link.pre_fec_ber=1e-3"},
			"link.pre_fec_ber: 0.001 needs a Reed-Solomon FEC, and EDR links run none here (link.fec rs528 or llrs271); give link.ber, the post-FEC rate, instead"},
		{[]string{"link.generation=FDR", "link.pre_fec_ber=1e-3"},
			"link.pre_fec_ber: 0.001 needs a Reed-Solomon FEC, and FDR links run none here (FDR has no RS FEC mode); give link.ber, the post-FEC rate, instead"},
		{[]string{"topology.kind=fat-tree-2", "switch.radix=8", "topology.host_link_generation=EDR", "link.pre_fec_ber=1e-3"},
			"link.pre_fec_ber: 0.001 needs a Reed-Solomon FEC, and the cable Fabric.Host[0].Port[1] to Fabric.Leaf[0].Port[1] runs 4x EDR with FEC none; give it an RS fec= or its own post-FEC ber="},
	} {
		_, err := Load(nil, tc.sets)
		require.Error(t, err, "%v", tc.sets)
		assert.Equal(t, tc.want, strings.TrimPrefix(err.Error(), "config: "))
		assert.NotContains(t, err.Error(), "\n")
	}
	for _, ok := range [][]string{{"link.pre_fec_ber=0.01"}, {"link.generation=EDR", "link.fec=rs528", "link.pre_fec_ber=1e-3"},
		{"link.generation=EDR", "link.fec=llrs271", "link.pre_fec_ber=1e-3"}, {"link.generation=HDR", "link.pre_fec_ber=2.4e-4"}} {
		_, err := Load(nil, ok)
		assert.NoError(t, err, "%v", ok)
	}

	// A topology file's EDR cable under an NDR link section: refused when
	// the run builds it, unless the cable gives its own post-FEC ber=.
	topo := func(opt string) string {
		return "switch Fabric.Switch[0] 2\nhost Fabric.Host[0]\nhost Fabric.Host[1]\n" +
			"cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1]\n" +
			"cable Fabric.Host[1].Port[1] Fabric.Switch[0].Port[2] gen=EDR" + opt + "\n"
	}
	path := filepath.Join(t.TempDir(), "t.topo")
	require.NoError(t, os.WriteFile(path, []byte(topo("")), 0o644))
	sets := []string{"topology.kind=file", "topology.file=" + path, "switch.radix=2", "link.pre_fec_ber=1e-3",
		"workload.kind=uniform", "workload.size=1024", "workload.measure_ns=2000"}
	l, err := Load(nil, sets)
	require.NoError(t, err)
	_, err = Run(l, RunOptions{})
	var un *UnsupportedError
	require.ErrorAs(t, err, &un)
	assert.Equal(t, "link.pre_fec_ber: 0.001 needs a Reed-Solomon FEC, and the cable Fabric.Host[1].Port[1] to Fabric.Switch[0].Port[2] runs 4x EDR with FEC none; give it an RS fec= or its own post-FEC ber=", err.Error())
	for _, opt := range []string{" fec=rs528", " ber=0"} {
		require.NoError(t, os.WriteFile(path, []byte(topo(opt)), 0o644))
		l, err := Load(nil, sets)
		require.NoError(t, err)
		_, err = Run(l, RunOptions{})
		assert.NoError(t, err, opt)
	}
}

// TestCodewordErrorsWriteBW: ib_write_bw of 16 KiB messages, tx_depth 4,
// back to back at NDR (RS(544,514)), pre-FEC BER 1.3e-3: a codeword fails
// with P_cw = 2.3368e-3 (link.CodewordFailure; TestCodewordFailure checks
// the sum). Host 0's data packets are WRITE FIRST (4,138 wire bytes) and
// MIDDLE/LAST (4,122): 4,122 = 6 × 640 + 282 bytes, so each spans 7 or 8
// of the 640-byte codewords, whatever its offset, and is corrupted with
// p between p7 = 1 − (1 − P_cw)^7 = 1.624 % and p8 = 1.855 %. RC recovers
// every loss: the data verify.
//
// The count: of the N data packets host 0 sent, host 1 discarded K = Σ X_i.
// Two data packets share a codeword only when adjacent on the wire (each is
// longer than a codeword), so X_i and X_j are independent for |i − j| ≥ 2,
// and Var K = Σ Var X_i + 2 Σ Cov(X_i, X_{i+1}) ≤ 3 Σ Var X_i
// ≤ 3 N p8 (1 − p7) (Cov ≤ the mean of the two variances). E K lies in
// [N p7, N p8]; K must lie within 5 of those σ around that range.
func TestCodewordErrorsWriteBW(t *testing.T) {
	sets := []string{"topology.kind=back-to-back", "link.generation=NDR", "switch.vls=1", "hca.profile=cx7",
		"workload.kind=perftest", "workload.test=write_bw", "workload.size=16384", "workload.tx_depth=4",
		"workload.iterations=2000", "hca.retry_timeout=2", "link.pre_fec_ber=1.3e-3"}
	m, view := runLossy(t, sets...)
	assert.Equal(t, true, m["data_verified"])
	assert.Greater(t, num(t, m, "retries"), 0.0)
	pcw := link.CodewordFailure(link.FECRS544, 1.3e-3)
	assert.InEpsilon(t, 2.33683293153e-3, pcw, 1e-9)

	host0, host1 := view.Ports[0], view.Ports[1]
	require.Equal(t, "Fabric.Host[0].HCA.Port[1]", host0.Name)
	n, k := float64(host0.Stats().DataPackets), float64(host1.Errors.Packets)
	p7, p8 := 1-math.Pow(1-pcw, 7), 1-math.Pow(1-pcw, 8)
	sigma := math.Sqrt(3 * n * p8 * (1 - p7))
	assert.GreaterOrEqual(t, k, n*p7-5*sigma, "%v of %v data packets lost", k, n)
	assert.LessOrEqual(t, k, n*p8+5*sigma, "%v of %v data packets lost", k, n)
	assert.Equal(t, float64(host0.Errors.Packets+host1.Errors.Packets), num(t, m, "link_packet_errors"))
	// Every corrupted packet met a failed codeword that began before the
	// workload ended or while it was on the wire; a codeword may corrupt two.
	failed := num(t, m, "link_fec_uncorrectable")
	assert.Positive(t, failed)
	assert.LessOrEqual(t, failed, float64(host0.FailedCodewordsBefore(view.Now())+host1.FailedCodewordsBefore(view.Now())))
	t.Logf("P_cw %.4e: %v of %v data packets lost (expected %.0f … %.0f ± %.1f); %v failed codewords; retries %v, timeouts %v; bw %.1f Gb/s",
		pcw, k, n, n*p7, n*p8, sigma, failed, num(t, m, "retries"), num(t, m, "timeouts"), num(t, m, "bw_gbps"))
}

// TestCodewordErrorsDeterministic: uniform traffic on a radix-8 fat tree
// at pre-FEC BER 1.3e-3 loses packets (4 KiB packets span 7 or 8
// codewords: 1.6–1.9 % a link) and passes every checker; the same config
// and seed give the same results and the same trace, byte for byte; two
// partitions give the serial run's results but the event count (each
// port's draws follow only its own packets).
func TestCodewordErrorsDeterministic(t *testing.T) {
	sets := []string{"topology.kind=fat-tree-2", "switch.radix=8", "workload.kind=uniform", "workload.size=4096",
		"workload.offered_load=0.3", "workload.warmup_ns=1000", "workload.measure_ns=10000", "link.pre_fec_ber=1.3e-3"}
	run := func(sets ...string) (map[string]any, string) {
		r := runRecorded(t, sets, func(*Simulation) verif.CheckConfig { return verif.CheckConfig{} }, nil)
		require.True(t, r.Settled)
		require.NoError(t, r.Err)
		return r.M, r.Trace
	}
	m1, tr1 := run(sets...)
	m2, tr2 := run(sets...)
	assert.Positive(t, num(t, m1, "packets_dropped"))
	assert.Positive(t, num(t, m1, "link_fec_uncorrectable"))
	assert.Equal(t, m1, m2)
	require.Greater(t, strings.Count(tr1, "drop"), 10)
	assert.True(t, tr1 == tr2, "the same config and seed give the same trace, byte for byte")

	mp := runPoint(t, append([]string{"sim.partitions=2"}, sets...)...)
	delete(mp, "events")
	serial := runPoint(t, sets...)
	delete(serial, "events")
	assert.Equal(t, serial, mp)
}
