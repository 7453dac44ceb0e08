package main

import (
	"io"

	"github.com/hcasim/hcasim/rtl"
)

func init() {
	// hcasim rtl -config FILE -o DIR [--report] [--set key=value]...: docs/rtl.md.
	// rtl.LoadDesign reads the config as a run would (shipped names, --set,
	// strict decoding, validation), so the design a sweep chose becomes the
	// RTL's parameters.
	subcommands["rtl"] = func(args []string, stdout, stderr io.Writer) int {
		return rtl.Main(normalizeArgs(args), stdout, stderr, Version(), rtl.LoadDesign)
	}
}
