package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/verif"
)

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// TestBadInput: every class of bad input exits 2 with one line naming the
// key (or file), the bad value and what is allowed.
func TestBadInput(t *testing.T) {
	unreadable := writeFile(t, "locked.yaml", "seed: 1\n")
	require.NoError(t, os.Chmod(unreadable, 0))
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want []string // substrings of the one-line message
	}{
		{"unknown key", []string{"-config", writeFile(t, "a.yaml", "link:\n  widht: 4x\n")},
			[]string{"link.widht: unknown key", "did you mean link.width"}},
		{"unknown section", []string{"-config", writeFile(t, "a.yaml", "lnk:\n  width: 4x\n")},
			[]string{"lnk: unknown key", "link"}},
		{"wrong type", []string{"-config", writeFile(t, "a.yaml", "link:\n  length_m: far\n")},
			[]string{"link.length_m", `"far" is not a number`}},
		{"wrong type int", []string{"-config", writeFile(t, "a.yaml", "link:\n  mtu: 4k\n")},
			[]string{"link.mtu", `"4k" is not a whole number`}},
		{"mapping for scalar", []string{"-config", writeFile(t, "a.yaml", "link:\n  mtu: {a: 1}\n")},
			[]string{"link.mtu", "want a whole number"}},
		{"out of range", []string{"-config", writeFile(t, "a.yaml", "link:\n  length_m: -3\n")},
			[]string{"link.length_m: -3 is out of range"}},
		{"unknown generation", []string{"-config", writeFile(t, "a.yaml", "link:\n  generation: GDR\n")},
			[]string{"link.generation", `"GDR" is not a generation`, "XDR"}},
		{"unknown width", []string{"-config", writeFile(t, "a.yaml", "link:\n  width: 3x\n")},
			[]string{"link.width", `"3x" is not a width (1x, 2x, 4x, 8x, 12x)`}},
		{"2x before HDR", []string{"-config", writeFile(t, "a.yaml", "link:\n  generation: EDR\n  width: 2x\n")},
			[]string{"link.width", "2x exists from HDR on"}},
		{"bad mtu", []string{"-config", writeFile(t, "a.yaml", "link:\n  mtu: 3000\n")},
			[]string{"link.mtu", "3000 is not an IB MTU (256, 512, 1024, 2048, 4096)"}},
		{"missing file", []string{"-config", filepath.Join(dir, "nope.yaml")},
			[]string{"nope.yaml", "no such file"}},
		{"unreadable file", []string{"-config", unreadable}, []string{"locked.yaml", "cannot read"}},
		// It said "cannot read: read DIR: is a directory".
		{"directory as config", []string{"-config", dir},
			[]string{"hcasim: " + dir + ": is a directory, not a config file (a YAML file, or the name of a shipped config such as ndr.yaml)"}},
		// A shipped example or benchmark named without its directory.
		{"example without examples/", []string{"-config", "hol-blocking.yaml"},
			[]string{"hcasim: hol-blocking.yaml: no such file, nor a shipped config of that name; did you mean examples/hol-blocking.yaml?"}},
		{"benchmark without bench/", []string{"-config", "switch16-uniform-50"},
			[]string{"no such file, nor a shipped config of that name; did you mean bench/switch16-uniform-50?"}},
		{"broken yaml", []string{"-config", writeFile(t, "a.yaml", "link: [\n")}, []string{"broken YAML"}},
		{"duplicate key", []string{"-config", writeFile(t, "a.yaml", "link:\n  generation: EDR\n  generation: HDR\n")},
			[]string{"link.generation: given twice (lines 2 and 3)"}},
		{"empty file", []string{"-config", writeFile(t, "a.yaml", "")}, []string{"the config is empty"}},
		// A merge key read as an unknown key named "<<" and listed the
		// valid ones, as if the user had mistyped one.
		{"yaml merge key", []string{"-config", writeFile(t, "a.yaml", "link:\n  <<: {generation: EDR}\n  width: 4x\n")},
			[]string{"a.yaml: link.<<: YAML merge keys (<<) are not supported; write the keys out"}},
		{"list at top", []string{"-config", writeFile(t, "a.yaml", "- 1\n- 2\n")}, []string{"must be a mapping"}},
		{"bad combination found at run", []string{"-config", "edr.yaml", "--set", "workload.connection=UD", "--set", "workload.test=write_bw"},
			[]string{"edr.yaml: workload.connection: UD runs send_lat and send_bw, not write_bw"}},
		// workload.sges: 1 … max_send_sge 30, each element a byte at least,
		// a perftest's (RC or UD), not a multicast one's.
		{"sges zero", []string{"-config", "edr.yaml", "--set", "workload.sges=0"},
			[]string{"workload.sges: 0 is out of range (1 to 30, the HCA's max_send_sge)"}},
		{"sges above max_send_sge", []string{"-config", "edr.yaml", "--set", "workload.sges=31"},
			[]string{"workload.sges: 31 is out of range (1 to 30, the HCA's max_send_sge)"}},
		{"sges above the size", []string{"-config", "edr.yaml", "--set", "workload.size=8", "--set", "workload.sges=9"},
			[]string{"edr.yaml: workload.sges: 9 is more than the message's 8 bytes (each element must hold at least one byte)"}},
		{"sges above an atomic's 8 bytes", []string{"-config", "edr.yaml", "--set", "workload.test=atomic_bw", "--set", "workload.sges=9"},
			[]string{"workload.sges: 9 is more than the message's 8 bytes"}},
		{"sges on a multicast perftest", []string{"-config", "examples/ud-multicast-perftest.yaml", "--set", "workload.sges=2"},
			[]string{"workload.sges: 2 with workload.mcg: true is not modelled"}},
		{"sges on a collective", []string{"-config", "examples/allreduce-tree.yaml", "--set", "workload.sges=2"},
			[]string{"workload.sges: 2 is set, but workload.kind allreduce does not use it"}},
		// The collectives' nccl-tests loop and the ring's NCCL channels.
		{"collective_iterations out of range", []string{"-config", "examples/allreduce-channels.yaml", "--set", "workload.collective_iterations=-1"},
			[]string{"workload.collective_iterations: -1 is out of range (0 or 1 for one timed iteration, up to 1000)"}},
		{"collective_warmup on a perftest", []string{"-config", "edr.yaml", "--set", "workload.collective_warmup=5"},
			[]string{"workload.collective_warmup: 5 is set, but workload.kind perftest does not use it"}},
		{"channels on the tree", []string{"-config", "examples/allreduce-tree.yaml", "--set", "workload.channels=2"},
			[]string{"workload.channels: 2 is set, but workload.algorithm tree does not use it"}},
		{"channels not a number", []string{"-config", "examples/allreduce-channels.yaml", "--set", "workload.channels=many"},
			[]string{"workload.channels"}},
		// workload.flow_control, workload.collective_average.
		{"flow_control unknown", []string{"-config", "examples/allreduce-cts.yaml", "--set", "workload.flow_control=credit"},
			[]string{`workload.flow_control: "credit" is not a flow control (none, cts)`}},
		{"cts on rabenseifner", []string{"-config", "examples/allreduce-algorithms.yaml", "--set", "workload.flow_control=cts"},
			[]string{"workload.flow_control: cts is set, but workload.algorithm rabenseifner does not use it (the clear-to-send is modelled for NCCL's all-reduces only, ring and tree: set workload.kind: allreduce with workload.algorithm ring or tree, or remove the key)"}},
		{"collective_average unknown", []string{"-config", "examples/allreduce-cts.yaml", "--set", "workload.flow_control=cts", "--set", "workload.collective_average=median"},
			[]string{`workload.collective_average: "median" is not an nccl-tests -a mode (rank0, avg, min, max)`}},
		{"collective_average without cts", []string{"-config", "examples/allreduce-channels.yaml", "--set", "workload.collective_average=min"},
			[]string{"workload.collective_average: min is set, but without workload.flow_control: cts"}},
		// workload.protocol.
		{"protocol unknown", []string{"-config", "examples/allreduce-protocols.yaml", "--set", "sweep={}", "--set", "workload.protocol=ll256"},
			[]string{`workload.protocol: "ll256" is not an NCCL protocol (simple, ll, ll128)`}},
		{"protocol ll without cts", []string{"-config", "examples/allreduce-tree.yaml", "--set", "sweep={}", "--set", "workload.protocol=ll"},
			[]string{`workload.protocol: ll is set, but workload.flow_control is "none"; NCCL moves ll lines through its clear-to-send FIFO (the slots are the protocol's steps), so set workload.flow_control: cts, or remove the key`}},
		{"protocol ll128 on rabenseifner", []string{"-config", "examples/allreduce-algorithms.yaml", "--set", "sweep={}", "--set", "workload.algorithm=rabenseifner", "--set", "workload.protocol=ll128"},
			[]string{"workload.protocol: ll128 is set, but workload.algorithm rabenseifner does not use it (NCCL's protocols are modelled for its all-reduces only, ring and tree: set workload.kind: allreduce with workload.algorithm ring or tree, or remove the key)"}},
		{"protocol ll on a perftest", []string{"-config", "edr.yaml", "--set", "workload.protocol=ll"},
			[]string{"workload.protocol: ll is set, but workload.kind perftest does not use it"}},
		{"protocol ll slice above its step", []string{"-config", "examples/allreduce-protocols.yaml", "--set", "sweep={}", "--set", "workload.protocol=ll", "--set", "workload.slice_bytes=65536"},
			[]string{"workload.slice_bytes: 65536 is more than a workload.protocol ll FIFO step carries (32768 data bytes); set it to 32768 or less, or remove it for the step"}},
		// workload.use_srq: perftest's send tests; workload.rx_depth.
		{"use_srq on write_bw", []string{"-config", "edr.yaml", "--set", "workload.use_srq=true"},
			[]string{"edr.yaml: workload.use_srq: true with workload.test write_bw: perftest's --use_srq is for the SEND tests (send_bw, send_lat)"}},
		{"use_srq shallower than the QPs", []string{"-config", "edr.yaml", "--set", "workload.test=send_bw", "--set", "workload.qps=8", "--set", "workload.rx_depth=4", "--set", "workload.use_srq=true"},
			[]string{"workload.use_srq: true with workload.qps 8 above workload.rx_depth 4"}},
		{"use_srq on a collective", []string{"-config", "examples/allreduce-tree.yaml", "--set", "workload.use_srq=true"},
			[]string{"workload.use_srq: true is set, but workload.kind allreduce does not use it"}},
		{"rx_depth out of range", []string{"-config", "edr.yaml", "--set", "workload.test=send_bw", "--set", "workload.rx_depth=9000"},
			[]string{"workload.rx_depth: 9000 is out of range (0 for perftest's 512, 1 to 8192)"}},
		// Completion events: hca.host.interrupt_to_wakeup_ns 0 … 1e9;
		// workload.use_event on a perftest whose loop polls a CQ.
		{"interrupt_to_wakeup_ns negative", []string{"-config", "edr.yaml", "--set", "hca.host.interrupt_to_wakeup_ns=-1"},
			[]string{"hca.host.interrupt_to_wakeup_ns: -1 is out of range (0 to 1e9)"}},
		{"interrupt_to_wakeup_ns not a number", []string{"-config", "edr.yaml", "--set", "hca.host.interrupt_to_wakeup_ns=soon"},
			[]string{"hca.host.interrupt_to_wakeup_ns"}},
		{"use_event on write_lat", []string{"-config", "edr.yaml", "--set", "workload.test=write_lat", "--set", "workload.use_event=true"},
			[]string{"edr.yaml: workload.use_event: true with workload.test write_lat: its loop polls the receive buffer's last byte, not a CQ"}},
		{"use_event on a collective", []string{"-config", "examples/allreduce-tree.yaml", "--set", "workload.use_event=true"},
			[]string{"workload.use_event: true is set, but workload.kind allreduce does not use it"}},
		// CQ moderation: mlx5's 16-bit cq_max_count, 12-bit cq_period,
		// with use_event only.
		{"cq_moderation_count out of range", []string{"-config", "examples/cq-events.yaml", "--set", "workload.cq_moderation_count=65536"},
			[]string{"workload.cq_moderation_count: 65536 is out of range (0 to 65535, mlx5's 16-bit cq_max_count)"}},
		{"cq_moderation_period_us out of range", []string{"-config", "examples/cq-events.yaml", "--set", "workload.cq_moderation_period_us=4096"},
			[]string{"workload.cq_moderation_period_us: 4096 is out of range (0 to 4095 µs, mlx5's 12-bit cq_period)"}},
		{"cq_moderation without use_event", []string{"-config", "edr.yaml", "--set", "workload.cq_moderation_count=4"},
			[]string{"edr.yaml: workload.cq_moderation_count: 4 is set, but workload.use_event is not"}},
		{"time limit", []string{"-config", "edr.yaml", "--set", "sim.max_time_ns=1000"},
			[]string{"edr.yaml: perftest write_bw: did not finish", "sim.max_time_ns"}},
		{"unknown subcommand-like arg", []string{"-config", "edr.yaml", "extra"}, []string{"unexpected argument \"extra\""}},
		{"unknown subcommand", []string{"foo"},
			[]string{`"foo" is not a subcommand (bench, diff, help, merge, rtl, topology, version) or a flag`, "hcasim help"}},
		{"unknown subcommand with flags", []string{"bnech", "--csv", "x.csv"}, []string{`"bnech" is not a subcommand`}},
		{"config without -config", []string{"edr.yaml"},
			[]string{`unexpected argument "edr.yaml"`, "give -config edr.yaml"}},
		{"config file without -config", []string{"--quiet", writeFile(t, "a.yaml", "seed: 1\n")},
			[]string{"a.yaml", "give -config"}},
		{"version with an argument", []string{"version", "extra"},
			[]string{`version: "extra" is an unexpected argument (hcasim version takes none)`}},
		{"help with an argument", []string{"help", "run"},
			[]string{`help: "run" is an unexpected argument (hcasim help takes none)`}},
		{"bad set path", []string{"-config", "ndr.yaml", "--set", "link.speed=NDR"},
			[]string{"link.speed: unknown key"}},
		{"bad set syntax", []string{"-config", "ndr.yaml", "--set", "link.width"},
			[]string{"--set", "want key=value"}},
		{"bad set value", []string{"-config", "ndr.yaml", "--set", "link.mtu=big"},
			[]string{"link.mtu", `"big" is not a whole number`}},
		{"set out of range", []string{"-config", "ndr.yaml", "--set", "workload.offered_load=1.5"},
			[]string{"workload.offered_load: 1.5 is out of range"}},
		// A key that used to be valid is refused by name, with what
		// replaced it, in a file and with --set alike.
		{"retired key in a file", []string{"-config", writeFile(t, "a.yaml", "hca:\n  key_cache_miss_ns: 500\n")},
			[]string{"hca.key_cache_miss_ns: 500 is no longer accepted", "PCIe read of the key's 64-byte MKey context", "remove the key"}},
		{"retired key with set", []string{"-config", "edr.yaml", "--set", "hca.key_cache_miss_ns=0"},
			[]string{"hca.key_cache_miss_ns: 0 is no longer accepted", "hca.key_miss_extra_ns"}},
		{"bad format", []string{"-config", "ndr.yaml", "--format", "xml"}, []string{"--format", `"xml"`}},
		{"unknown flag", []string{"-config", "ndr.yaml", "--colour"}, []string{"unknown flag"}},
		{"no config", []string{}, []string{"-config: no config given"}},
		{"partitions with perftest", []string{"-config", "ndr.yaml", "--set", "sim.partitions=2"},
			[]string{"sim.partitions: 2 needs a synthetic workload", "not workload.kind perftest"}},
		{"unwritable cpu profile", []string{"-config", "edr.yaml", "--cpuprofile", filepath.Join(dir, "no", "cpu.prof")},
			[]string{"--cpuprofile", "cpu.prof"}},
		{"trace path no name matches", []string{"-config", "edr.yaml", "--trace", filepath.Join(dir, "t.trace"), "--trace-path", "["},
			[]string{`--trace-path: "[" can match no component`, "Fabric.Leaf[2].Port[5]"}},
		{"trace path lower case", []string{"-config", "edr.yaml", "--vcd", filepath.Join(dir, "t.vcd"), "--trace-path", "fabric.host*"},
			[]string{`--trace-path: "fabric.host*" can match no component`}},
		{"empty trace path", []string{"-config", "edr.yaml", "--trace", filepath.Join(dir, "t.trace"), "--trace-path", ""},
			[]string{`--trace-path: "" holds an empty pattern`}},
		{"trace kind without trace", []string{"-config", "edr.yaml", "--trace-kind", "tx_start"},
			[]string{"--trace-kind: filters what --trace writes, and --trace is not given"}},
		// A waveform needs every kind its signals come from (busy: tx_start
		// and tx_end), so --trace-kind does not filter it.
		{"trace kind with vcd only", []string{"-config", "edr.yaml", "--vcd", filepath.Join(dir, "k.vcd"), "--trace-kind", "tx_start"},
			[]string{"--trace-kind: filters what --trace writes, and --trace is not given (--vcd and --pcap are not filtered by kind)"}},
		{"trace path without trace", []string{"-config", "edr.yaml", "--trace-path", "Fabric.*"},
			[]string{"--trace-path: filters what --trace, --vcd and --pcap write, and none is given"}},
		{"empty trace kind", []string{"-config", "edr.yaml", "--trace", filepath.Join(dir, "t.trace"), "--trace-kind", "tx_start,"},
			[]string{`--trace-kind: "tx_start," holds an empty kind`}},
		{"bad trace kind", []string{"-config", "edr.yaml", "--trace", filepath.Join(dir, "t.trace"), "--trace-kind", "bogus"},
			[]string{`--trace-kind: "bogus" is not an event kind`, "tx_start"}},
		{"empty trace", []string{"-config", "edr.yaml", "--trace", ""}, []string{"--trace: an empty value (give a file, or omit --trace)"}},
		{"empty vcd", []string{"-config", "edr.yaml", "--vcd="}, []string{"--vcd: an empty value"}},
		{"empty pcap", []string{"-config", "edr.yaml", "--pcap="}, []string{"--pcap: an empty value (give a file, or omit --pcap)"}},
		{"snaplen without pcap", []string{"-config", "edr.yaml", "--pcap-snaplen", "64"},
			[]string{"--pcap-snaplen: cuts the packets --pcap writes, and --pcap is not given"}},
		{"negative snaplen", []string{"-config", "edr.yaml", "--pcap", filepath.Join(dir, "n.pcapng"), "--pcap-snaplen", "-1"},
			[]string{"--pcap-snaplen: -1 is out of range (0 for whole packets, or 1 to 262144 bytes kept of each)"}},
		{"pcap is the trace", []string{"-config", "edr.yaml", "--trace", filepath.Join(dir, "same"), "--pcap", filepath.Join(dir, "same")},
			[]string{"--pcap: " + filepath.Join(dir, "same") + " is also --trace's file"}},
		{"unwritable pcap", []string{"-config", "edr.yaml", "--pcap", filepath.Join(dir, "no", "x.pcapng")},
			[]string{"--pcap:", "x.pcapng"}},
		{"empty shard", []string{"-config", "ndr.yaml", "--shard", ""}, []string{"--shard: an empty value (give I/N, e.g. 0/4, or omit --shard)"}},
		{"empty out", []string{"-config", "ndr.yaml", "--out", ""}, []string{"--out: an empty value (give a directory, or omit --out)"}},
		// A flag's value of the wrong kind names the flag, the value and
		// what it takes (it quoted Go's parser: `invalid argument "-1" for
		// "--seed" flag: …`).
		{"negative seed", []string{"-config", "edr.yaml", "--seed", "-1"}, []string{`hcasim: --seed: "-1" is not a whole number from 0 to 18446744073709551615` + "\n"}},
		// --seed takes what seed: takes, a whole float among it (1e3), and
		// refuses a fraction or a value past 2^64 − 1 ≈ 1.8e19.
		{"fractional seed", []string{"-config", "edr.yaml", "--seed", "1.5"}, []string{`hcasim: --seed: "1.5" is not a whole number from 0 to 18446744073709551615` + "\n"}},
		{"seed past 64 bits", []string{"-config", "edr.yaml", "--seed", "2e19"}, []string{`hcasim: --seed: "2e19" is not a whole number from 0 to 18446744073709551615` + "\n"}},
		{"jobs not a number", []string{"-config", "edr.yaml", "--jobs", "two"}, []string{`hcasim: --jobs: "two" is not a whole number` + "\n"}},
		{"check not a bool", []string{"-config", "edr.yaml", "--check=maybe"}, []string{`hcasim: --check: "maybe" is not true or false` + "\n"}},
		{"bench scale not numbers", []string{"bench", "--scale", "128,x"}, []string{`hcasim: bench: --scale: "128,x" is not a comma-separated list of whole numbers` + "\n"}},
		// An integer key past 64 bits names the key's own range, in a
		// sweep's values too.
		{"overflow", []string{"-config", "edr.yaml", "--set", "workload.iterations=1e30"}, []string{"hcasim: edr.yaml: workload.iterations: 1e30 is out of range (2 to 1e8)\n"}},
		{"overflow in a sweep", []string{"-config", "ndr.yaml", "--set", "sweep.switch.radix=[8, 1e19]"}, []string{"sweep.switch.radix: 1e19 is out of range (2 to 256) (at the point switch.radix=1e19"}},
		{"unwritable heap profile", []string{"-config", "edr.yaml", "--memprofile", filepath.Join(dir, "no", "mem.prof")},
			[]string{"--memprofile", "mem.prof"}},
		// workload.root: past the ranks (known when the fabric is built),
		// negative, and with a kind that has no root.
		{"root past the ranks", []string{"-config", "edr.yaml", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4",
			"--set", "workload.kind=broadcast", "--set", "workload.size=4096", "--set", "workload.root=4"},
			[]string{"workload.root: 4 is not a rank of the broadcast over 4 ranks (0 to 3)"}},
		{"negative root", []string{"-config", "edr.yaml", "--set", "workload.kind=reduce", "--set", "workload.size=4096", "--set", "workload.root=-1"},
			[]string{"workload.root: -1 is not a rank (0 to the topology's hosts − 1)"}},
		{"root without a root", []string{"-config", "edr.yaml", "--set", "workload.kind=allreduce", "--set", "workload.size=4096", "--set", "workload.root=2"},
			[]string{"workload.root: 2 is set, but workload.kind allreduce has no root"}},
		// Several multicast groups and a unicast background beside them
		// (examples/multicast-mixed.yaml: 4 groups of 8 on 64 hosts).
		{"sender in two groups", []string{"-config", "examples/multicast-mixed.yaml", "--set", "sweep={}", "--set", `workload.groups=["0-7","7-9"]`, "--set", "workload.senders=7"},
			[]string{`workload.senders: host 7 is in workload.groups[0] "0-7" and workload.groups[1] "7-9"; say which it sends to in workload.group_senders`}},
		{"group senders of another length", []string{"-config", "examples/multicast-mixed.yaml", "--set", "sweep={}", "--set", `workload.group_senders=["4"]`, "--set", "workload.senders="},
			[]string{"workload.group_senders: 1 lists for the 4 of workload.groups; give one host list per group, in its order"}},
		{"multicast perftest over RC", []string{"-config", "examples/ud-multicast-perftest.yaml", "--set", "sweep={}", "--set", "workload.connection=RC"},
			[]string{"workload.mcg: true needs workload.connection UD (multicast is unreliable datagram), not RC"}},
		{"multicast perftest of a write test", []string{"-config", "examples/ud-multicast-perftest.yaml", "--set", "sweep={}", "--set", "workload.test=write_bw"},
			[]string{"workload.mcg: true runs send_bw and send_lat (perftest: multicast only on the SEND verb), not write_bw"}},
		{"unknown multicast replication policy", []string{"-config", "examples/ud-multicast-perftest.yaml", "--set", "sweep={}", "--set", "switch.mcast_replication=wait"},
			[]string{`switch.mcast_replication: "wait" is not a multicast replication policy (split, hold)`}},
		{"multicast receivers past the hosts", []string{"-config", "examples/ud-multicast-perftest.yaml", "--set", "sweep={}", "--set", "workload.mcg_receivers=16"},
			[]string{"workload.mcg_receivers: 16 is more than the fabric's 16 hosts less the sender (0 for all of them, 1 to 15)"}},
		{"group loads of another length", []string{"-config", "examples/multicast-mixed.yaml", "--set", "sweep={}", "--set", "workload.group_loads=[0.5,0.5]"},
			[]string{"workload.group_loads: 2 entries for the 4 of workload.groups; give one per group, in its order"}},
		{"group size past the MTU", []string{"-config", "examples/multicast-mixed.yaml", "--set", "sweep={}", "--set", "workload.group_sizes=[256,256,256,8192]"},
			[]string{"workload.group_sizes[3]: 8192 is out of range for a multicast packet (1 to link.mtu 4096)"}},
		{"sender in no group", []string{"-config", "examples/multicast-mixed.yaml", "--set", "sweep={}", "--set", "workload.senders=4,5,6,7,40"},
			[]string{"workload.senders: host 40 is in none of workload.groups (a port sends to a group it has joined)"}},
		{"group without sender", []string{"-config", "examples/multicast-mixed.yaml", "--set", "sweep={}", "--set", "workload.senders=4,5,6"},
			[]string{`workload.senders: "4,5,6" names no host of workload.groups[3]`}},
		{"too many groups", []string{"-config", "examples/multicast-mixed.yaml", "--set", "sweep={}", "--set", "workload.groups=[" + strings.Repeat(`"0-1",`, 16383) + `"0-1"]`},
			[]string{"workload.groups: 16384 groups is more than the 16383 multicast LIDs 0xC000 to 0xFFFE"}},
		{"background load", []string{"-config", "examples/multicast-mixed.yaml", "--set", "sweep={}", "--set", "workload.background_load=-0.5"},
			[]string{"workload.background_load: -0.5 is out of range (0 for workload.offered_load, or above 0 up to 1)"}},
		{"background of no host", []string{"-config", "examples/multicast-mixed.yaml", "--set", "sweep={}", "--set", `workload.groups=["0-31","32-63"]`, "--set", "workload.senders="},
			[]string{"workload.background: true, but every one of the fabric's 64 hosts is in a multicast group"}},
		// Non-minimal Dragonfly+ routing needs its second VL, adaptive
		// routing, and a Dragonfly+.
		{"nonminimal on one VL", []string{"-config", "examples/dragonfly-plus-nonminimal.yaml", "--set", "sweep={}", "--set", "topology.nonminimal=true", "--set", "switch.vls=1"},
			[]string{"topology.nonminimal: true moves a detour's second global hop to VL 1, but switch.vls is 1; set switch.vls to 2 or more"}},
		{"nonminimal without AR", []string{"-config", "examples/dragonfly-plus-nonminimal.yaml", "--set", "sweep={}", "--set", "topology.nonminimal=true", "--set", "topology.adaptive_routing=false"},
			[]string{"topology.nonminimal: true needs topology.adaptive_routing: true"}},
		{"nonminimal with an SL on VL 1", []string{"-config", "examples/dragonfly-plus-nonminimal.yaml", "--set", "sweep={}", "--set", "topology.nonminimal=true", "--set", "workload.sl=1"},
			[]string{"topology.nonminimal: deadlock:", "(a detour's second global cable takes VL 1;"}},
		// A replay's message trace is read and parsed for every point before
		// any runs: it was read per point at run time, so a sweep with a bad
		// one ran, failed every point, wrote their errors and printed two
		// lines. (--out keeps a mutant's results out of the package dir.)
		{"replay trace missing", []string{"-config", "examples/replay-bcast.yaml", "--out", filepath.Join(dir, "replay-out"),
			"--set", "sweep.workload.trace_file=[replay-bcast-delay.trace, nope.trace]"},
			[]string{"hcasim: examples/replay-bcast.yaml: sweep.workload.trace_file: nope.trace: no such file in the current directory, nor beside the config examples/replay-bcast.yaml (a relative path given with --set is from the current directory, else the config's)"}},
		{"replay trace broken", []string{"-config", "examples/replay-halo.yaml", "--out", filepath.Join(dir, "replay-out"),
			"--set", "workload.trace_file=" + writeFile(t, "broken.trace", "0 1 2 write\n")},
			[]string{"at the point link.generation=HDR: workload.trace_file: ", "broken.trace:1: 4 fields, want 5: start_ns src dst op bytes"}},
		// replay-halo.trace's line 13 sends to host 15 (16 ranks).
		{"replay trace beyond the fabric", []string{"-config", "examples/replay-halo.yaml", "--out", filepath.Join(dir, "replay-out"),
			"--set", "topology.hosts=8"},
			[]string{"workload.trace_file: replay-halo.trace:13: dst: \"15\" is not a host of the topology (0 to 7)"}},
		// So is a topology file, which failed every point alike and
		// replaced the sweep's earlier results with the errors.
		{"topology file missing in a sweep", []string{"-config", "ndr.yaml", "--out", filepath.Join(dir, "topo-out"),
			"--set", "topology={kind: file, file: " + filepath.Join(dir, "nope.topo") + "}"},
			[]string{"sweep: at the point switch.vl_buffer_bytes=4160, workload.offered_load=0.2: topology.file: " + filepath.Join(dir, "nope.topo") + ": no such file\n"}},
		{"topology file broken in a sweep", []string{"-config", "ndr.yaml", "--out", filepath.Join(dir, "topo-out"),
			"--set", "topology={kind: file, file: " + writeFile(t, "bad.topo", "garbage here\n") + "}"},
			[]string{`topology.file: `, `bad.topo:1: "garbage" is not a statement (host, switch, root, cable)`}},
		{"nonminimal on a fat tree", []string{"-config", "ndr.yaml", "--set", "sweep={}", "--set", "switch.vls=2", "--set", "topology.adaptive_routing=true", "--set", "topology.nonminimal=true"},
			[]string{"topology.nonminimal: true is set, but topology.kind fat-tree-2 is not a dragonfly-plus"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "unreadable file" && os.Geteuid() == 0 {
				// root reads a mode-0 file anyway (a directory, which it
				// stood in for, has its own case now).
				t.Skip("root reads a mode-0 file")
			}
			code, out, errs := run(tc.args...)
			assert.Equal(t, 2, code, "stderr: %s", errs)
			assert.Empty(t, out)
			assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
			assert.True(t, strings.HasPrefix(errs, "hcasim: "), errs)
			for _, w := range tc.want {
				assert.Contains(t, errs, w)
			}
			assert.NotContains(t, errs, "goroutine")
		})
	}
}

