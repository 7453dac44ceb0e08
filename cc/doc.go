// Package cc is InfiniBand congestion control (IBA Vol. 1 Annex A10) as
// the synthetic endpoints and the switch ASICs use it: the `cc:` config
// section, and the channel adapter's reaction point, which keeps one
// Congestion Control Table index per flow, raises it on every BECN, lowers
// it on every CCTI_Timer expiry, and spaces the flow's packets by the
// table's inter-packet delay. It is pure logic (no simulation kernel): the
// switch marks FECN (switchasic), the endpoints turn FECN into a CNP and
// the CNP's BECN into Throttle.BECN (workload). docs/congestion.md
// describes the mechanism, its parameters and its sources.
package cc
