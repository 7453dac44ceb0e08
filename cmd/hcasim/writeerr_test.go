package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestOutputWriteFailsIsTheUsers: a --trace, --vcd or --pcap file that
// cannot be written to its end (a full disk: /dev/full refuses every
// write with ENOSPC) ends the run with exit 2 and one line naming the
// flag, the file system's answer and what to do, as a file that cannot be
// created does; it was exit 1, an internal error, which a CI job reads as
// a bug in hcasim.
func TestOutputWriteFailsIsTheUsers(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full to fill")
	}
	for _, flag := range []string{"--trace", "--vcd", "--pcap"} {
		code, _, errs := run("-config", "edr.yaml", "--set", "workload.iterations=3", "--quiet", flag, "/dev/full")
		assert.Equal(t, 2, code, "%s: %s", flag, errs)
		assert.Equal(t, "hcasim: "+flag+": write /dev/full: no space left on device (the file holds what was written before that; free space, or give a file elsewhere)\n", errs)
		assert.Equal(t, 1, strings.Count(errs, "\n"))
	}
}