func TestShippedConfigsRun(t *testing.T) {
	for _, name := range []string{"edr.yaml", "hdr.yaml", "xdr.yaml"} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := run("-config", name, "--format", "json", "--set", "workload.iterations=50")
			require.Equal(t, 0, code, errs)
			var res map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &res))
			assert.Equal(t, "hcasim", res["tool"])
			points := res["points"].([]any)
			require.Len(t, points, 1)
			m := points[0].(map[string]any)["metrics"].(map[string]any)
			assert.Greater(t, m["bw_gbps"], 1.0)
			assert.Equal(t, true, m["data_verified"])
		})
	}
}

func TestSingleDashAndOutFiles(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := run("-config", "ndr.yaml", "-set", "workload.iterations=20", "-set", "sweep.workload.offered_load=[0.3]",
		"-format=csv", "--out", dir, "--quiet")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "accepted_load")
	assert.Equal(t, 5, strings.Count(out, "\n"), "header + 4 buffer depths:\n%s", out)
	for _, f := range []string{"results.json", "results.csv"} {
		_, err := os.Stat(filepath.Join(dir, f))
		assert.NoError(t, err, f)
	}
}

func TestVersionAndHelp(t *testing.T) {
	code, out, _ := run("version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "hcasim "))
	code, out, _ = run("help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "-config")
	// Every subcommand the usage names is one Main knows, and the other way
	// round: the "not a subcommand" message lists subcommandNames.
	for _, name := range subcommandNames() {
		assert.Contains(t, out, "hcasim "+name, "help does not mention the subcommand %s", name)
	}
	// Every flag of bench and merge is in the help's line for it (bench's
	// --scale and merge's --quiet were missing).
	for _, fl := range []string{"--csv", "--set", "--scale", "--windows"} {
		assert.Regexp(t, `hcasim bench [^\n]*`+fl, out, "help's bench line lists %s", fl)
	}
	for _, fl := range []string{"--out", "--format", "--quiet"} {
		assert.Regexp(t, `hcasim merge [^\n]*`+fl, out, "help's merge line lists %s", fl)
	}
	// rtl's and topology's too: the rtl line named no flag but --report
	// and --testbench, and called the export "primitives, key check, LFT,
	// skeletons" when the HCA's transport and the whole hca_top are
	// implemented (docs/rtl.md).
	for _, fl := range []string{"--report", "--testbench", "--testbench-packets", "--set"} {
		assert.Regexp(t, `hcasim rtl [^\n]*`+fl, out, "help's rtl line lists %s", fl)
	}
	assert.NotContains(t, out, "primitives, key check, LFT, skeletons")
	for _, fl := range []string{"--set", "-o"} {
		assert.Regexp(t, `hcasim topology [^\n]*`+fl, out, "help's topology line lists %s", fl)
	}
	_, mergeHelp, _ := run("merge", "--help")
	assert.Contains(t, mergeHelp, "--quiet")
	// Every shipped config is findable from the help: a top-level one by
	// name, one in a directory by the directory's NAME.yaml form (the
	// examples and benchmarks were not mentioned, and "-config
	// hol-blocking.yaml" found nothing).
	for _, name := range configs.Names() {
		if dir, _, ok := strings.Cut(name, "/"); ok {
			assert.Contains(t, out, dir+"/NAME.yaml", "help does not say where %s is", name)
		} else {
			assert.Contains(t, out, name, "help does not name the shipped %s", name)
		}
	}
}

// TestEmptyValueTakesTheBuiltInDefault: a key given no value takes the
// built-in default docs/config.md lists (link.generation: NDR), in a file
// and from --set, where it replaces the file's value (edr.yaml's EDR)
// rather than keeping it, as docs/config.md says.
func TestEmptyValueTakesTheBuiltInDefault(t *testing.T) {
	params := func(args ...string) map[string]any {
		t.Helper()
		return onePointParams(t, append(args, "--quiet", "--set", "workload.iterations=5")...)
	}
	file := writeFile(t, "empty.yaml", "link:\n  generation:\ntopology: {kind: back-to-back}\nworkload: {kind: perftest, test: write_lat, size: 2}\n")
	assert.Equal(t, "NDR", params("-config", file)["link.generation"])
	assert.Equal(t, "EDR", params("-config", "edr.yaml")["link.generation"])
	for _, null := range []string{"null", "~"} {
		assert.Equal(t, "NDR", params("-config", "edr.yaml", "--set", "link.generation="+null)["link.generation"], null)
	}
}

// TestAcronymsAnyCaseEndToEnd: workload.connection=ud runs as link.generation=edr
// always did, and a run's params show the canonical spellings.
func TestAcronymsAnyCaseEndToEnd(t *testing.T) {
	params := onePointParams(t, "-config", "edr.yaml", "--set", "workload.connection=ud",
		"--set", "workload.test=send_lat", "--set", "workload.size=64", "--set", "workload.iterations=20",
		"--set", "link.generation=edr", "--set", "link.width=4X")
	assert.Equal(t, "EDR", params["link.generation"])
	assert.Equal(t, "4x", params["link.width"])
}

// onePointParams runs the CLI with args and --format json, which must
// succeed with one point, and returns that point's params.
func onePointParams(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errs := run(append(args, "--format", "json")...)
	require.Equal(t, 0, code, errs)
	var res struct {
		Points []struct {
			Params map[string]any `json:"params"`
		} `json:"points"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Points, 1)
	return res.Points[0].Params
}

// TestHelpFlags: --help and -h print a command's usage on stdout and exit 0,
// for the run and for every subcommand (they were errors, exit 2, for the
// run, bench and merge).
func TestHelpFlags(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-config", "ndr.yaml", "--help"},
		{"bench", "--help"}, {"bench", "-h"}, {"merge", "--help"}, {"diff", "--help"}, {"rtl", "--help"}, {"topology", "--help"},
		{"version", "--help"}, {"help", "-h"}} {
		code, out, errs := run(args...)
		assert.Equal(t, 0, code, "%v: %s", args, errs)
		assert.Contains(t, strings.ToLower(out+errs), "usage", "%v", args)
		assert.NotContains(t, out+errs, "help requested", "%v", args)
	}
	// hcasim rtl --help says what each flag does (it printed the usage
	// line alone).
	code, out, _ := run("rtl", "--help")
	assert.Equal(t, 0, code)
	for _, flag := range []string{"--config", "--out", "--report", "--testbench", "--testbench-packets", "--set"} {
		assert.Regexp(t, `(?m)^ .*`+regexp.QuoteMeta(flag)+`[ =\[].{20,}`, out, "%s is described", flag)
	}
}

// TestObserversChangeNoResult: tracing, checking and waveforms observe a run;
// they must not change a single reported number.
func TestObserversChangeNoResult(t *testing.T) {
	points := [][]string{
		{"-config", "edr.yaml", "--set", "workload.iterations=50"},
		{"-config", "edr.yaml", "--set", "workload.iterations=50", "--set", "workload.test=read_lat", "--set", "workload.size=64"},
		{"-config", "ndr.yaml", "--set", "sweep={}", "--set", "workload.iterations=30"},
		{"-config", "ndr.yaml", "--set", "sweep={}", "--set", "topology.kind=back-to-back", "--set", "topology.hosts=0",
			"--set", "topology.cable_length_m=0", "--set", "workload.kind=stream", "--set", "workload.saturate=false",
			"--set", "workload.packets=200"},
		// Synthetic traffic through a fat tree: the checkers' settling must
		// not stretch the switches' statistics window; and the same in
		// three partitions, whose observers see merged per-window buffers.
		{"-config", "bench/fattree64-uniform-30.yaml", "--set", "workload.warmup_ns=1000", "--set", "workload.measure_ns=3000"},
		{"-config", "bench/fattree64-uniform-30.yaml", "--set", "workload.warmup_ns=1000", "--set", "workload.measure_ns=3000",
			"--set", "sim.partitions=3"},
		// HCA runs settle after their last completion when checked (a
		// perftest's background drains first): the numbers are those of
		// the end, back to back, on a fat tree under background load, and
		// for the collectives.
		{"-config", "edr.yaml", "--set", "workload.iterations=20", "--set", "workload.test=send_bw", "--set", "workload.size=5000"},
		{"-config", "ndr.yaml", "--set", "sweep={}", "--set", "workload.iterations=20", "--set", "workload.test=write_bw",
			"--set", "workload.size=65536", "--set", "workload.offered_load=0.8"},
		{"-config", "ndr.yaml", "--set", "sweep={}", "--set", "workload.kind=allreduce", "--set", "workload.size=65536"},
		{"-config", "ndr.yaml", "--set", "sweep={}", "--set", "workload.kind=alltoall", "--set", "workload.size=65536"},
	}
	metrics := func(args ...string) map[string]any {
		code, out, errs := run(append(args, "--format", "json")...)
		require.Equal(t, 0, code, errs)
		var res map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		m := res["points"].([]any)[0].(map[string]any)["metrics"].(map[string]any)
		delete(m, "wall_s")
		return m
	}
	for i, args := range points {
		dir := t.TempDir()
		plain := metrics(args...)
		observed := metrics(append(append([]string{}, args...), "--check", "--trace", filepath.Join(dir, "t.trace"),
			"--vcd", filepath.Join(dir, "t.vcd"))...)
		// --check adds one key, whether its end-of-run checks ran: every
		// one of these runs settles, so they did.
		assert.Equal(t, true, observed["end_checks_run"], "point %d", i)
		delete(observed, "end_checks_run")
		assert.Equal(t, plain, observed, "point %d", i)
		// What the writer wrote, the reader's exact grammar takes.
		f, err := os.Open(filepath.Join(dir, "t.trace"))
		require.NoError(t, err)
		tr, err := verif.ReadTrace(f)
		f.Close()
		require.NoError(t, err, "point %d", i)
		assert.NotEmpty(t, tr.Events, "point %d", i)
	}
}

// TestVCDEndsAtRunEnd: a VCD ends at the run's end, sim_time_ns, and not at
// a partition's window end, so a partitioned run writes the serial run's
// VCD byte for byte (the comment names the version and config, the same).
func TestVCDEndsAtRunEnd(t *testing.T) {
	dir := t.TempDir()
	var vcds [2][]byte
	for i, parts := range []string{"1", "2"} {
		path := filepath.Join(dir, "p"+parts+".vcd")
		code, out, errs := run("-config", "bench/fattree64-uniform-30.yaml", "--set", "workload.warmup_ns=1000",
			"--set", "workload.measure_ns=3000", "--set", "sim.partitions="+parts, "--vcd", path, "--format", "json")
		require.Equal(t, 0, code, errs)
		var res map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		ns := res["points"].([]any)[0].(map[string]any)["metrics"].(map[string]any)["sim_time_ns"].(float64)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		stamps := regexp.MustCompile(`(?m)^#(\d+)$`).FindAllSubmatch(data, -1)
		require.NotEmpty(t, stamps)
		last, err := strconv.ParseInt(string(stamps[len(stamps)-1][1]), 10, 64)
		require.NoError(t, err)
		assert.Equal(t, int64(math.Round(ns*1000)), last, "partitions %s: the last timestamp is sim_time_ns in ps", parts)
		vcds[i] = data
	}
	assert.True(t, bytes.Equal(vcds[0], vcds[1]), "the partitioned run's VCD differs from the serial one's")
}

// TestTraceHeaderSeed: the trace header carries the run's seed as the results
// report it, over the whole range the config allows (0..2^64-1), and reads
// back as that seed.
func TestTraceHeaderSeed(t *testing.T) {
	for _, seed := range []uint64{1 << 63, math.MaxUint64} {
		s := strconv.FormatUint(seed, 10)
		p := filepath.Join(t.TempDir(), "t.trace")
		code, out, errs := run("-config", "xdr.yaml", "--set", "workload.iterations=2", "--seed", s, "--trace", p, "--format", "json")
		require.Equal(t, 0, code, errs)
		var res struct{ Seed uint64 }
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		assert.Equal(t, seed, res.Seed)
		f, err := os.Open(p)
		require.NoError(t, err)
		defer f.Close()
		tr, err := verif.ReadTrace(f)
		require.NoError(t, err)
		assert.Equal(t, seed, tr.Header.Seed)
		assert.NotEmpty(t, tr.Events)
	}
}

// TestTraceGzipByName: a --trace name ending in .gz is written
// gzip-compressed (it was plain text under a .gz name): the file starts
// with gzip's magic bytes 1f 8b, decompresses to the plain trace's bytes
// exactly, and the same run twice writes the same compressed bytes (the
// gzip header carries no time or name).
func TestTraceGzipByName(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-config", "xdr.yaml", "--set", "workload.iterations=2", "--quiet"}
	read := func(name string) []byte {
		p := filepath.Join(dir, name)
		code, _, errs := run(append(args, "--trace", p)...)
		require.Equal(t, 0, code, errs)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return b
	}
	plain, gz, gz2 := read("t.trace"), read("t.trace.gz"), read("u.trace.gz")
	require.Greater(t, len(gz), 2)
	assert.Equal(t, []byte{0x1f, 0x8b}, gz[:2], "gzip's magic")
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	got, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(plain, got), "the .gz trace decompresses to the plain trace")
	assert.True(t, bytes.Equal(gz, gz2), "the same run writes the same compressed bytes")
	assert.Less(t, len(gz), len(plain))
}

// TestTraceFormatDocsNameEmitters: every kind a traced run writes has its
// row in docs/trace-format.md, and the row names who emits it: a kind the
// simulator writes is not "(none yet)".
func TestTraceFormatDocsNameEmitters(t *testing.T) {
	doc, err := os.ReadFile("../../docs/trace-format.md")
	require.NoError(t, err)
	rows := map[string]string{} // kind -> its table row
	for _, l := range strings.Split(string(doc), "\n") {
		if k, ok := strings.CutPrefix(l, "| `"); ok {
			if i := strings.Index(k, "` |"); i > 0 {
				rows[k[:i]] = l
			}
		}
	}
	p := filepath.Join(t.TempDir(), "t.trace")
	code, _, errs := run("-config", "xdr.yaml", "--set", "workload.iterations=2", "--trace", p, "--quiet")
	require.Equal(t, 0, code, errs)
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	tr, err := verif.ReadTrace(f)
	require.NoError(t, err)
	seen := map[string]bool{}
	for i := range tr.Events {
		seen[tr.Events[i].Kind.String()] = true
	}
	require.True(t, seen["stage"], "a traced run announces the HCA's stage handshakes")
	for k := range seen {
		row, ok := rows[k]
		if assert.True(t, ok, "kind %s has no row in docs/trace-format.md", k) {
			assert.NotContains(t, row, "(none yet)", "kind %s is written by a traced run", k)
		}
	}
}

// TestProfiles: --cpuprofile and --memprofile write pprof files (gzipped
// protocol buffers: they start with the gzip magic 1f 8b) beside the
// results of the run.
func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	code, out, errs := run("-config", "edr.yaml", "--set", "workload.iterations=200", "--cpuprofile", cpu, "--memprofile", mem)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "bw_gbps")
	for _, p := range []string{cpu, mem} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Greater(t, len(b), 2, p)
		assert.Equal(t, []byte{0x1f, 0x8b}, b[:2], p)
	}
}

