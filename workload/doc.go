// Package workload drives the model: the back-to-back packet stream, the
// synthetic traffic patterns (uniform, permutation, shift, bit-complement,
// hotspot, incast) with their injection processes, perftest-style RDMA tests
// and collectives. Generators are pure and seeded (math/rand/v2 PCG), so the
// same seed gives the same traffic on every machine.
package workload
