package main

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/verif"
	"github.com/sarchlab/akita/v3/sim"
)

// observersImpl builds the --trace, --check, --vcd and --pcap observers of one run:
// a hook that attaches them to the built simulation, and a function that,
// after the run, finishes the checkers and closes the files. A failed
// invariant is returned from finish with its full report. With --check,
// finish also records in the run's metrics (when there are any) whether
// the end-of-run checks ran: they need the fabric idle, and a run that
// could not settle skips them, which a passing --check must not hide.
func observersImpl(l *fabric.Loaded, f *runFlags) (func(*fabric.Simulation), func(map[string]any) error, error) {
	check := l.Config.Sim.Check
	if f.trace == "" && f.vcd == "" && f.pcap == "" && !check {
		return nil, func(map[string]any) error { return nil }, nil
	}
	filter, err := verif.ParseFilter(strings.Join(f.tracePaths, ","), strings.Join(f.traceKinds, ","))
	if err != nil {
		return nil, nil, userErrorf("--trace-kind: %v", err)
	}
	var (
		traceFile *os.File
		traceGz   *gzip.Writer // a --trace name ending in .gz
		rec       *verif.Recorder
		vcd       *verif.VCDRecorder
		chk       *verif.Checkers
		view      *fabric.Simulation
	)
	if f.trace != "" {
		traceFile, err = os.Create(f.trace)
		if err != nil {
			return nil, nil, outFileError("--trace", f.trace, err)
		}
		var w io.Writer = traceFile
		if strings.HasSuffix(f.trace, ".gz") {
			// A name ending in .gz is written gzip-compressed, as the
			// name says (diff reads either), at the fastest level (a trace is
			// large, and a run waits on it); the header's time and name
			// are left empty, so the bytes depend on the trace alone.
			traceGz, _ = gzip.NewWriterLevel(traceFile, gzip.BestSpeed) // a valid level: no error
			w = traceGz
		}
		rec = verif.NewRecorder(w, verif.Header{Version: verif.TraceVersion, Config: verif.ConfigHash(l.Identity()),
			Seed: l.Config.Seed}, filter)
	}
	var vcdFile *os.File
	if f.vcd != "" {
		// Made now, so that an unwritable path is refused before the run.
		if vcdFile, err = os.Create(f.vcd); err != nil {
			if traceFile != nil {
				traceFile.Close()
			}
			return nil, nil, outFileError("--vcd", f.vcd, err)
		}
		vcd = verif.NewVCDRecorder(filter)
	}
	var pcapFile *os.File
	var pcap *verif.PcapRecorder
	if f.pcap != "" {
		if pcapFile, err = os.Create(f.pcap); err != nil {
			for _, o := range []*os.File{traceFile, vcdFile} {
				if o != nil {
					o.Close()
				}
			}
			return nil, nil, outFileError("--pcap", f.pcap, err)
		}
	}
	var refused error // a --trace-path glob this fabric has no component for
	attach := func(s *fabric.Simulation) {
		if g, names := unmatchedGlob(filter.Paths, s); g != "" {
			// A glob that can match a name but matches none of this
			// design point's (Fabric.Leaf[9].* on 4 leaves, a typo) wrote
			// a trace of its header alone, exit 0: refused before the
			// run's first event instead.
			refused = &observeRefusal{userErrorf("--trace-path: %q matches no component of this design point (%s)", g, names)}
			s.Stop()
			return
		}
		view = s
		if rec != nil || vcd != nil {
			// Blocks that announce waveform-only events (HCA stage
			// handshakes) do so only for a trace or a VCD.
			for _, b := range s.Blocks {
				if st, ok := b.(interface{ EnableStageTrace() }); ok {
					st.EnableStageTrace()
				}
			}
		}
		if rec != nil {
			verif.AttachHook(rec, s.Blocks...)
		}
		if vcd != nil {
			verif.AttachHook(vcd, s.Blocks...)
		}
		if pcapFile != nil {
			pcap = verif.NewPcapRecorder(pcapFile, fmt.Sprintf("hcasim %s %s seed %d", Version(), f.config, l.Config.Seed),
				pcapPorts(s, filter), f.snaplen, ib.AppendWire)
			verif.AttachHook(pcap, s.Blocks...)
		}
		if check {
			cc := verif.CheckConfig{OnViolation: func(*verif.Violation) { s.Stop() }}
			if s.Net != nil {
				cc.Routes = s.Net
				// Adaptive routing reorders a flow's packets by design,
				// on the SLs it applies to; lossless still holds each to
				// one delivery, and the other SLs stay in order.
				cc.ReorderSLs = s.Net.Subnet.ARSLs()
				// Replication: each multicast packet once to every
				// member of its group but the sender.
				cc.Multicast = s.Net.MulticastMembers()
			}
			chk = verif.AttachCheckers(cc, s.Blocks...)
		}
	}
	finish := func(m map[string]any) error {
		if refused != nil {
			for _, o := range []*os.File{traceFile, vcdFile, pcapFile} {
				if o != nil {
					o.Close()
					os.Remove(o.Name()) // made for this run, and it wrote nothing
				}
			}
			return refused
		}
		var first error
		if rec != nil {
			if err := rec.Flush(); err != nil && first == nil {
				first = writeError("--trace", err)
			}
			if traceGz != nil {
				if err := traceGz.Close(); err != nil && first == nil {
					first = writeError("--trace", err)
				}
			}
			if err := traceFile.Close(); err != nil && first == nil {
				first = writeError("--trace", err)
			}
		}
		if vcdFile != nil {
			if view != nil {
				// The run's end, not Now: a partitioned run's partitions
				// may have run a window past it. A checked run goes on to
				// its settle's end.
				end := view.End()
				if view.Settled {
					end = view.Now()
				}
				if err := vcd.WriteTo(vcdFile, "hcasim "+Version()+" "+f.config, end); err != nil && first == nil {
					first = writeError("--vcd", err)
				}
			}
			if err := vcdFile.Close(); err != nil && first == nil {
				first = writeError("--vcd", err)
			}
		}
		if pcapFile != nil {
			if pcap != nil {
				if err := pcap.Flush(); err != nil && first == nil {
					first = writeError("--pcap", err)
				}
			}
			if err := pcapFile.Close(); err != nil && first == nil {
				first = writeError("--pcap", err)
			}
		}
		if chk != nil && view != nil {
			chk.Finish(view.Now(), view.Settled)
			if err := chk.Err(); err != nil {
				return violationError{err}
			}
			if m != nil {
				m["end_checks_run"] = view.Settled
			}
		}
		return first
	}
	return attach, finish, nil
}