// TestTracePathSelects: --trace-path keeps the events of the components its
// glob matches; '[' and ']' are the name's own brackets, so a bracket left
// open before '*' still matches (the up-front check must not refuse it).
// A glob no component can match is refused before the run and writes no
// trace (it wrote a header-only trace, exit 0).
func TestTracePathSelects(t *testing.T) {
	dir := t.TempDir()
	paths := func(glob string) map[string]int {
		p := filepath.Join(dir, "t.trace")
		code, _, errs := run("-config", "edr.yaml", "--set", "workload.iterations=5", "--quiet", "--trace", p, "--trace-path", glob)
		require.Equal(t, 0, code, errs)
		seen := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(readFile(t, p)), "\n")[1:] {
			seen[strings.Fields(line)[1]]++
		}
		return seen
	}
	hca := paths("Fabric.Host[0].HCA")
	require.Len(t, hca, 1, "only the one block: %v", hca)
	assert.Positive(t, hca["Fabric.Host[0].HCA"])
	host0 := paths("Fabric.Host[0*")
	assert.Equal(t, hca["Fabric.Host[0].HCA"], host0["Fabric.Host[0].HCA"])
	assert.Positive(t, host0["Fabric.Host[0].HCA.Port[1]"])
	assert.Len(t, host0, 2, "host 0's HCA and port: %v", host0)

	p := filepath.Join(dir, "none.trace")
	code, _, errs := run("-config", "edr.yaml", "--quiet", "--trace", p, "--trace-path", "[")
	assert.Equal(t, 2, code, errs)
	assert.NoFileExists(t, p)

	// A glob that could match a name, but no component of this design
	// point's (ndr.yaml has leaves 0 to 3), is refused once the fabric is
	// built, before its first event, naming what there is; its trace,
	// waveform or capture is not left behind (it wrote a header-only
	// trace, exit 0). Leaf 1 of the same fabric is traced.
	short := []string{"-config", "ndr.yaml", "--set", "sweep={}", "--set", "workload.measure_ns=5000", "--set", "workload.iterations=5", "--quiet"}
	for _, out := range []string{"--trace", "--vcd", "--pcap"} {
		p := filepath.Join(dir, "leaf9"+out)
		code, stdout, errs := run(append(short, out, p, "--trace-path", "Fabric.Leaf[1]*", "--trace-path", "Fabric.Leaf[9].*")...)
		assert.Equal(t, 2, code, errs)
		assert.Empty(t, stdout)
		assert.Equal(t, 1, strings.Count(errs, "\n"), errs)
		assert.Contains(t, errs, `hcasim: --trace-path: "Fabric.Leaf[9].*" matches no component of this design point (`)
		assert.Contains(t, errs, "Fabric.Leaf[0] … Fabric.Leaf[3], Fabric.Leaf[0].Port[0] … Fabric.Leaf[3].Port[7]")
		assert.NoFileExists(t, p)
	}
	// A partitioned run's observers attach to stand-ins, which are named
	// by the blocks they stand in for: the same refusal (a partitioned run
	// wrote a header-only trace, exit 0).
	p = filepath.Join(dir, "leaf9-partitioned.trace")
	code, stdout, errs := run("-config", "bench/fattree64-uniform-30.yaml", "--set", "sim.partitions=2", "--set", "workload.measure_ns=2000",
		"--quiet", "--trace", p, "--trace-path", "Fabric.Leaf[9].*")
	assert.Equal(t, 2, code, errs)
	assert.Empty(t, stdout)
	assert.Equal(t, `hcasim: --trace-path: "Fabric.Leaf[9].*" matches no component of this design point (Fabric.Host[0] … Fabric.Host[63], `+
		`Fabric.Host[0].Port[1] … Fabric.Host[63].Port[1], Fabric.Leaf[0] … Fabric.Leaf[7], Fabric.Leaf[0].Port[0] … Fabric.Leaf[7].Port[15], `+
		`Fabric.Spine[0] … Fabric.Spine[7], Fabric.Spine[0].Port[0] … Fabric.Spine[7].Port[15])`+"\n", errs)
	assert.NoFileExists(t, p)
	p = filepath.Join(dir, "leaf1.trace")
	code, _, errs = run(append(short, "--trace", p, "--trace-path", "Fabric.Leaf[1]*")...)
	require.Equal(t, 0, code, errs)
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, p)), "\n")[1:] {
		require.True(t, strings.HasPrefix(strings.Fields(line)[1], "Fabric.Leaf[1]"), line)
	}
	assert.Greater(t, strings.Count(readFile(t, p), "\n"), 1, "leaf 1's events")
}

