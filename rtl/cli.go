package rtl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/report"
)

// LoadFunc turns a config file plus --set overrides into a Design. Its errors
// are the user's (a bad file, key or value): one line, naming the key.
type LoadFunc func(path string, sets []string) (Design, error)

// usage is the command line Main takes.
const usage = "hcasim rtl -config FILE [-o DIR [--testbench [--testbench-packets N]]] [--report] [--set key=value]..."

// Main implements
//
//	hcasim rtl -config FILE [-o DIR [--testbench [--testbench-packets N]]] [--report] [--set key=value]...
//
// -o writes the Verilog tree into DIR; --report prints the resource report
// (buffer SRAM, and Yosys cell and flop counts of the primitives) to stdout
// and, with -o, also to DIR/resources.txt. At least one of the two is
// required. --testbench runs the config's simulation and writes, into
// DIR/tb, a self-checking testbench of the fabric's switches replaying the
// first N (--testbench-packets) packets its hosts sent
// (BuildFabricTestbench), and run.sh to run it. version goes into every generated header. It returns the exit
// code: 0 success, 2 a user error (printed on one line to stderr), 1 an
// internal error.
func Main(args []string, stdout, stderr io.Writer, version string, load LoadFunc) int {
	return MainWith(args, stdout, stderr, version, load, LoadRun)
}

// LoadRunFunc reads a config and its --set overrides as a run does, for
// the run --testbench replays. Its errors are the user's.
type LoadRunFunc func(path string, sets []string) (*fabric.Loaded, error)

// LoadRun is the LoadRunFunc Main uses: the config (a path, or the name of
// a shipped config) decoded and validated by fabric.Load. A file the
// config names (workload.trace_file) is read relative to the working
// directory; the CLI gives MainWith a loader that reads it beside the
// config, as its runs do.
func LoadRun(path string, sets []string) (*fabric.Loaded, error) {
	data, err := config.ReadFile(path, configs.Lookup)
	if err != nil {
		return nil, err
	}
	return fabric.Load(data, sets)
}

