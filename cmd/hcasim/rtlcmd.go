package main

import (
	"io"

	"github.com/hcasim/hcasim/rtl"
)

func init() {
	// hcasim rtl -config FILE -o DIR [--report] [--set key=value]...: docs/rtl.md.
	// rtl.LoadDesign reads the config as a run would (shipped names, --set,
	// strict decoding, validation, sweep axes pinned by --set), so the
	// design point the config and its --set give becomes the RTL's
	// parameters; a sweep axis that would change them is refused.
	subcommands["rtl"] = func(args []string, stdout, stderr io.Writer) int {
		return rtl.Main(normalizeArgs(args), stdout, stderr, Version(), rtl.LoadDesign)
	}
}