// TestOutputFilesUpFront: an output file that cannot be written is refused
// before the run (the waveform's file used to be made after it, the run's
// time lost), and two outputs naming one file are refused (the later
// writer replaced the trace with a waveform or a profile).
func TestOutputFilesUpFront(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "run.trace")
	tr0 := writeFile(t, "a.file", "")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--vcd", filepath.Join(dir, "no", "such", "x.vcd")}, "hcasim: --vcd: " + filepath.Join(dir, "no", "such", "x.vcd") +
			" cannot be created: its directory " + filepath.Join(dir, "no", "such") + " does not exist (give a file in a directory that does)\n"},
		// One line naming the flag, the path, what stands in the way and
		// what is allowed (it was Go's "open X: is a directory").
		{[]string{"--trace", dir}, "hcasim: --trace: " + dir + " is a directory (give a file name, e.g. " + filepath.Join(dir, "run.trace") + ")\n"},
		{[]string{"--pcap", filepath.Join(tr0, "x.pcapng")}, "hcasim: --pcap: " + filepath.Join(tr0, "x.pcapng") + " cannot be created: " + tr0 + " is a file, not a directory\n"},
		{[]string{"--cpuprofile", dir}, "hcasim: --cpuprofile: " + dir + " is a directory (give a file name, e.g. " + filepath.Join(dir, "cpu.pprof") + ")\n"},
		{[]string{"--trace", tr, "--vcd", tr}, "hcasim: --vcd: " + tr + " is also --trace's file; give each output its own file\n"},
		{[]string{"--trace", tr, "--cpuprofile", dir + "/./run.trace"}, "hcasim: --cpuprofile: " + dir + "/./run.trace" + " is also --trace's file; give each output its own file\n"},
		{[]string{"--vcd", filepath.Join(dir, "w.vcd"), "--memprofile", filepath.Join(dir, "w.vcd")}, "hcasim: --memprofile: " + filepath.Join(dir, "w.vcd") + " is also --vcd's file; give each output its own file\n"},
	}
	for _, c := range cases {
		code, out, errs := run(append([]string{"-config", "edr.yaml", "--set", "workload.iterations=200"}, c.args...)...)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Equal(t, c.want, errs, "%v", c.args)
		assert.NotContains(t, out, "bw_gbps", "%v: refused before the run", c.args)
	}
}

