package ib

import "math"

// PS is simulated time or a duration in integer picoseconds. The model's own
// arithmetic stays in PS; Akita's float seconds are converted once, at the edge.
type PS int64

// Common durations.
const (
	Picosecond  PS = 1
	Nanosecond  PS = 1000
	Microsecond PS = 1000 * Nanosecond
	Millisecond PS = 1000 * Microsecond
	Second      PS = 1000 * Millisecond
)

// Seconds converts t to Akita's float seconds.
func (t PS) Seconds() float64 { return float64(t) * 1e-12 }

// Nanoseconds returns t in (fractional) nanoseconds, for reports.
func (t PS) Nanoseconds() float64 { return float64(t) / 1000 }

// FromSeconds converts Akita float seconds to picoseconds, rounding to the
// nearest picosecond (never truncating: 1e-9 s is 999.9999 ps in float).
func FromSeconds(s float64) PS { return PS(math.Round(s * 1e12)) }

// FromNanoseconds converts a config's nanoseconds to picoseconds, rounded:
// 1.001 ns is 1000.9999… ps in float64, and truncating it gave 1000.
func FromNanoseconds(ns float64) PS { return PS(math.Round(ns * 1000)) }

// CyclePS returns the period of a clock of freqMHz megahertz in picoseconds,
// rounded to the nearest picosecond.
func CyclePS(freqMHz float64) PS { return PS(math.Round(1e6 / freqMHz)) }
