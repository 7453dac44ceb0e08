package workload

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/hcasim/hcasim/ib"
)

// A replay trace is an application's communication as data, one message a
// line; '#' starts a comment, blank lines are skipped:
//
//	# start_ns src dst op bytes [id=N] [after=N,N…] [delay_ns=N] [compute_ns=N]
//	0     0 1 write_imm 65536 id=1
//	0     1 0 write_imm 65536 id=2
//	500   1 2 send      4096  id=3 after=2
//	0     2 1 write     4096  after=3 delay_ns=20000
//
// start_ns is when the source's application posts the message, in ns from
// the start of the timed run (0, after set-up); src and dst are the
// topology's host indexes; op is write (RDMA WRITE), write_imm (RDMA WRITE
// WITH IMMEDIATE), send (SEND) or read (RDMA READ: src reads bytes from
// dst), fetch_add or cmp_swap (an 8-byte atomic on a word of dst's);
// bytes is the payload (8 for an atomic). id names a message for later lines' after=;
// ids increase down the file. after=X,Y holds the message back until
// messages X and Y have completed as its source host sees them: a message
// the source itself posted when it has polled that message's send
// completion, a send or write_imm it received when it has polled the
// receive completion. delay_ns=N (whole ns, only with after=) is compute
// between the dependencies and the message: it is posted N ns after its
// last dependency completed. A message is due at the later of start_ns
// and its last dependency's completion + delay_ns. compute_ns=N (whole ns,
// only with after=) is compute on the source's one application thread:
// once the message is due the thread is busy N ns (no posts, polls or
// other compute), then posts it; without compute_ns a due message is
// posted when the thread is free (docs/fabric.md, "Replaying a message
// trace").

// ReplayOp is a trace message's verb.
type ReplayOp uint8

// The trace's ops.
const (
	ReplayWrite    ReplayOp = iota // RDMA WRITE
	ReplayWriteImm                 // RDMA WRITE WITH IMMEDIATE: a receive completion at dst
	ReplaySend                     // SEND: consumes a receive WQE at dst
	ReplayRead                     // RDMA READ: src reads from dst
	ReplayFetchAdd                 // ATOMIC FETCH_AND_ADD of 1 on dst's counter word
	ReplayCmpSwap                  // ATOMIC COMPARE_AND_SWAP on dst's swap word
)

// ReplayOps lists the ops as the trace spells them, by ReplayOp.
var ReplayOps = []string{"write", "write_imm", "send", "read", "fetch_add", "cmp_swap"}

func (o ReplayOp) String() string { return ReplayOps[o] }

// completesAtDst reports whether the op gives its destination a receive
// completion (and so takes one of its receive WQEs).
func (o ReplayOp) completesAtDst() bool { return o == ReplayWriteImm || o == ReplaySend }

// isAtomic reports whether the op is an atomic (8 bytes, completes at its
// source only, when the original value has been written there).
func (o ReplayOp) isAtomic() bool { return o == ReplayFetchAdd || o == ReplayCmpSwap }

// replayAtomicBytes is an atomic's size: one 8-byte word (IBA 9.4.5).
const replayAtomicBytes = 8

// MaxReplayMessages is the most messages a trace may hold: the model sets
// every one up before the run (send-queue slots, pre-posted receives), the
// collectives' limit on writes (MaxCollectiveWrites).
const MaxReplayMessages = MaxCollectiveWrites

// MaxReplayBytes is the largest message: 1 GiB, as a collective's size.
const MaxReplayBytes = 1 << 30

// MaxReplayStartNs bounds start_ns (as workload.measure_ns is bounded)
// and delay_ns.
const MaxReplayStartNs = 1e12

// ReplayMsg is one message of a trace.
type ReplayMsg struct {
	Start    ib.PS // start_ns, from the timed run's start
	Src, Dst int   // host indexes
	Op       ReplayOp
	Bytes    int64
	ID       int64   // id=, or -1
	After    []int32 // indexes (in Trace.Msgs) of the messages it waits for
	Delay    ib.PS   // delay_ns: from the last dependency's completion to the post
	// Compute is compute_ns: once the message is due, its source's
	// application thread is busy this long, then posts it.
	Compute ib.PS
	Line    int // line in the file
}

// Trace is a parsed, validated replay trace.
type Trace struct {
	Name string // the file as named, for messages
	Msgs []ReplayMsg
}

// maxReplayLine is the longest line ParseTrace reads, in bytes (with its
// newline): far more than a message with a long after= list needs.
const maxReplayLine = 1 << 20

