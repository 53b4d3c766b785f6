//go:build race

package service

// Under the race detector everything runs several times slower, so the
// tests replay a shorter stretch of the fixture (see fixtureFrom).
const raceEnabled = true
