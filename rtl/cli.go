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
)

// LoadFunc turns a config file plus --set overrides into a Design. Its errors
// are the user's (a bad file, key or value): one line, naming the key.
type LoadFunc func(path string, sets []string) (Design, error)

// Main implements
//
//	hcasim rtl -config FILE [-o DIR] [--report] [--set key=value]...
//
// -o writes the Verilog tree into DIR; --report prints the resource report
// (buffer SRAM, and Yosys cell and flop counts of the primitives) to stdout
// and, with -o, also to DIR/resources.txt. At least one of the two is
// required. version goes into every generated header. It returns the exit
// code: 0 success, 2 a user error (printed on one line to stderr), 1 an
// internal error.
func Main(args []string, stdout, stderr io.Writer, version string, load LoadFunc) int {
	userErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "hcasim rtl: "+format+"\n", a...)
		return 2
	}
	fs := pflag.NewFlagSet("hcasim rtl", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", "", "config file")
	outDir := fs.StringP("out", "o", "", "output directory for the Verilog tree")
	report := fs.Bool("report", false, "print the resource report")
	var sets []string
	fs.StringArrayVar(&sets, "set", nil, "override a config key (key=value), repeatable")
	if err := fs.Parse(normalizeFlags(args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, "usage: hcasim rtl -config FILE [-o DIR] [--report] [--set key=value]...\n")
			return 0
		}
		return userErr("%v (usage: hcasim rtl -config FILE [-o DIR] [--report] [--set key=value]...)", err)
	}
	if fs.NArg() > 0 {
		return userErr("unexpected argument %q (usage: hcasim rtl -config FILE [-o DIR] [--report])", fs.Arg(0))
	}
	if *configPath == "" {
		return userErr("-config: missing (usage: hcasim rtl -config FILE [-o DIR] [--report])")
	}
	if *outDir == "" && !*report {
		return userErr("nothing to do: give -o DIR to write Verilog, --report for resources, or both")
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
			return userErr("-o: %v", oneLine(err))
		}
		fmt.Fprintf(stdout, "wrote %d Verilog files to %s (tops: %s)\n", len(files), *outDir, strings.Join(Tops, ", "))
	}
	if !*report {
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
		if err := os.WriteFile(filepath.Join(*outDir, "resources.txt"), []byte(sb.String()), 0o644); err != nil {
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