// ParseTrace reads a replay trace from r for a fabric of hosts hosts; name
// labels errors, each one line: "NAME:LINE: field: bad value (what is
// allowed)".
func ParseTrace(r io.Reader, name string, hosts int) (*Trace, error) {
	t := &Trace{Name: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxReplayLine)
	line := 0
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
	}
	// wholeNs reads a delay_ns or compute_ns value: whole nanoseconds, as
	// a trace generator writes compute time (a picosecond fraction would be
	// false precision), 0 to 1e12.
	wholeNs := func(field, val string) (ib.PS, error) {
		n, err := strconv.ParseInt(val, 10, 64)
		if notNumber(err) {
			return 0, fail("%s: %q is not a whole number of ns (in decimal, 0 to 1e12)", field, val)
		}
		if err != nil || n < 0 || n > MaxReplayStartNs {
			return 0, fail("%s: %q is out of range (a whole number of ns, 0 to 1e12)", field, val)
		}
		return ib.PS(n) * ib.Nanosecond, nil
	}
	idLine := map[int64]int{}  // id → its line
	idMsg := map[int64]int32{} // id → its message index
	var afterIDs [][]int64     // per message, the ids its after= names
	var afterLines []int       // per message, its line (for the second pass)
	lastID, lastIDLine := int64(-1), 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			// An editor's byte-order mark (Windows Notepad saves UTF-8
			// with one) is no part of the first field, as a CR before
			// the newline is no part of the last. A UTF-16 file's mark
			// says the rest is not text this reader takes.
			if strings.HasPrefix(text, "\xff\xfe") || strings.HasPrefix(text, "\xfe\xff") {
				return nil, fail("the file is UTF-16 (its byte-order mark %q); save the trace as UTF-8 or ASCII", text[:2])
			}
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		var pos []string
		m := ReplayMsg{ID: -1, Line: line}
		var after []int64
		delaySet, computeSet := false, false
		for _, tok := range f {
			key, val, ok := strings.Cut(tok, "=")
			if !ok {
				pos = append(pos, tok)
				continue
			}
			switch key {
			case "id":
				if m.ID >= 0 {
					return nil, fail("id: given twice on the line (one id a message)")
				}
				id, err := strconv.ParseInt(val, 10, 64)
				if err != nil || id < 0 {
					return nil, fail("id: %q is not an id (an integer, 0 or more)", val)
				}
				if l, dup := idLine[id]; dup {
					return nil, fail("id: %d is already the id of line %d (each id once)", id, l)
				}
				if id <= lastID {
					return nil, fail("id: %d is not above %d, the id of line %d (ids increase down the file)", id, lastID, lastIDLine)
				}
				m.ID = id
			case "after":
				for _, s := range strings.Split(val, ",") {
					id, err := strconv.ParseInt(s, 10, 64)
					if err != nil || id < 0 {
						return nil, fail("after: %q is not an id (a list of ids, after=3,7)", s)
					}
					for _, a := range after {
						if a == id {
							return nil, fail("after: %d is listed twice (each dependency once)", id)
						}
					}
					after = append(after, id)
				}
			case "delay_ns":
				if delaySet {
					return nil, fail("delay_ns: given twice on the line (one delay a message)")
				}
				d, err := wholeNs("delay_ns", val)
				if err != nil {
					return nil, err
				}
				m.Delay, delaySet = d, true
			case "compute_ns":
				if computeSet {
					return nil, fail("compute_ns: given twice on the line (one compute a message)")
				}
				c, err := wholeNs("compute_ns", val)
				if err != nil {
					return nil, err
				}
				m.Compute, computeSet = c, true
			default:
				return nil, fail("%s: not a field (the optional fields are id=, after=, delay_ns= and compute_ns=)", tok)
			}
		}
		if len(pos) != 5 {
			return nil, fail("%d fields, want 5: start_ns src dst op bytes (then optional id=N after=N,N delay_ns=N compute_ns=N)", len(pos))
		}
		if delaySet && len(after) == 0 {
			// A delay counts from the dependencies' completion; with none
			// it would count from time 0, which is start_ns's job.
			return nil, fail("delay_ns: %d is given without after= (a delay counts from the message's dependencies; without any, start_ns says when it is posted)", m.Delay/ib.Nanosecond)
		}
		if computeSet && len(after) == 0 {
			// Compute is what a rank does with what it received; without
			// dependencies there is nothing it waits for to compute on.
			return nil, fail("compute_ns: %d is given without after= (compute follows the message's dependencies; without any, start_ns says when it is posted)", m.Compute/ib.Nanosecond)
		}
		if !decimalNumber.MatchString(pos[0]) {
			// ParseFloat alone also takes hex floats (0x1p4), Inf, NaN
			// and underscores, which no trace generator means.
			return nil, fail("start_ns: %q is not a number (ns in decimal, e.g. 1500 or 12.5; 0 to 1e12)", pos[0])
		}
		st, err := strconv.ParseFloat(pos[0], 64)
		if err != nil || math.IsNaN(st) || st < 0 || st > MaxReplayStartNs {
			return nil, fail("start_ns: %q is out of range (0 to 1e12 ns)", pos[0])
		}
		m.Start = ib.FromNanoseconds(st)
		host := func(field, s string) (int, error) {
			h, err := strconv.Atoi(s)
			if err != nil || h < 0 || h >= hosts {
				return 0, fail("%s: %q is not a host of the topology (0 to %d)", field, s, hosts-1)
			}
			return h, nil
		}
		if m.Src, err = host("src", pos[1]); err != nil {
			return nil, err
		}
		if m.Dst, err = host("dst", pos[2]); err != nil {
			return nil, err
		}
		if m.Src == m.Dst {
			return nil, fail("dst: %d is the source host too (a message goes to another host)", m.Dst)
		}
		op := -1
		for i, o := range ReplayOps {
			if o == pos[3] {
				op = i
			}
		}
		if op < 0 {
			return nil, fail("op: %q is not an op (%s)", pos[3], strings.Join(ReplayOps, ", "))
		}
		m.Op = ReplayOp(op)
		b, err := strconv.ParseInt(pos[4], 10, 64)
		if notNumber(err) {
			return nil, fail("bytes: %q is not a whole number (a byte count in decimal, 1 to %d)", pos[4], MaxReplayBytes)
		}
		if err != nil || b < 1 || b > MaxReplayBytes {
			return nil, fail("bytes: %q is out of range (1 to %d)", pos[4], MaxReplayBytes)
		}
		if m.Op.isAtomic() && b != replayAtomicBytes {
			return nil, fail("bytes: %q is not 8 (a %s moves one 8-byte word)", pos[4], m.Op)
		}
		m.Bytes = b
		if m.ID >= 0 {
			for _, a := range after {
				if a == m.ID {
					return nil, fail("after: %d is the message's own id (a dependency cycle)", a)
				}
			}
			idLine[m.ID] = line
			idMsg[m.ID] = int32(len(t.Msgs))
			lastID, lastIDLine = m.ID, line
		}
		if len(t.Msgs) == MaxReplayMessages {
			return nil, fail("more than %d messages (a model limit: every message is set up before the run)", MaxReplayMessages)
		}
		t.Msgs = append(t.Msgs, m)
		afterIDs = append(afterIDs, after)
		afterLines = append(afterLines, line)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: longer than %d bytes (one message a line: start_ns src dst op bytes and the optional fields)", name, line+1, maxReplayLine)
		}
		return nil, fmt.Errorf("%s:%d: %v", name, line+1, err)
	}
	if len(t.Msgs) == 0 {
		return nil, fmt.Errorf("%s: no messages (one a line: start_ns src dst op bytes)", name)
	}
	// Dependencies, once every id is known: a later id is told apart from
	// one that is nobody's. Depending only on earlier lines makes the
	// dependency graph acyclic; a message that names itself is the one
	// cycle that leaves (refused above).
	for i, after := range afterIDs {
		line = afterLines[i]
		m := &t.Msgs[i]
		for _, id := range after {
			j, ok := idMsg[id]
			if !ok {
				return nil, fail("after: %d is no message's id (a dependency names the id= of an earlier line)", id)
			}
			if int(j) > i {
				return nil, fail("after: %d is the id of line %d, below this one (a message depends on messages above it, so there is no cycle)", id, t.Msgs[j].Line)
			}
			d := &t.Msgs[j]
			switch {
			case d.Src == m.Src:
			case d.Dst == m.Src && d.Op.completesAtDst():
			case d.Dst == m.Src:
				return nil, fail("after: %d is a %s to host %d, which sees no completion of it (only send and write_imm complete at their destination)", id, d.Op, m.Src)
			default:
				return nil, fail("after: %d goes from host %d to host %d, and host %d, this message's source, sees neither end (a dependency is a message the source sent or received)", id, d.Src, d.Dst, m.Src)
			}
			m.After = append(m.After, j)
		}
	}
	return t, nil
}

// decimalNumber is a number as a trace generator writes one: decimal
// digits, at most one point, an optional exponent, an optional sign (a
// negative one is then out of range, not malformed).
var decimalNumber = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// notNumber reports whether a strconv.ParseInt error says the text is no
// decimal integer at all ("0x10", "2.5", "long"), as against one out of
// int64's range.
func notNumber(err error) bool {
	var ne *strconv.NumError
	return errors.As(err, &ne) && ne.Err == strconv.ErrSyntax
}
