//go:build race

package quantile

// Instrumented for the race detector, the compiler no longer extends a
// slice in place for append(s, make(...)...), which is how a dense store
// reuses its memory: TestReuseDoesNotAllocate does not hold there.
const raceEnabled = true
