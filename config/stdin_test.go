package config

import (
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair (the kernel's /dev/ptmx: unlock the
// slave, ask its number, open /dev/pts/N), so a test can give the process
// a terminal as its standard input without a person at one.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("a pseudo-terminal is needed to test a terminal on stdin: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// withStdin runs f with os.Stdin replaced by in, and forgets what the
// config reader kept of either.
func withStdin(t *testing.T, in *os.File, f func()) {
	saved := os.Stdin
	os.Stdin = in
	stdinConfig.from = nil
	defer func() {
		os.Stdin = saved
		stdinConfig.from = nil
	}()
	f()
}

// TestStdinTerminalIsRefused: `hcasim -config -` typed at a terminal would
// wait for the user to type a config; it is refused at once, naming what
// to do, and nothing is read. A pipe with the same text is read whole, and
// read once: a second ReadFile gives the same bytes.
func TestStdinTerminalIsRefused(t *testing.T) {
	_, tty := openPTY(t)
	// A reader that did read the terminal would wait for ever: the
	// deadline makes that a failed read (a wrong message), not a hang.
	if err := tty.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatalf("the terminal takes no read deadline: %v", err)
	}
	withStdin(t, tty, func() {
		data, err := ReadFile(Stdin, nil)
		if err == nil {
			t.Fatalf("a terminal on stdin was read (%q); want a refusal", data)
		}
		want := "standard input is a terminal; pipe a config into it (make-config | hcasim -config -), or name a file"
		if err.Error() != want {
			t.Fatalf("got %q, want %q", err.Error(), want)
		}
	})

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const cfg = "seed: 3\n"
	go func() {
		w.WriteString(cfg)
		w.Close()
	}()
	withStdin(t, r, func() {
		for i := 0; i < 2; i++ {
			data, err := ReadFile(Stdin, nil)
			if err != nil || string(data) != cfg {
				t.Fatalf("read %d of a pipe: %q, %v; want %q", i+1, data, err, cfg)
			}
		}
	})
}
