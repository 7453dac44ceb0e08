package hca

// PicksMade returns how many scheduler picks that found a QP this test
// binary has checked against the scan (pick_test.go).
func PicksMade() int64 { return picksMade.Load() }