// MainWith is Main with the loader of the run --testbench replays.
func MainWith(args []string, stdout, stderr io.Writer, version string, load LoadFunc, loadRun LoadRunFunc) int {
	userErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "hcasim rtl: "+format+"\n", a...)
		return 2
	}
	fs := pflag.NewFlagSet("hcasim rtl", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.StringP("config", "c", "", "the design point: a config file, a shipped config's name (ndr.yaml), or - for stdin; a sweep's axes that change the design must be pinned with --set") // -c, as a run takes it
	outDir := fs.StringP("out", "o", "", "write the Verilog tree into this directory (made if missing; files of an earlier export that this one does not write are removed)")
	wantReport := fs.Bool("report", false, "print the resource report (buffer SRAM per port and in total; with Yosys on PATH, cells and flops: about 100 s of CPU), and with -o write it to DIR/resources.txt")
	testbench := fs.Bool("testbench", false, "also write DIR/tb: a self-checking Icarus testbench of the fabric's switches, driven by the model's run of the config (sh DIR/tb/run.sh)")
	tbPackets := fs.Int("testbench-packets", DefaultTestbenchPackets, "packets the testbench's hosts inject (1 to 20000)")
	var sets []string
	fs.StringArrayVar(&sets, "set", nil, "override a config key (key=value), as for a run; repeatable")
	if err := fs.Parse(normalizeFlags(args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			// What each flag does, not the one line alone: docs/rtl.md
			// has the rest.
			fmt.Fprintf(stdout, "usage: %s\n\nExports the config's design point as Verilog (docs/rtl.md lists each block and what is TODO).\n\n%s", usage, fs.FlagUsages())
			return 0
		}
		return userErr("%v (usage: %s)", err, usage)
	}
	if fs.NArg() > 0 {
		return userErr("unexpected argument %q (usage: %s)", fs.Arg(0), usage)
	}
	if *configPath == "" {
		return userErr("-config: missing (usage: %s)", usage)
	}
	if fs.Changed("out") && *outDir == "" {
		// -o "" (an unset shell variable) is a path left out, not a
		// request for the report alone.
		return userErr("-o: empty path (give the directory to write the Verilog tree into)")
	}
	if *outDir == "" && !*wantReport {
		return userErr("nothing to do: give -o DIR to write Verilog, --report for resources, or both")
	}
	if *testbench && *outDir == "" {
		return userErr("--testbench: needs -o DIR (the testbench goes into DIR/tb, beside the tree it tests)")
	}
	if fs.Changed("testbench-packets") {
		if !*testbench {
			return userErr("--testbench-packets: %d given without --testbench", *tbPackets)
		}
		if *tbPackets < 1 || *tbPackets > MaxTestbenchPackets {
			return userErr("--testbench-packets: %d is outside 1..%d (packets the testbench's hosts inject; more take Icarus minutes per switch)",
				*tbPackets, MaxTestbenchPackets)
		}
	}
	if err := checkOutDir(*outDir); err != nil {
		// Before the config is loaded, and the testbench's run made.
		return userErr("-o: %v", err)
	}
	d, err := load(*configPath, sets)
	if err != nil {
		return userErr("%v", oneLine(err))
	}
	if d.Name == "" {
		d.Name = *configPath
	}
	d.Overrides = sets
	// Validate's errors name a config key; like the loader's, they say
	// which config it is in.
	if err := d.Validate(); err != nil {
		return userErr("%s: %v", *configPath, err)
	}
	var tb FabricTestbench
	if *testbench {
		// Before anything is written: a config the testbench refuses
		// leaves DIR as it was (and a sweep axis
		// the RTL ignores is refused, not noted).
		if tb, err = testbenchOf(loadRun, *configPath, sets, d, *tbPackets, version); err != nil {
			return userErr("%s: %v", *configPath, oneLine(err))
		}
	}
	switch len(d.SweepIgnored) {
	case 0:
	case 1:
		fmt.Fprintf(stderr, "hcasim rtl: note: %s: sweep axis %s does not change the RTL; one tree serves every point\n",
			*configPath, d.SweepIgnored[0])
	default:
		fmt.Fprintf(stderr, "hcasim rtl: note: %s: sweep axes %s do not change the RTL; one tree serves every point\n",
			*configPath, strings.Join(d.SweepIgnored, ", "))
	}
	if *outDir != "" {
		files, err := Emit(d, version)
		if err != nil {
			return userErr("%s: %v", *configPath, err)
		}
		if err := WriteTree(*outDir, files); err != nil {
			return userErr("-o: %s", outDirError(*outDir, err))
		}
		fmt.Fprintf(stdout, "wrote %d Verilog files to %s (tops: %s)\n", len(files), *outDir, strings.Join(Tops, ", "))
		if *testbench {
			if err := writeTestbench(*outDir, tb.Files); err != nil {
				return userErr("-o: %s", outDirError(*outDir, err))
			}
			fmt.Fprintf(stdout, "wrote the testbench to %s (%d packets, %d switch sends checked; run: sh %s)\n",
				filepath.Join(*outDir, "tb"), tb.Packets, tb.Sends, filepath.Join(*outDir, "tb", "run.sh"))
		}
		stale, err := removeStale(*outDir, files, *wantReport)
		if err != nil {
			return userErr("-o: %v", oneLine(err))
		}
		if !*testbench {
			more, err := removeStaleTestbench(*outDir)
			if err != nil {
				return userErr("-o: %v", oneLine(err))
			}
			stale = append(stale, more...)
		}
		if len(stale) > 0 {
			fmt.Fprintf(stdout, "removed what an earlier run wrote there and this one does not: %s\n", strings.Join(stale, ", "))
		}
	}
	if !*wantReport {
		return 0
	}
	_, yosysErr := toolPath("yosys")
	r, err := NewReport(context.Background(), d, yosysErr == nil)
	if err != nil {
		fmt.Fprintf(stderr, "hcasim rtl: --report: yosys failed: %v\n", oneLine(err))
		return 1
	}
	var sb strings.Builder
	if err := r.WriteText(&sb); err != nil {
		panic(fmt.Sprintf("rtl.Main: writing to a strings.Builder: %v", err))
	}
	fmt.Fprint(stdout, sb.String())
	if *outDir != "" {
		if err := report.WriteFile(filepath.Join(*outDir, "resources.txt"), []byte(sb.String())); err != nil {
			return userErr("-o: %v", oneLine(err))
		}
	}
	if yosysErr != nil {
		return userErr("--report: cell and flop counts need yosys, which is not on PATH (install: %s)", EDAInstallHint)
	}
	return 0
}

// normalizeFlags lets long flags take one dash, as in `-config FILE`
// (pflag reads a single dash as shorthand letters).
func normalizeFlags(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 2 {
			a = "-" + a
		}
		if a == "--" {
			copy(out[i:], args[i:])
			return out
		}
		out[i] = a
	}
	return out
}

