// Package verif is hcasim's verification layer: it observes a simulation
// through Akita hooks and never changes it.
//
//   - Recorder writes the versioned line trace (docs/trace-format.md) of the
//     components.TraceEvent values blocks announce at components.HookPosTrace.
//   - ReadTrace parses a trace back, with errors that name the line.
//   - Diff and DiffMain ("hcasim diff GOLDEN NEW") compare two traces stream by
//     stream and report the first divergence.
//   - Checkers are scoreboards (lossless, buffers and credits, ordering, data
//     integrity, protection, one packet at a time on each wire) that stop a
//     run with a report when an invariant fails.
//   - VCDWriter dumps chosen signals as a Value Change Dump in picoseconds for
//     GTKWave or Surfer.
//
// Data flows one way: components announce, verif listens. Nothing in verif is
// on the model's path: with no hook attached a block only pays NumHooks() > 0.
package verif
