package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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

// TestRTLOutDirUnwritable: an -o directory that passes the early check (no
// file in its way) but cannot be written is still one line naming the
// directory, what the file system said and what is allowed, exit 2: a
// directory named as a generated file inside it (root writes anywhere, so
// no permission bits can stand in the way in the test), and a directory
// that cannot be made (/proc refuses every mkdir). Without a remedy it was
// Go's bare "-o: mkdir /proc/x: no such file or directory".
func TestRTLOutDirUnwritable(t *testing.T) {
	const allowed = "(give a directory that exists or can be made, and that can be written in)"
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sync_fifo.v"), 0o755))
	code, _, errs := run("rtl", "-config", "edr.yaml", "--set", "switch.queueing=fifo", "-o", dir)
	assert.Equal(t, 2, code)
	assert.Equal(t, 1, strings.Count(errs, "\n"), errs)
	assert.True(t, strings.HasPrefix(errs, "hcasim rtl: -o: "+dir+" cannot be made or written: "), errs)
	assert.Contains(t, errs, "sync_fifo.v")
	assert.True(t, strings.HasSuffix(errs, allowed+"\n"), errs)

	if st, err := os.Stat("/proc/self"); err != nil || !st.IsDir() {
		t.Skip("no /proc to refuse a mkdir")
	}
	code, _, errs = run("rtl", "-config", "edr.yaml", "--set", "switch.queueing=fifo", "-o", "/proc/hcasim-rtl-out")
	assert.Equal(t, 2, code)
	assert.Equal(t, "hcasim rtl: -o: /proc/hcasim-rtl-out cannot be made or written: mkdir /proc/hcasim-rtl-out: no such file or directory "+allowed+"\n", errs)
}
