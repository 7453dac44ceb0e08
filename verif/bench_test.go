package verif

import (
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

func benchEvent() *components.TraceEvent {
	p := writePacket(3, 4096)
	p.Seq = 1
	ev := &components.TraceEvent{Time: 12345, Path: "Fabric.Leaf[2].Port[5]", Kind: components.TraceTxStart}
	ev.Fields = ev.AppendPacket(nil, &p)
	ev.Fields = append(ev.Fields, components.IntField("avail", 10), components.IntField("cap", 64))
	return ev
}

// BenchmarkRecorder is the cost of writing one traced packet event.
func BenchmarkRecorder(b *testing.B) {
	r := NewRecorder(io.Discard, testHeader, Filter{})
	ev := benchEvent()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ev.Time = ib.PS(i)
		r.Record(ev)
	}
}

// BenchmarkCheckers is the cost of checking one inject/deliver pair with
// wire, buffer and credit events around it (7 events per packet).
func BenchmarkCheckers(b *testing.B) {
	c := NewCheckers(CheckConfig{})
	p := writePacket(0, 4096)
	// A deliver event carries the ICRC computed over what arrived; the
	// source stamps the same one.
	p.ICRC = ib.ComputeICRC(&p)
	mk := func(kind components.TraceKind, path string, extra ...components.TraceField) *components.TraceEvent {
		e := &components.TraceEvent{Path: path, Kind: kind}
		e.Fields = append(e.AppendPacket(nil, &p), extra...)
		return e
	}
	inj := mk(components.TraceInject, "S")
	tx := mk(components.TraceTxStart, "S", components.IntField("avail", 0), components.IntField("cap", 65))
	txe := &components.TraceEvent{Path: "S", Kind: components.TraceTxEnd,
		Fields: []components.TraceField{components.IntField("seq", 0), components.IntField("vl", 0), components.IntField("bytes", int64(p.WireBytes()))}}
	enq := mk(components.TraceBufEnq, "D", components.IntField("occ", 65), components.IntField("cap", 65))
	del := mk(components.TraceDeliver, "D")
	deq := mk(components.TraceBufDeq, "D", components.IntField("occ", 0), components.IntField("cap", 65))
	cu := &components.TraceEvent{Path: "S", Kind: components.TraceCreditUpdate,
		Fields: []components.TraceField{components.IntField("vl", 0), components.IntField("avail", 65), components.IntField("cap", 65)}}
	setSeqPSN := func(e *components.TraceEvent, seq, psn int64) {
		for i := range e.Fields {
			switch e.Fields[i].Key {
			case "seq":
				e.Fields[i].Int = seq
			case "psn":
				e.Fields[i].Int = psn
			}
		}
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for _, e := range []*components.TraceEvent{inj, tx, txe, enq, del, deq} {
			setSeqPSN(e, int64(i+1), int64(i)%(1<<24))
			c.Observe(e)
		}
		c.Observe(cu)
	}
	if c.Err() != nil {
		b.Fatal(c.Err())
	}
}

// BenchmarkDiff compares two equal traces of 100 000 events in 16 streams.
func BenchmarkDiff(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(testHeader.String() + "\n")
	for i := 0; i < 100000; i++ {
		sb.WriteString(strconv.Itoa(i*100) + " P[" + strconv.Itoa(i%16) + "] tx_start vl=0 psn=" + strconv.Itoa(i) + "\n")
	}
	g, err := ReadTrace(strings.NewReader(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !Diff(g, g, DiffOptions{}).Equivalent() {
			b.Fatal("not equivalent")
		}
	}
}
