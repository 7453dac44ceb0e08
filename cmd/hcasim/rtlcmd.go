package main

import (
	"io"

	"github.com/hcasim/hcasim/rtl"
)

func init() {
	// hcasim rtl -config FILE -o DIR [--report] [--set key=value]...: docs/rtl.md.
	subcommands["rtl"] = func(args []string, stdout, stderr io.Writer) int {
		return rtl.Main(normalizeArgs(args), stdout, stderr, Version(), loadDesign)
	}
}

// loadDesign reads a config as a run would (shipped names, --set, strict
// decoding, validation) and takes from it what the Verilog emitter sizes by:
// the design a sweep chose becomes the RTL's parameters.
func loadDesign(path string, sets []string) (rtl.Design, error) {
	l, err := loadConfig(&runFlags{config: path, sets: sets})
	if err != nil {
		return rtl.Design{}, err
	}
	c := &l.Config
	name := c.Name
	if name == "" || name == "default" {
		name = path
	}
	return rtl.Design{
		Name:             name,
		Radix:            c.Switch.Radix,
		VLs:              c.Switch.VLs,
		VLBufferBytes:    c.Switch.VLBufferBytes,
		HCAVLBufferBytes: c.HCA.VLBufferBytes,
		MTU:              c.Link.MTU,
		LinkGeneration:   c.Link.Generation,
		LinkWidth:        c.Link.Lanes(),
		DatapathBytes:    c.Switch.DatapathBytes,
	}, nil
}