// TestRTLDesignPoints: hcasim rtl through the run's own config loader
// refuses, on one line with exit 2, a design point it does not build (it used
// to emit per-VL FIFOs for this one), and takes the smallest buffer a sweep
// of ndr.yaml chooses.
func TestRTLDesignPoints(t *testing.T) {
	code, _, errs := run("rtl", "-config", "examples/hol-blocking.yaml", "--set", "switch.queueing=voq",
		"--set", "switch.shared_buffer_bytes=65536", "--set", "switch.vl_buffer_bytes=4224", "-o", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Equal(t, "hcasim rtl: examples/hol-blocking.yaml: switch.shared_buffer_bytes: 65536 is not supported by the RTL, whose VL buffers are static with no shared pool (0)\n", errs)
	code, _, errs = run("rtl", "-config", "ndr.yaml", "--set", "sweep={}", "-o", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Equal(t, "hcasim rtl: ndr.yaml: switch.queueing: \"voq\" is not supported by the RTL, whose input unit keeps one FIFO per VL (fifo: --set switch.queueing=fifo exports that design; the simulator's default is voq)\n", errs)
	// hol-blocking.yaml runs iSLIP with 2 iterations: the RTL's one
	// iteration grants the same only with one VL.
	code, _, errs = run("rtl", "-config", "examples/hol-blocking.yaml", "--set", "switch.queueing=fifo", "--set", "switch.vls=2", "-o", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Equal(t, "hcasim rtl: examples/hol-blocking.yaml: switch.islip_iterations: 2 is not supported by the RTL with switch.vls 2, whose allocator runs one iSLIP iteration over a request per input VL (1; any with one VL)\n", errs)
	dir := t.TempDir()
	code, out, errs := run("rtl", "-config", "ndr.yaml", "--set", "switch.queueing=fifo", "--set", "switch.vl_buffer_bytes=4160", "-o", dir)
	assert.Equal(t, 0, code, errs)
	assertWroteTree(t, out, dir)
}

// assertWroteTree checks that the count hcasim rtl printed is the tree it
// wrote in dir (the tree's size is the rtl package's business: rtl's
// TestCLI derives it from the emitter's file lists).
func assertWroteTree(t *testing.T, out, dir string) {
	t.Helper()
	written, err := filepath.Glob(filepath.Join(dir, "*.v"))
	require.NoError(t, err)
	require.NotEmpty(t, written)
	assert.Contains(t, out, fmt.Sprintf("wrote %d Verilog files", len(written)))
}

// TestRTLRefusesASweep: ndr.yaml sweeps switch.vl_buffer_bytes over
// [4160, 8320, 16640, 33280] (its own value 16640) and workload.offered_load.
// The RTL is one design point, so exporting the sweep is refused, naming the
// axis that changes the design; pinned (README's command), the tree has the
// pinned depth, 16640 / 64 = 260 blocks, and the offered-load axis, which
// the RTL does not read, gets a note.
func TestRTLRefusesASweep(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := run("rtl", "-config", "ndr.yaml", "--set", "switch.queueing=fifo", "-o", dir)
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Equal(t, "hcasim rtl: ndr.yaml: sweep.switch.vl_buffer_bytes: the RTL is one design point, and this axis changes it (at 4160); "+
		"pin it with --set switch.vl_buffer_bytes=VALUE (or drop the sweep with --set sweep={})\n", errs)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written")

	code, out, errs = run("rtl", "-config", "ndr.yaml", "--set", "switch.queueing=fifo", "--set", "switch.vl_buffer_bytes=16640", "-o", dir)
	require.Equal(t, 0, code, errs)
	assertWroteTree(t, out, dir)
	assert.Equal(t, "hcasim rtl: note: ndr.yaml: sweep axis workload.offered_load does not change the RTL; one tree serves every point\n", errs)
	top, err := os.ReadFile(filepath.Join(dir, "switch_top.v"))
	require.NoError(t, err)
	assert.Regexp(t, `parameter integer BUF_DEPTH += 260,`, string(top))

	code, _, errs = run("rtl", "-config", "ndr.yaml", "--set", "switch.queueing=fifo", "--set", "sweep={}", "-o", t.TempDir())
	assert.Equal(t, 0, code, errs)
	assert.Empty(t, errs)
}

// TestSingleDashLongFlags: every subcommand takes its long flags with one
// dash as with two (`-config`, as simulator users type; longFlags). bench's
// -csv was missing from the list ("unknown shorthand flag: 'c' in -csv"),
// and diff never rewrote its arguments at all, so its -tolerance-ps,
// -fields, -ignore-kinds and -context, though listed, were refused.
func TestSingleDashLongFlags(t *testing.T) {
	// bench checks its names before it runs anything: with -csv parsed, the
	// bad benchmark name is what it reports.
	code, _, errs := run("bench", "-csv", filepath.Join(t.TempDir(), "b.csv"), "nosuch")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `"nosuch" is neither a benchmark`)

	p := filepath.Join(t.TempDir(), "t.trace")
	code, _, errs = run("-config", "xdr.yaml", "--set", "workload.iterations=2", "--trace", p, "--quiet")
	require.Equal(t, 0, code, errs)
	// A trace is equivalent to itself, under any of diff's flags.
	for _, args := range [][]string{
		{"-tolerance-ps", "3"}, {"-tolerance-ps=3"}, {"-context", "2"}, {"-ignore-kinds", "stage"}, {"-fields", "vl"},
	} {
		code, out, errs := run(append([]string{"diff", p, p}, args...)...)
		assert.Equal(t, verif.ExitEquivalent, code, "%v: %s%s", args, out, errs)
	}
}

// TestRunFlagsDocumented: every flag a run takes is in the usage text and
// in docs/config.md's table of flags, which had none of them.
func TestRunFlagsDocumented(t *testing.T) {
	doc := readFile(t, filepath.Join("..", "..", "docs", "config.md"))
	var rows []string
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "| `-") {
			rows = append(rows, l)
		}
	}
	require.NotEmpty(t, rows, "docs/config.md has a table of flags")
	documented := func(flag string) bool {
		for _, r := range rows {
			cell, _, _ := strings.Cut(strings.TrimPrefix(r, "| "), " |")
			if strings.Contains(cell+" ", "`"+flag+" ") || strings.Contains(cell, "`"+flag+"`") {
				return true
			}
		}
		return false
	}
	n := 0
	runFlagSet(&runFlags{}).VisitAll(func(fl *pflag.Flag) {
		n++
		assert.Contains(t, usage, "--"+fl.Name+" ", "usage lists --%s", fl.Name)
		assert.True(t, documented("--"+fl.Name), "docs/config.md documents --%s", fl.Name)
		if fl.Shorthand != "" {
			assert.True(t, documented("-"+fl.Shorthand), "docs/config.md documents -%s", fl.Shorthand)
		}
	})
	assert.Greater(t, n, 10)
}

