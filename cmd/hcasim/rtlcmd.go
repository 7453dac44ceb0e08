package main

import (
	"io"

	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/rtl"
)

func init() {
	// hcasim rtl -config FILE -o DIR [--report] [--testbench [--testbench-packets N]] [--set key=value]...: docs/rtl.md.
	// rtl.LoadDesign reads the config as a run would (shipped names, --set,
	// strict decoding, validation, sweep axes pinned by --set), so the
	// design point the config and its --set give becomes the RTL's
	// parameters; a sweep axis that would change them is refused.
	// --testbench replays a run of the config: loaded as a run loads it,
	// with the files it names (workload.trace_file) read beside it.
	subcommands["rtl"] = func(args []string, stdout, stderr io.Writer) int {
		return rtl.MainWith(normalizeArgs(args), stdout, stderr, Version(), loadRTLDesign, loadRTLRun)
	}
}

// loadRTLDesign is rtl.LoadDesign with the run's file readers (a
// topology.file beside the config).
func loadRTLDesign(path string, sets []string) (rtl.Design, error) {
	return rtl.LoadDesignWith(path, sets, func(l *fabric.Loaded) { setFileReaders(l, path, sets) })
}

// loadRTLRun is rtl.LoadRun with the run's file reader.
func loadRTLRun(path string, sets []string) (*fabric.Loaded, error) {
	l, err := rtl.LoadRun(path, sets)
	if err != nil {
		return nil, err
	}
	setFileReaders(l, path, sets)
	return l, nil
}
