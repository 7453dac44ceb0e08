package link

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFECModesPerGeneration: a FEC mode is accepted only on the generations
// whose data rate is right for it. The PAM4 generations' 16/17 efficiency
// already pays for RS(544,514)'s parity (4 × 66-bit blocks → 257 bits, 514
// symbols of data in 544), so "none" on NDR charged the parity without the
// latency, and rs528/llrs271 (NRZ codes) kept RS(544,514)'s rate while taking
// their own codeword time; an RS code on an 8b/10b or plain 64b/66b
// generation does not exist (ib-facts.md §1's FEC column).
func TestFECModesPerGeneration(t *testing.T) {
	for _, tc := range []struct {
		gen, fec string
		err      string // "" = valid
	}{
		{"NDR", "default", ""},
		{"NDR", "rs544", ""},
		{"NDR", "none", "link.fec: none is not a FEC mode of NDR links (default, rs544; link.fec_latency_ns sets the FEC latency)"},
		{"HDR", "rs528", "link.fec: rs528 is not a FEC mode of HDR links (default, rs544;"},
		{"XDR", "llrs271", "link.fec: llrs271 is not a FEC mode of XDR links"},
		{"EDR", "none", ""},
		{"EDR", "rs528", ""},
		{"EDR", "llrs271", ""},
		{"EDR", "rs544", "link.fec: rs544 is not a FEC mode of EDR links (default, none, rs528, llrs271;"},
		{"SDR", "none", ""},
		{"FDR", "rs528", "link.fec: rs528 is not a FEC mode of FDR links (default, none;"},
		{"QDR", "bogus", `link.fec: "bogus" is not a FEC mode (default, none, rs528, rs544, llrs271)`},
	} {
		t.Run(tc.gen+"-"+tc.fec, func(t *testing.T) {
			c := Defaults()
			c.Generation, c.FEC = tc.gen, tc.fec
			err := c.Validate("link")
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), tc.err)
			}
		})
	}
	// Every generation's default mode is one it allows.
	for g, info := range Generations {
		assert.Contains(t, FECModes(g), info.DefaultFEC, "%s", g)
	}
}