// TestSingleRunParamsSayWhatRan: a single design point's params hold, with
// the headline keys, every key the command line set (at its decoded value)
// and --seed: results.json names only the config file, so a run with --set
// was otherwise indistinguishable from the file's own design point. A whole
// section given with --set is no param (its keys would be).
func TestSingleRunParamsSayWhatRan(t *testing.T) {
	// --seed 1e3 is the seed seed: 1e3 gives (the config's whole floats),
	// 1000, and results say so.
	code, out, errs := run("-config", "edr.yaml", "--quiet", "--format", "json", "--set", "workload.iterations=2", "--seed", "1e3")
	require.Equal(t, 0, code, errs)
	var seeded struct {
		Seed   uint64                            `json:"seed"`
		Points []struct{ Params map[string]any } `json:"points"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &seeded))
	assert.Equal(t, uint64(1000), seeded.Seed)
	require.Len(t, seeded.Points, 1)
	assert.Equal(t, 1000.0, seeded.Points[0].Params["seed"])

	// link={…} first: a later --set of the whole section would replace
	// link.generation again.
	code, out, errs = run("-config", "edr.yaml", "--quiet", "--format", "json", "--set", "link={width: 4x}",
		"--set", "workload.iterations=5", "--set", "hca.vl_buffer_bytes=8192", "--set", "link.generation=hdr", "--seed", "7")
	require.Equal(t, 0, code, errs)
	var res struct {
		Points []struct{ Params map[string]any } `json:"points"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Points, 1)
	p := res.Points[0].Params
	assert.Equal(t, 5.0, p["workload.iterations"])
	assert.Equal(t, 8192.0, p["hca.vl_buffer_bytes"])
	assert.Equal(t, "HDR", p["link.generation"], "the decoded spelling")
	assert.Equal(t, 7.0, p["seed"])
	assert.NotContains(t, p, "link", "a section is no param")
	assert.Equal(t, "4x", p["link.width"], "headline keys stay")

	// An optional key (a pointer in the config: workload.sges,
	// workload.background_sl) is a param too: --set workload.sges=15 ran
	// without saying so (the README's scatter/gather line).
	code, out, errs = run("-config", "edr.yaml", "--quiet", "--format", "json", "--set", "workload.iterations=5",
		"--set", "workload.sges=3")
	require.Equal(t, 0, code, errs)
	res.Points = nil
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Points, 1)
	assert.Equal(t, 3.0, res.Points[0].Params["workload.sges"])
}