// oneLine keeps the first line of an error message.
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// removeStale deletes from dir the files an earlier hcasim rtl run wrote
// that this run does not: Verilog files whose first line is our "Code
// generated by hcasim rtl" header, and resources.txt when this run writes
// no report. Left there, a glob such as *.v would compile an old design's
// modules with the new ones, and an old report would describe a design the
// tree no longer is. Files anyone else wrote are left alone. It returns the
// names removed, sorted.
func removeStale(dir string, files []File, report bool) ([]string, error) {
	keep := map[string]bool{}
	for _, f := range files {
		keep[f.Name] = true
	}
	if report {
		keep["resources.txt"] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		name := e.Name()
		if keep[name] || !e.Type().IsRegular() {
			continue
		}
		var mark string
		switch {
		case strings.HasSuffix(name, ".v"):
			mark = "// Code generated by hcasim rtl "
		case name == "resources.txt":
			mark = "hcasim rtl resource report "
		default:
			continue
		}
		path := filepath.Join(dir, name)
		head, err := firstLine(path)
		if err != nil {
			return removed, err
		}
		if !strings.HasPrefix(head, mark) {
			continue
		}
		if err := os.Remove(path); err != nil {
			return removed, err
		}
		removed = append(removed, name)
	}
	return removed, nil // ReadDir sorts by name
}

// firstLine returns the first line of the file at path (at most 256 bytes).
func firstLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", err
	}
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	return line, nil
}

// testbenchOf loads the config as a run does and builds its fabric
// testbench (BuildFabricTestbench). A sweep axis the RTL ignores still
// changes the run the testbench replays, so it is refused until pinned.
func testbenchOf(loadRun LoadRunFunc, path string, sets []string, d Design, packets int, version string) (FabricTestbench, error) {
	if len(d.SweepIgnored) > 0 {
		a := d.SweepIgnored[0]
		return FabricTestbench{}, fmt.Errorf("sweep.%s: the testbench replays one run, and this axis changes it; "+
			"pin it with --set %s=VALUE (or drop the sweep with --set sweep={})", a, a)
	}
	l, err := loadRun(path, sets)
	if err != nil {
		return FabricTestbench{}, err
	}
	return BuildFabricTestbench(l, d, packets, version)
}

// writeTestbench writes the testbench's files (tb/...) under dir, run.sh
// executable.
func writeTestbench(dir string, files []File) error {
	if err := os.MkdirAll(filepath.Join(dir, "tb"), 0o755); err != nil {
		return err
	}
	for _, f := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(f.Name, ".sh") {
			mode = 0o755
		}
		p := filepath.Join(dir, f.Name)
		if err := report.WriteFileMode(p, []byte(f.Text), mode); err != nil {
			return err
		}
	}
	return nil
}

// removeStaleTestbench deletes the testbench an earlier --testbench run
// wrote into dir/tb (files that start with its header), so that tb/run.sh
// does not test this tree against another design's expectations. It
// returns the names removed (tb/...).
func removeStaleTestbench(dir string) ([]string, error) {
	var removed []string
	for _, name := range []string{TestbenchTop + ".v", "run.sh"} {
		p := filepath.Join(dir, "tb", name)
		head, err := firstLine(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return removed, err
		}
		if name == "run.sh" {
			// The shebang first: the header is the second line.
			b, err := os.ReadFile(p)
			if err != nil {
				return removed, err
			}
			_, rest, _ := strings.Cut(string(b), "\n")
			head, _, _ = strings.Cut(rest, "\n")
		}
		if !strings.Contains(head, "Code generated by hcasim rtl --testbench ") {
			continue
		}
		if err := os.Remove(p); err != nil {
			return removed, err
		}
		removed = append(removed, "tb/"+name)
	}
	return removed, nil
}

// outDirError is the one line for a DIR that checkOutDir passed but that
// could not be made or written (a path under /proc, no permission, a full
// disk): the directory, what the file system said, and what is allowed,
// as the run's --out says it; Go's bare "mkdir /proc/x: no such file or
// directory" named no remedy.
func outDirError(dir string, err error) string {
	return fmt.Sprintf("%s cannot be made or written: %s (give a directory that exists or can be made, and that can be written in)", dir, oneLine(err))
}

// checkOutDir refuses an -o directory that cannot be made because a file
// stands where it, or a directory above it, should be: the one-line
// message names the path, the file in the way and what is allowed, in
// place of "mkdir x: not a directory" after the work is done. Anything
// else (permissions) is found when the tree is written.
func checkOutDir(dir string) error {
	if dir == "" {
		return nil
	}
	const allowed = "give a directory for the Verilog tree; a missing one is made"
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if st, err := os.Stat(p); err == nil {
			switch {
			case st.IsDir():
				return nil
			case p == filepath.Clean(dir):
				return fmt.Errorf("%s is a file, not a directory (%s)", dir, allowed)
			default:
				return fmt.Errorf("%s cannot be made: %s is a file, not a directory (%s)", dir, p, allowed)
			}
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}
