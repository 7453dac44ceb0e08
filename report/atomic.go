package report

import (
	"errors"
	"io/fs"
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
	if err := notDir(path); err != nil {
		return err
	}
	return targetNamed(path, renameio.WriteFile(path, data, 0o644, renameio.WithTempDir(filepath.Dir(path))))
}

// notDir refuses a path that is a directory: renaming the temporary file
// onto it would fail with the temporary file's name and "file exists".
func notDir(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return &fs.PathError{Op: "write", Path: path, Err: errors.New("is a directory, want a file name")}
	}
	return nil
}

// targetNamed names path, the file the user asked for, in err where it
// names the temporary file beside it (".name1234567": "open
// /missing/.x2387589054693666038: no such file or directory" becomes
// "open /missing/x: …").
func targetNamed(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path != path {
		return &fs.PathError{Op: pe.Op, Path: path, Err: pe.Err}
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return &fs.PathError{Op: le.Op, Path: path, Err: le.Err}
	}
	return err
}

// WriteFileMode is WriteFile for a file that must have mode (before the
// umask) whatever an earlier file at path had: an executable script.
func WriteFileMode(path string, data []byte, mode os.FileMode) error {
	if err := notDir(path); err != nil {
		return err
	}
	t, err := renameio.NewPendingFile(path, renameio.WithTempDir(filepath.Dir(path)), renameio.WithPermissions(mode))
	if err != nil {
		return targetNamed(path, err)
	}
	defer t.Cleanup()
	if _, err := t.Write(data); err != nil {
		return targetNamed(path, err)
	}
	return targetNamed(path, t.CloseAtomicallyReplace())
}
