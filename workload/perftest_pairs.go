package workload

import (
	"fmt"
	"math/rand/v2"
)

// PatternPair is workload.pattern's default: one perftest pair, the first
// host to the last. The other perftest patterns share the synthetic
// patterns' names: incast (clients 0 … C−1 into the last host), shift
// (among hosts 0 … C−1, i → (i + workload.shift) mod C) and permutation
// (among hosts 0 … C−1, i → π(i), a derangement drawn from the seed).
const PatternPair = "pair"

// PerftestPatterns lists the workload.pattern values.
var PerftestPatterns = []string{PatternPair, PatternIncast, PatternShift, PatternPermutation}

// MaxPerftestClients bounds workload.clients: every pair holds its own
// QPs, CQs and buffers in the model's host memory, set up ahead of the run
// (a model limit on memory, not an IB one).
const MaxPerftestClients = 4096

// PerftestPair names a perftest pair's client and server by host index.
type PerftestPair struct {
	Client int // the host that posts the measured work requests (perftest's client)
	Server int // the host it connects to (perftest's server)
}

// permutationStream is the PCG stream the permutation pattern draws its
// derangement from (the synthetic patterns use patternStream).
const permutationStream = 0x9e7f_0001

// PerftestPairs returns the pairs of a perftest pattern on a fabric of
// hosts hosts: pattern "" or pair is the one pair host 0 → host hosts−1;
// incast has clients 0 … C−1 into host hosts−1 (C = clients, 0 for
// hosts−1); shift and permutation pair hosts 0 … C−1 among themselves
// (C = clients, 0 for hosts): host i is the client of the pair to
// (i + shift) mod C, or to π(i) for a derangement π drawn from seed, and
// the server of another. Pairs are in client order. An error names the key
// at fault, its value and what the fabric allows.
func PerftestPairs(pattern string, clients, shift, hosts int, seed uint64) ([]PerftestPair, error) {
	switch pattern {
	case "", PatternPair:
		if clients > 1 {
			return nil, fmt.Errorf("workload.clients: %d, but workload.pattern pair runs one client (use incast, shift or permutation for more)", clients)
		}
		return []PerftestPair{{0, hosts - 1}}, nil
	case PatternIncast:
		if hosts < 2 {
			return nil, fmt.Errorf("workload.pattern: incast needs at least 2 hosts, the fabric has %d", hosts)
		}
		c := clients
		if c == 0 {
			c = hosts - 1
		}
		if c > hosts-1 {
			return nil, fmt.Errorf("workload.clients: %d is more than the fabric's %d hosts besides the incast server (1 to %d, or 0 for all)", clients, hosts-1, hosts-1)
		}
		pairs := make([]PerftestPair, c)
		for i := range pairs {
			pairs[i] = PerftestPair{i, hosts - 1}
		}
		return pairs, nil
	case PatternShift, PatternPermutation:
		c := clients
		if c == 0 {
			c = hosts
		}
		if c < 2 || c > hosts {
			return nil, fmt.Errorf("workload.clients: %d is out of range for workload.pattern %s on %d hosts (2 to %d, or 0 for all)", clients, pattern, hosts, hosts)
		}
		pairs := make([]PerftestPair, c)
		if pattern == PatternShift {
			if ((shift%c)+c)%c == 0 {
				return nil, fmt.Errorf("workload.shift: %d is a multiple of the %d perftest hosts, so every client would be its own server", shift, c)
			}
			for i := range pairs {
				pairs[i] = PerftestPair{i, ((i+shift)%c + c) % c}
			}
			return pairs, nil
		}
		perm := NewPermutation(c, rand.New(rand.NewPCG(seed, permutationStream))).Map()
		for i := range pairs {
			pairs[i] = PerftestPair{i, perm[i]}
		}
		return pairs, nil
	}
	return nil, fmt.Errorf("workload.pattern: %q is not a perftest pattern (pair, incast, shift, permutation)", pattern)
}
