package fabric

import "testing"

// FuzzLoad: no config text and no override makes the real loader (strict
// decoding, hca profiles, every section's Validate, cross-checks) panic.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("link: {generation: NDR, width: 4x}\nworkload: {kind: uniform}\ntopology: {kind: fat-tree-2}\n"), "switch.radix=7")
	f.Add([]byte("hca: {profile: cx7}\nworkload: {kind: perftest, test: read_bw}\n"), "workload.connection=UD")
	f.Add([]byte("sweep: {a.b: [1, 2]}\nlink:\n  mtu: 4096\n  mtu: 256\n"), "link.mtu=3000")
	f.Add([]byte("topology: {kind: file, file: /nonexistent}\n"), "topology.hosts=-1")
	f.Add([]byte("switch: {vlarb_low: [{vl: 0, weight: 300}]}\n"), "switch.vls=16")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		_, _ = Load(data, []string{set})
	})
}