// TestAdaptiveRoutingCLI: topology.adaptive_routing runs a synthetic
// workload with every checker on, and is refused on one line with exit 2
// for a value that is not a boolean, an HCA workload and the RTL export.
func TestAdaptiveRoutingCLI(t *testing.T) {
	code, _, errs := run("-config", "examples/adaptive-routing.yaml", "--set", "sweep={}", "--set", "topology.adaptive_routing=true",
		"--set", "workload.measure_ns=5000", "--check", "--quiet", "--format", "json")
	assert.Equal(t, 0, code, errs)
	for _, tc := range []struct{ args []string }{
		{[]string{"-config", "examples/adaptive-routing.yaml", "--set", "topology.adaptive_routing=maybe"}},
		{[]string{"-config", "ndr.yaml", "--set", "topology.adaptive_routing=true"}},
		{[]string{"rtl", "-config", "examples/adaptive-routing.yaml", "--set", "sweep={}", "--set", "switch.queueing=fifo",
			"--set", "topology.adaptive_routing=true", "-o", t.TempDir()}},
	} {
		code, _, errs := run(tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Equal(t, 1, strings.Count(errs, "\n"), errs)
		assert.Contains(t, errs, "topology.adaptive_routing: ")
	}
}

// TestAdaptiveRoutingSLsCLI: a perftest on static SL 0 beside background
// on SL 1 that adapts (topology.adaptive_routing_sls: [1], the shipped
// example) runs with every checker on; an adaptive_routing_sls with the
// test's SL, or not a service level, or without adaptive_routing, is
// refused on one line with exit 2.
func TestAdaptiveRoutingSLsCLI(t *testing.T) {
	ex := []string{"-config", "examples/adaptive-routing-perftest.yaml", "--set", "sweep={}"}
	code, out, errs := run(append(ex, "--set", "workload.background_sl=1", "--set", "workload.iterations=50",
		"--set", "workload.measure_ns=5000", "--set", "workload.offered_load=0.8", "--check", "--quiet", "--format", "json")...)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, `"packets_reordered"`)
	for _, set := range []string{"topology.adaptive_routing_sls=[0, 1]", "topology.adaptive_routing_sls=[16]",
		"topology.adaptive_routing=false"} {
		code, _, errs := run(append(ex, "--set", set)...)
		assert.Equal(t, 2, code, set)
		assert.Equal(t, 1, strings.Count(errs, "\n"), errs)
		assert.Contains(t, errs, "topology.adaptive_routing_sls: ")
	}
}

