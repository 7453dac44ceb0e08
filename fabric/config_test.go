package fabric

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/ib"
)

// TestAcronymsInAnyCase: the config values that are IB acronyms
// (link.generation, link.width, workload.connection) and hca.profile are
// accepted in any case and decoded to one spelling, which is what params and results show;
// a name that is none is refused as written, and lower-case names (kinds,
// media) stay exact.
func TestAcronymsInAnyCase(t *testing.T) {
	for _, tc := range []struct {
		set  string
		key  string
		want string
	}{
		{"link.generation=ndr", "link.generation", "NDR"},
		{"link.generation=Fdr10", "link.generation", "FDR10"},
		{"link.width=4X", "link.width", "4x"},
		{"link.width=12X", "link.width", "12x"},
		{"workload.connection=ud", "workload.connection", "UD"},
		{"workload.connection=Rc", "workload.connection", "RC"},
		{"hca.profile=CX7", "hca.profile", "cx7"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			l, err := Load(nil, []string{tc.set})
			require.NoError(t, err)
			v, ok := Value(&l.Config, tc.key)
			require.True(t, ok)
			assert.Equal(t, tc.want, v)
		})
	}
	for _, tc := range []struct{ set, want string }{
		{"workload.connection=uc", `workload.connection: "uc" is not a transport (RC, UD)`},
		{"link.generation=ndr2", `link.generation: "ndr2" is not a generation`},
		{"link.width=4y", `link.width: "4y" is not a width`},
		{"link.medium=Copper", `link.medium: "Copper" is not a medium (copper, fibre)`},
	} {
		t.Run(tc.set, func(t *testing.T) {
			_, err := Load(nil, []string{tc.set})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestTimeLimitCoversTheWindow: a workload that runs to a time (synthetic
// traffic, a saturating stream) measures over [warmup, warmup + measure];
// a sim.max_time_ns inside that window stopped the run early and divided
// what it saw by the whole window (a 0.5 offered load "accepted" at 0.15, a
// negative wire utilization), with no error. It is refused; a workload that
// runs to a count (a stream of N packets, perftest) reports the time limit
// itself and is left alone.
func TestTimeLimitCoversTheWindow(t *testing.T) {
	synth := []string{"topology.kind=single-switch", "switch.radix=4", "workload.kind=uniform", "workload.size=1024",
		"workload.warmup_ns=2000", "workload.measure_ns=10000"}
	stream := []string{"workload.kind=stream", "workload.size=4096", "workload.saturate=true",
		"workload.warmup_ns=500", "workload.measure_ns=2000"}
	with := func(base []string, more ...string) []string { return append(append([]string{}, base...), more...) }
	for _, tc := range []struct {
		name string
		sets []string
		want string // empty: accepted
	}{
		// 2000 + 10000 = 12000 ns is the window's end.
		{"synthetic, limit in the window", with(synth, "sim.max_time_ns=5000"),
			"sim.max_time_ns: 5000 stops the run before its measurement window ends (workload.warmup_ns 2000 + workload.measure_ns 10000 = 12000 ns); give at least 12000"},
		{"synthetic, limit 1 ns short", with(synth, "sim.max_time_ns=11999"), "give at least 12000"},
		{"synthetic, limit at the window's end", with(synth, "sim.max_time_ns=12000"), ""},
		// The default limit (1e8 ns) inside a long window: 1e8 + 1e9 ns.
		{"synthetic, long window, default limit", with(synth, "workload.measure_ns=1e9"), "give at least 1.000002e+09"},
		// 500 + 2000 = 2500 ns.
		{"saturating stream", with(stream, "sim.max_time_ns=1000"), "= 2500 ns); give at least 2500"},
		{"stream of a count", with(stream, "workload.saturate=false", "workload.packets=100", "sim.max_time_ns=1000"), ""},
		{"perftest", []string{"workload.kind=perftest", "sim.max_time_ns=1000"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(nil, tc.sets)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestFCIntervalsRoundToPicoseconds: link.fc_min_interval_ns 1.001 is
// 1000.9999… ps in float64; host ports truncated it to 1000 ps while the
// switches at the other end of their cables rounded it to 1001 ps, so the
// two ends of one cable coalesced flow-control packets on different
// intervals. Every port now takes the rounded value: 1.001 ns = 1001 ps,
// 6000.001 ns = 6,000,001 ps.
func TestFCIntervalsRoundToPicoseconds(t *testing.T) {
	l, err := Load(nil, []string{"link.fc_min_interval_ns=1.001", "link.fc_refresh_ns=6000.001"})
	require.NoError(t, err)
	pc := PortConfig(&l.Config, l.Config.HCA.VLBufferBytes)
	assert.Equal(t, ib.PS(1001), pc.FCMinInterval)
	assert.Equal(t, ib.PS(6_000_001), pc.FCRefresh)
	assert.Equal(t, pc.FCMinInterval, l.Config.Link.FCMinInterval(), "the switches' value")
	assert.Equal(t, pc.FCRefresh, l.Config.Link.FCRefresh())
}

// TestHCABufferErrorsSayWhatIsWrong: 262144 is a multiple of 64 but beyond
// the 2048 credits (2048 × 64 = 131072 bytes) a 12-bit FCCL can advertise
// ahead; the message used to say "is not a multiple of 64 bytes up to
// 131072" of it. Each limit now has its own message.
func TestHCABufferErrorsSayWhatIsWrong(t *testing.T) {
	_, err := Load(nil, []string{"hca.vl_buffer_bytes=262144"})
	assert.EqualError(t, err, "hca.vl_buffer_bytes: 262144 is more than 131072 (2048 credits, the 12-bit FCCL's reach)")
	_, err = Load(nil, []string{"hca.vl_buffer_bytes=65000"})
	assert.EqualError(t, err, "hca.vl_buffer_bytes: 65000 is not a multiple of 64 (one credit is 64 bytes)")
	_, err = Load(nil, []string{"hca.vl_buffer_bytes=131072"})
	assert.NoError(t, err)
}

// TestHashIgnoresWhatChangesNoResult: sim.check and sim.threads change no
// result (a checked run equals an unchecked one; partitions give identical
// results on any thread count, TestPartitionedDeterministic), so the
// config hash — a trace header's config= and a shard's manifest — is the
// same with or without them; hcasim diff called two identical traces'
// configs different when only the thread count differed. A setting that
// changes results (sim.partitions) changes the hash.
func TestHashIgnoresWhatChangesNoResult(t *testing.T) {
	base := []string{"topology.kind=fat-tree-2", "switch.radix=8", "workload.kind=uniform", "sim.partitions=2"}
	hash := func(more ...string) string {
		l, err := Load(nil, append(append([]string{}, base...), more...))
		require.NoError(t, err)
		return l.Hash()
	}
	h := hash()
	assert.Equal(t, h, hash("sim.threads=1"))
	assert.Equal(t, h, hash("sim.threads=2"))
	assert.Equal(t, h, hash("sim.check=true"))
	assert.NotEqual(t, h, hash("sim.partitions=3"))
}

// TestHashOfTheDefaultReplication: switch.mcast_replication's default,
// split, is the replication every run had before the key existed, so it
// is left out of the effective config: the hash of a config that does not
// name it is what it was, and naming split changes nothing; hold, which
// changes multicast results, changes the hash.
func TestHashOfTheDefaultReplication(t *testing.T) {
	hash := func(more ...string) (string, string) {
		l, err := Load(nil, append([]string{"topology.kind=single-switch", "switch.radix=4", "workload.kind=uniform"}, more...))
		require.NoError(t, err)
		return l.Hash(), string(l.EffectiveYAML())
	}
	h, y := hash()
	assert.NotContains(t, y, "mcast_replication")
	hs, _ := hash("switch.mcast_replication=split")
	assert.Equal(t, h, hs)
	hh, yh := hash("switch.mcast_replication=hold")
	assert.NotEqual(t, h, hh)
	assert.Contains(t, yh, "mcast_replication: hold")
}

// TestWindowRoundsToPicoseconds: 1.001 ns is 1000.9999… ps in float64; the
// measurement window truncated it to 1000 ps (the style rule: convert to
// integer picoseconds by rounding, never truncating, as the link's
// intervals already did). 2.003 ns is 2003 ps either way; the window is
// [1001, 1001 + 2003] ps.
func TestWindowRoundsToPicoseconds(t *testing.T) {
	l, err := Load(nil, []string{"topology.kind=single-switch", "switch.radix=4", "workload.kind=uniform",
		"workload.warmup_ns=1.001", "workload.measure_ns=2.003"})
	require.NoError(t, err)
	end, ok := l.Config.MeasureEnd()
	require.True(t, ok)
	assert.Equal(t, ib.PS(1001+2003), end)
	assert.Equal(t, ib.PS(1001), ib.FromNanoseconds(1.001))
}

// TestOverflowNamesTheKeysRange: an integer key given a whole number beyond
// its Go type (1e30 > 2^63 − 1 ≈ 9.22e18 > 2^64 − 1 ≈ 1.84e19, so past
// every integer type a key has) is refused naming the key's own range, as
// its Validate states it for a value that fits, not the type's
// (-9223372036854775808 to 9223372036854775807). The exceptions are the
// keys whose range is the type's, or is checked only where the type's
// bound cannot say it.
func TestOverflowNamesTheKeysRange(t *testing.T) {
	typeRange := map[string]string{
		"seed":           "every uint64 is a seed",
		"workload.shift": "any integer: the shift is taken mod the hosts",
		"workload.root":  "its upper bound, the fabric's hosts, is checked when the fabric is built",
	}
	d := Defaults()
	checked := 0
	for _, k := range config.Keys(reflect.TypeOf(Config{})) {
		v, ok := Value(&d, k)
		if !ok {
			continue
		}
		switch reflect.ValueOf(v).Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			continue
		}
		for _, val := range []string{"1e30", "-1e30"} {
			_, err := Load(nil, []string{k + "=" + val})
			require.Error(t, err, k)
			msg := err.Error()
			assert.True(t, strings.HasPrefix(msg, k+": "+val+" "), "names the key and the value as written: %s", msg)
			typeBound := strings.Contains(msg, "9223372036854775807") || strings.Contains(msg, "18446744073709551615")
			if _, ok := typeRange[k]; ok {
				continue
			}
			checked++
			assert.False(t, typeBound, "names the type's range, not the key's: %s", msg)
		}
	}
	assert.Greater(t, checked, 2*80, "the integer keys were found (90 when written)")

	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"workload.iterations=1e30"}, "workload.iterations: 1e30 is out of range (2 to 1e8)"},
		{[]string{"workload.iterations=-1e30"}, "workload.iterations: -1e30 is out of range (2 to 1e8)"},
		{[]string{"workload.qps=99999999999999999999"}, "workload.qps: 99999999999999999999 is out of range (1 to 4096)"},
		{[]string{"link.mtu=1e19"}, "link.mtu: 1e19 is not an IB MTU (256, 512, 1024, 2048, 4096)"},
		{[]string{"workload.kind=allreduce", "workload.algorithm=sharp", "workload.sharp_osts=1e30"},
			"workload.sharp_osts: 1e30 is out of range (0 for 64, 1 to 4096)"},
		// The same range without workload.algorithm: sharp (the key's
		// range is checked before whether the algorithm uses it).
		{[]string{"workload.sharp_osts=99999999999999999999"},
			"workload.sharp_osts: 99999999999999999999 is out of range (0 for 64, 1 to 4096)"},
		{[]string{"workload.sharp_fragment_bytes=-1e30"},
			"workload.sharp_fragment_bytes: -1e30 is out of range (0 for link.mtu, 1 to link.mtu)"},
		// The type's range where it is the key's: a seed is any uint64.
		{[]string{"seed=1e30"}, "seed: 1e30 is out of range (0 to 18446744073709551615)"},
	} {
		_, err := Load(nil, tc.sets)
		require.Error(t, err, tc.sets)
		assert.Equal(t, tc.want, err.Error(), tc.sets)
	}
}
