package main

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/rtl"
)

// TestRTLDocFileCount: docs/rtl.md's count of the files `hcasim rtl -o`
// writes is the count the emitter writes, for shipped designs of one and
// several VLs (the count does not depend on the design). It said 37 while
// the tree had grown to 40.
func TestRTLDocFileCount(t *testing.T) {
	page, err := os.ReadFile("../../docs/rtl.md")
	require.NoError(t, err)
	m := regexp.MustCompile("`-o DIR` writes the tree \\(one module per file, (\\d+) files").FindSubmatch(page)
	require.NotNil(t, m, "docs/rtl.md states how many files -o DIR writes")
	documented, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	for _, sets := range [][]string{
		{"switch.queueing=fifo"},
		{"switch.queueing=fifo", "switch.vls=4"},
	} {
		d, err := rtl.LoadDesign("edr.yaml", sets)
		require.NoError(t, err)
		files, err := rtl.Emit(d, "test")
		require.NoError(t, err)
		assert.Equal(t, documented, len(files), "docs/rtl.md's file count, %v", sets)
	}
}