// pcapPorts lists the capture interfaces: every port the --trace-path
// globs select (all without them), in build order, each described by what
// it is cabled to and its rate.
func pcapPorts(s *fabric.Simulation, filter verif.Filter) []verif.PcapPort {
	var out []verif.PcapPort
	for _, p := range s.Ports {
		if !filter.SelectsPath(p.Name) {
			continue
		}
		pp := verif.PcapPort{Name: p.Name, SpeedBps: uint64(math.Round(p.Timing().DataRateBps()))}
		if peer := p.Peer(); peer != nil {
			pp.Description = fmt.Sprintf("to %s, %d lanes", peer.Name, p.Timing().Lanes)
		}
		out = append(out, pp)
	}
	return out
}

// observeRefusal is finish's error for an observer that refused the built
// design point: it stopped the run before its first event, so the run's
// own error (a workload that did not finish) is only its consequence.
type observeRefusal struct{ err error }

func (e *observeRefusal) Error() string { return e.err.Error() }
func (e *observeRefusal) Unwrap() error { return e.err }

// unmatchedGlob returns the first of globs that matches the name of no
// block of s, with a summary of the names there are; "" when each matches
// one (or there are no globs).
func unmatchedGlob(globs []string, s *fabric.Simulation) (string, string) {
	if len(globs) == 0 {
		return "", ""
	}
	names := blockNames(s)
	if names == nil {
		return "", "" // a block of unknown name: no check rather than a false refusal
	}
	for _, g := range globs {
		found := false
		for _, n := range names {
			if (verif.Filter{Paths: []string{g}}).SelectsPath(n) {
				found = true
				break
			}
		}
		if !found {
			return g, nameShapes(names)
		}
	}
	return "", ""
}

