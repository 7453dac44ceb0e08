// Package components holds the hardware primitives that the HCA and the switch
// share (FIFOs, arbiters, allocators, statistics) and the thin event kernel
// that runs them on Akita.
//
// The kernel (Sim, Event) keeps the model's time in integer picoseconds and
// converts to Akita's float seconds only when an event is scheduled. Events
// are pooled: a model that sends packets whole computes each packet's head,
// tail and credit-return times exactly and schedules a few events per packet
// per hop, never one per 64-byte block per cycle.
package components
