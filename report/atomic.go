package report

import (
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// WriteFile writes data to path as os.WriteFile does (mode 0644 for a new
// file, an existing file's mode kept), but atomically: the bytes go to a
// temporary file in path's directory, which replaces path only once it is
// whole and synced. A run killed or out of disk space while it writes
// leaves the earlier file as it was, never a truncated one: a results.json
// a later --resume or merge reads, a Verilog tree a simulator compiles.
func WriteFile(path string, data []byte) error {
	return renameio.WriteFile(path, data, 0o644, renameio.WithTempDir(filepath.Dir(path)))
}

// WriteFileMode is WriteFile for a file that must have mode (before the
// umask) whatever an earlier file at path had: an executable script.
func WriteFileMode(path string, data []byte, mode os.FileMode) error {
	t, err := renameio.NewPendingFile(path, renameio.WithTempDir(filepath.Dir(path)), renameio.WithPermissions(mode))
	if err != nil {
		return err
	}
	defer t.Cleanup()
	if _, err := t.Write(data); err != nil {
		return err
	}
	return t.CloseAtomicallyReplace()
}