// TestHostNoteOnStderr: an NDR perftest that names no host profile runs
// (exit 0, results on stdout) and says once on stderr that the default
// host's PCIe bounds it (fabric.HostNote), a sweep once for all its points
// whatever their number; the points that choose the NDR host have no note;
// --quiet leaves it out, and a run that fails says only its error.
func TestHostNoteOnStderr(t *testing.T) {
	base := "topology: {kind: back-to-back}\nworkload: {kind: perftest, test: write_bw, size: 4096, iterations: 20}\n"
	single := writeFile(t, "one.yaml", base)
	code, stdout, stderr := run("-config", single, "--format", "csv")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 1, strings.Count(stderr, "hcasim: note: hca.profile is not set"), stderr)
	assert.NotContains(t, stdout, "note:")
	assert.Contains(t, stdout, "bw_gbps")

	sweep := writeFile(t, "sweep.yaml", base+"sweep:\n  workload.size: [1024, 4096, 8192]\n")
	code, _, stderr = run("-config", sweep, "--out", t.TempDir(), "--jobs", "1")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 1, strings.Count(stderr, "note:"), stderr)

	chosen := writeFile(t, "chosen.yaml", base+"sweep:\n  hca.profile: [cx7, cx8]\n")
	code, _, stderr = run("-config", chosen, "--out", t.TempDir(), "--jobs", "1")
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "note:")

	code, _, stderr = run("-config", single, "--quiet")
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "note:")

	// A run refused when the fabric is built says its one line, no note.
	refused := writeFile(t, "refused.yaml", "topology: {kind: single-switch, hosts: 4}\nswitch: {queueing: fifo}\n"+
		"workload: {kind: perftest, test: send_bw, connection: UD, mcg: true, mcg_receivers: 10, size: 1024, iterations: 10}\n")
	code, _, stderr = run("-config", refused)
	require.Equal(t, 2, code, stderr)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
	assert.Contains(t, stderr, "workload.mcg_receivers: 10 is more than")
}
