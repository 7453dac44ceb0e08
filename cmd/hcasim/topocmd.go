package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/report"
	"github.com/hcasim/hcasim/sweep"
)

const topologyUsage = "hcasim topology -config FILE [--set key=value]... [-o FILE]"

func init() {
	subcommands["topology"] = topologyMain
}

// topologyMain is `hcasim topology -config FILE [--set k=v]... [-o FILE]`:
// it builds the fabric the config describes (a builder's: fat trees,
// dragonfly-plus, …; or a topology file's, after topology.* and
// degraded_links applied) and writes it as a topology file
// (fabric.FormatTopology), on stdout or into -o FILE, so a built fabric
// can be the start of a hand-edited one (topology.kind: file). A sweep
// whose axes change the fabric is refused, as hcasim rtl refuses one that
// changes the design: the file is one fabric.
func topologyMain(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("hcasim topology", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.StringP("config", "c", "", "")
	out := fs.StringP("out", "o", "", "")
	var sets []string
	fs.StringArrayVar(&sets, "set", nil, "")
	if err := fs.Parse(normalizeArgs(args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: "+topologyUsage)
			fmt.Fprintln(stdout, "\nWrites the config's fabric as a topology file (topology.kind: file; docs/fabric.md, \"Topology file\").")
			return 0
		}
		return fail(stderr, userErrorf("topology: %s (usage: %s)", err, topologyUsage))
	}
	if fs.NArg() > 0 {
		return fail(stderr, userErrorf("topology: unexpected argument %q (usage: %s)", fs.Arg(0), topologyUsage))
	}
	if *configPath == "" {
		return fail(stderr, userErrorf("topology: -config: missing (usage: %s)", topologyUsage))
	}
	if fs.Changed("out") && *out == "" {
		return fail(stderr, userErrorf("topology: -o: an empty path (name the file to write, or leave -o out for stdout)"))
	}
	text, summary, err := topologyText(*configPath, sets)
	if err != nil {
		return fail(stderr, userErrorf("topology: %s: %s", *configPath, err))
	}
	if *out == "" {
		if _, err := stdout.Write(text); err != nil {
			return fail(stderr, err)
		}
		return 0
	}
	if err := report.WriteFile(*out, text); err != nil {
		return fail(stderr, outFileError("topology: -o", *out, err))
	}
	fmt.Fprintf(stderr, "hcasim topology: %s written to %s\n", summary, *out)
	return 0
}

// topologyText loads the config as a run does (shipped names, --set, strict
// decoding, validation), refuses a sweep axis that changes the fabric, and
// returns the fabric as a topology file with a one-line summary of it.
func topologyText(path string, sets []string) ([]byte, string, error) {
	data, err := config.ReadFile(path, configs.Lookup)
	if err != nil {
		return nil, "", err
	}
	l, err := fabric.Load(data, sets)
	if err != nil {
		return nil, "", err
	}
	setFileReaders(l, path, sets)
	text, topo, err := formatFabric(&l.Config)
	if err != nil {
		return nil, "", err
	}
	if sweep.Has(l.Node) {
		change, _, err := sweep.AxesThatChange(l.Node, sets, func(p *fabric.Loaded) (bool, error) {
			p.Config.Topology.ReadFile = l.Config.Topology.ReadFile
			t, _, err := formatFabric(&p.Config)
			return err == nil && bytes.Equal(t, text), err
		})
		if err != nil {
			return nil, "", err
		}
		if change != nil {
			return nil, "", fmt.Errorf("sweep.%s: a topology file is one fabric, and this axis changes it (at %v); "+
				"pin it with --set %s=VALUE (or drop the sweep with --set sweep={})", change.Key, change.Value, change.Key)
		}
	}
	summary := fmt.Sprintf("%d hosts, %d switches, %d cables", len(topo.Hosts()), len(topo.Switches()), len(topo.Cables))
	return text, summary, nil
}

// formatFabric builds c's fabric and formats it as a topology file.
func formatFabric(c *fabric.Config) ([]byte, *fabric.Topology, error) {
	topo, err := c.BuildTopology()
	if err != nil {
		return nil, nil, err
	}
	var b bytes.Buffer
	if err := fabric.FormatTopology(&b, topo); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), topo, nil
}