// blockNames lists the names of s's blocks, the paths their trace events
// carry, in build order: a Name method's, else a Name field's (a port's,
// an HCA's); nil when a block has neither.
func blockNames(s *fabric.Simulation) []string {
	names := make([]string, 0, len(s.Blocks))
	for _, b := range s.Blocks {
		if o, ok := b.(interface{ StandsFor() sim.Hookable }); ok {
			b = o.StandsFor() // a partitioned run's stand-in: the block's name
		}
		if n, ok := b.(interface{ Name() string }); ok {
			names = append(names, n.Name())
			continue
		}
		v := reflect.ValueOf(b)
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() == reflect.Struct {
			// A port's Name, or an HCA host's (fabric.HCAHost embeds its
			// *hca.Device); FieldByName panics on a nil embedded pointer.
			f, err := fieldByName(v, "Name")
			if err == nil && f.IsValid() && f.Kind() == reflect.String {
				names = append(names, f.String())
				continue
			}
		}
		return nil // a block we cannot name
	}
	return names
}

// fieldByName is v.FieldByName, an error where that would panic.
func fieldByName(v reflect.Value, name string) (f reflect.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return v.FieldByName(name), nil
}

// nameShapes summarises component names by shape, indices elided, each
// shape (sorted) with its first and last name in build order: "Fabric.Leaf[0] …
// Fabric.Leaf[3], Fabric.Host[0].HCA … Fabric.Host[15].HCA, …".
func nameShapes(names []string) string {
	type span struct{ first, last string }
	spans := map[string]*span{}
	var order []string
	for _, n := range names {
		shape := indexRE.ReplaceAllString(n, "[]")
		sp, ok := spans[shape]
		if !ok {
			spans[shape] = &span{n, n}
			order = append(order, shape)
			continue
		}
		sp.last = n
	}
	sort.Strings(order)
	parts := make([]string, 0, len(order))
	for _, shape := range order {
		sp := spans[shape]
		if sp.first == sp.last {
			parts = append(parts, sp.first)
		} else {
			parts = append(parts, sp.first+" … "+sp.last)
		}
	}
	return strings.Join(parts, ", ")
}

// indexRE is a name part's index, as in Port[5].
var indexRE = regexp.MustCompile(`\[[0-9]+\]`)

// violationError is a failed invariant as finish returns it.
type violationError struct{ v error }

func (e violationError) Error() string { return "invariant violated: " + e.v.Error() }

// runOutcome combines a run's error with its observers' (finish): a
// violated invariant comes first, because the checker stopped the run and
// the run's own error ("did not finish ... 0 of 10 messages completed") is
// only its consequence; otherwise the run's error, then finish's.
func runOutcome(runErr, finishErr error) error {
	if _, ok := finishErr.(violationError); ok {
		return finishErr
	}
	if _, ok := finishErr.(*observeRefusal); ok {
		return finishErr
	}
	if runErr != nil {
		return runErr
	}
	return finishErr
}

// writeError is the error of an output file (--trace, --vcd, --pcap) that
// could not be written to its end: the file system's answer (a full disk,
// a failing device) is the user's file, exit 2 as for one that cannot be
// created, not our bug (exit 1, which it was).
func writeError(flag string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return userErrorf("%s: %v (the file holds what was written before that; free space, or give a file elsewhere)", flag, err)
	}
	return fmt.Errorf("%s: %v", flag, err)
}
