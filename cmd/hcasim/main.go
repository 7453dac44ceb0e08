// Command hcasim runs a design point (or the sweep a config describes) of the
// InfiniBand HCA and switch model, diffs traces, merges sweep shards and
// exports Verilog.
//
//	hcasim -config configs/ndr.yaml [--set key=value]... [--format table|csv|json] [--out DIR]
//	hcasim diff GOLDEN NEW
//	hcasim rtl -config FILE -o DIR [--report] [--testbench [--testbench-packets N]]
//	hcasim merge DIR...
//	hcasim topology -config FILE [--set key=value]... [-o FILE]
//	hcasim version | help
//
// Exit codes: 0 success; 1 an internal error (a bug); 2 a user's error (bad
// config, flag or file), reported on one line; 130 or 143 stopped by SIGINT
// or SIGTERM (a sweep writes the points it finished; --resume continues it).
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/verif"
)

// version is the hcasim release; builds from a checkout add the VCS revision.
const version = "0.1.0"

// Version returns the version string with the VCS revision when known.
func Version() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return v
}

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs hcasim with args and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "hcasim: internal error (a bug, please report it): %v\n", r)
			if os.Getenv("HCASIM_DEBUG") != "" {
				stack := debug.Stack()
				if fp, ok := r.(*forwardedPanic); ok {
					stack = fp.stack // where the run's goroutine panicked
				}
				fmt.Fprintf(stderr, "%s\n", stack)
			}
			code = 1
		}
	}()
	if len(args) > 0 {
		if f, ok := subcommands[args[0]]; ok {
			return f(args[1:], stdout, stderr)
		}
		if a := args[0]; !strings.HasPrefix(a, "-") && !isConfigName(a) {
			// A mistyped subcommand ("hcasim bnech") would otherwise be
			// reported as a stray argument of the run.
			return fail(stderr, userErrorf("%q is not a subcommand (%s) or a flag; see hcasim help",
				a, strings.Join(subcommandNames(), ", ")))
		}
	}
	return runMain(args, stdout, stderr)
}

// isConfigName reports whether a names a file or a shipped config: what a
// user who forgot -config types first.
func isConfigName(a string) bool {
	if _, err := os.Stat(a); err == nil {
		return true
	}
	_, ok := configs.Lookup(a)
	return ok
}

// subcommandNames lists the subcommands, sorted.
func subcommandNames() []string {
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var subcommands = map[string]func(args []string, stdout, stderr io.Writer) int{}

func init() {
	subcommands["version"] = func(args []string, stdout, stderr io.Writer) int {
		if code, done := noArguments("version", args, stdout, stderr); done {
			return code
		}
		fmt.Fprintf(stdout, "hcasim %s\n", Version())
		return 0
	}
	subcommands["help"] = func(args []string, stdout, stderr io.Writer) int {
		if code, done := noArguments("help", args, stdout, stderr); done {
			return code
		}
		fmt.Fprint(stdout, usage)
		return 0
	}
}

// noArguments refuses arguments to a subcommand that takes none (ignoring
// them would let "hcasim version --check" look as if it checked something);
// --help and -h print the usage, as for every subcommand. done reports
// whether the subcommand is finished, with code its exit code.
func noArguments(name string, args []string, stdout, stderr io.Writer) (code int, done bool) {
	if len(args) == 0 {
		return 0, false
	}
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		fmt.Fprint(stdout, usage)
		return 0, true
	}
	return fail(stderr, userErrorf("%s: %q is an unexpected argument (hcasim %s takes none)", name, args[0], name)), true
}

const usage = `hcasim: a cycle-level model of InfiniBand HCAs, switch ASICs and links

Usage:
  hcasim -config FILE [flags]     run a design point, or the sweep the config describes
  hcasim diff GOLDEN NEW [flags]  compare two traces; exit 0 equivalent, 1 different, 2 error
  hcasim rtl -config FILE -o DIR [--report] [--testbench [--testbench-packets N]] [--set k=v]
                                  export the design point's Verilog: the HCA's and the switch's
                                  blocks, implemented or skeleton (docs/rtl.md lists which);
                                  --report for resources, --testbench for DIR/tb, a self-checking
                                  testbench of the fabric's switches
  hcasim merge DIR... [--out DIR] [--format F] [--quiet]  merge sweep shard outputs into one result
  hcasim bench [--csv FILE] [--set k=v] [--scale H,H,... [--windows A,B]] [NAME...]
                                  run the benchmark configs (configs/bench), append to a CSV
  hcasim topology -config FILE [--set k=v] [-o FILE]  write the config's fabric as a topology file
                                  (topology.kind: file)
  hcasim version                  print the version
  hcasim help                     print this help

Run flags:
  -c, --config FILE     YAML design point (a path, the name of a shipped config: ndr.yaml,
                        or - to read it from stdin); files it names (topology.file,
                        workload.trace_file) are read from its directory; given with
                        --set, from the current one (else its); a stdin config's, from
                        the current one
      --set key=value   override a config key (repeatable), e.g. --set link.width=4x
      --format F        table (default; metrics rounded for reading), csv or json
                        (9 significant digits) on stdout
      --out DIR         write results.json and results.csv (and plots for a sweep) into DIR
                        (a sweep without --out: hcasim-out/NAME in the current directory)
      --seed N          override the config's seed
      --check           invariant checkers: lossless, buffers, credits, ordering, integrity, protection, wire, route
      --trace FILE      write an event trace (see docs/trace-format.md); gzip when FILE ends in .gz
      --trace-path GLOB only trace components whose name matches, e.g. 'Fabric.Leaf[2].*'
                        ('*' any run, '?' one character, '[' ']' themselves; repeatable;
                        filters --trace, --vcd and --pcap)
      --trace-kind K    only trace these event kinds (repeatable; filters --trace, not --vcd or --pcap)
      --vcd FILE        write a VCD waveform of credits, buffers, link activity and HCA stages
      --pcap FILE       write a pcapng capture of the packets the ports send (Wireshark, tshark)
      --pcap-snaplen N  keep at most N bytes of each captured packet (0: whole)
      --jobs N          sweep points run in parallel (default: the number of cores)
      --shard I/N       run every N-th sweep design (a point, or a whole knee search),
                        starting at I (0-based); needs --out
      --resume          continue the interrupted sweep whose results are in --out: reuse its
                        finished points, run the rest (docs/sweeps.md, "Interrupting and resuming")
      --quiet           no progress bar (on a terminal, a sweep shows its points done,
                        a single point its simulated time against the window's end),
                        no sweep summary and no notes on stderr; errors still
      --cpuprofile F    write a pprof CPU profile
      --memprofile F    write a pprof heap profile

Shipped configs: edr.yaml hdr.yaml ndr.yaml xdr.yaml, examples/NAME.yaml, bench/NAME.yaml
(configs/ in the repository; docs/config.md lists every key).
One large fabric on several cores: --set sim.partitions=N (synthetic traffic; docs/performance.md).
`

func init() {
	// hcasim diff GOLDEN NEW: docs/trace-format.md.
	subcommands["diff"] = func(args []string, stdout, stderr io.Writer) int {
		return verif.DiffMain(normalizeArgs(args), stdout, stderr)
	}
}
