package components

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/ib"
)

func TestTraceKindNames(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range TraceKinds() {
		name := k.String()
		assert.False(t, seen[name], "duplicate name %s", name)
		seen[name] = true
		back, ok := ParseTraceKind(name)
		assert.True(t, ok)
		assert.Equal(t, k, back)
	}
	_, ok := ParseTraceKind("invalid")
	assert.False(t, ok, "the zero kind is not parseable")
	assert.Equal(t, "kind(200)", TraceKind(200).String())
}

func TestStreamKey(t *testing.T) {
	cases := []struct {
		ev   TraceEvent
		want string
	}{
		{TraceEvent{Path: "P", Kind: TraceTxStart, Fields: []TraceField{IntField("vl", 3), IntField("qpn", 9)}}, "P vl=3"},
		{TraceEvent{Path: "P", Kind: TraceArbGrant, Fields: []TraceField{IntField("vl", 3)}}, "P"},
		{TraceEvent{Path: "H", Kind: TraceCQE, Fields: []TraceField{IntField("qpn", 9), IntField("vl", 0)}}, "H qpn=9"},
		{TraceEvent{Path: "H", Kind: TraceCQE}, "H"},
		{TraceEvent{Path: "H", Kind: TraceStage, Fields: []TraceField{StrField("stage", "wqefetch")}}, "H stage=wqefetch"},
		{TraceEvent{Path: "P", Kind: TraceDrop}, "P"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.ev.StreamKey())
	}
}

func TestAppendPacketFlowControl(t *testing.T) {
	var ev TraceEvent
	fs := ev.AppendPacket(nil, &ib.Packet{Kind: ib.FlowControl, VL: 2, FCTBS: 100, FCCL: 164})
	assert.Equal(t, []TraceField{IntField("vl", 2), IntField("fctbs", 100), IntField("fccl", 164)}, fs)
}

func TestFieldRank(t *testing.T) {
	keys := StandardFieldKeys()
	for i, k := range keys {
		assert.Equal(t, i, FieldRank(k))
	}
	assert.Equal(t, len(keys), FieldRank("zzz"))
}
