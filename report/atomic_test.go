package report

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteFileIsNeverSeenPartial: a reader polling the path while
// WriteFile replaces it, again and again, sees only whole files, the old
// or the new, never a truncated one. os.WriteFile (truncate, then write)
// fails this: the reader sees lengths between 0 and the file's (the
// mutant below was run: every run saw partial files).
func TestWriteFileIsNeverSeenPartial(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	const size = 4 << 20 // large enough that one write spans many reads
	a, b := bytes.Repeat([]byte{'a'}, size), bytes.Repeat([]byte{'b'}, size)
	require.NoError(t, WriteFile(path, a))

	var stop atomic.Bool
	var partial, reads atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			got, err := os.ReadFile(path)
			if err != nil {
				partial.Add(1) // the path must exist throughout
				continue
			}
			reads.Add(1)
			if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
				partial.Add(1)
			}
		}
	}()
	for i := range 20 {
		data := a
		if i%2 == 0 {
			data = b
		}
		require.NoError(t, WriteFile(path, data))
	}
	stop.Store(true)
	wg.Wait()
	require.Positive(t, reads.Load(), "the reader read nothing: the test checked nothing")
	require.Zero(t, partial.Load(), "reads of a missing or partial file, of %d", reads.Load())

	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, left, 1, "temporary files left behind")
}

// TestWriteFileModes: a new file is 0644 (less the umask), an existing
// file keeps its mode, as with os.WriteFile; WriteFileMode sets its mode
// either way (a script made executable though an earlier one was not).
func TestWriteFileModes(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, WriteFile(p, []byte("1")))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Zero(t, fi.Mode().Perm()&^0o644, "a new file's mode %v", fi.Mode())

	require.NoError(t, os.Chmod(p, 0o600))
	require.NoError(t, WriteFile(p, []byte("2")))
	fi, err = os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the existing file's mode is kept")

	require.NoError(t, WriteFileMode(p, []byte("#!/bin/sh\n"), 0o700))
	fi, err = os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm()&0o700)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "#!/bin/sh\n", string(got))
}

// TestWriteFileErrorsNameThePath: an error names the file asked for, never
// the temporary file written beside it (".f2387589054693666038"), and a
// directory given as the file is refused before anything is written (the
// rename onto it failed with the temporary name and "file exists").
func TestWriteFileErrorsNameThePath(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "d")
	require.NoError(t, os.Mkdir(dir, 0o755))
	missing := filepath.Join(dir, "missing", "f")
	writers := map[string]func(string, []byte) error{
		"WriteFile":     WriteFile,
		"WriteFileMode": func(p string, b []byte) error { return WriteFileMode(p, b, 0o755) },
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			err := write(missing, []byte("x"))
			require.Error(t, err)
			assert.Equal(t, "open "+missing+": no such file or directory", err.Error())

			err = write(dir, []byte("x"))
			require.Error(t, err)
			assert.Equal(t, "write "+dir+": is a directory, want a file name", err.Error())
			// The temporary file would go beside the target, in parent.
			left, rerr := os.ReadDir(parent)
			require.NoError(t, rerr)
			require.Len(t, left, 1, "only the directory itself: nothing left beside it")
			assert.Equal(t, "d", left[0].Name())
		})
	}
}
