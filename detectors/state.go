package detectors

import (
	"bytes"
	"encoding/gob"
	"fmt"
)

// evidenceLog is the last few buckets a series' state saw, which findings
// carry as Evidence. State structs keep it in an exported field, so it is
// checkpointed with them.
type evidenceLog []Evidence

// evidenceKept is how many buckets an evidence log holds: an hour of
// 5-minute buckets, enough to show the run up to a finding.
const evidenceKept = 12

// add appends e, dropping the oldest entry once the log is full.
func (l *evidenceLog) add(e Evidence) {
	if cap(*l) < evidenceKept {
		// The log's whole room at once: growing by appends would take
		// sixteen entries' room for twelve, in every series.
		*l = append(make(evidenceLog, 0, evidenceKept), *l...)
	}
	if len(*l) == evidenceKept {
		copy(*l, (*l)[1:])
		*l = (*l)[:evidenceKept-1]
	}
	*l = append(*l, e)
}

// evidenceRing is an evidenceLog held inside its state: no allocation of
// its own, and adding a bucket to a full log overwrites the oldest
// instead of moving the other eleven. Checkpoints hold it as the
// evidenceLog it reads as (list, set).
type evidenceRing struct {
	e       [evidenceKept]Evidence
	head, n uint8 // e[head] is the oldest of n
}

// add appends e, dropping the oldest entry once the log is full.
func (l *evidenceRing) add(e Evidence) {
	if l.n < evidenceKept {
		l.e[(int(l.head)+int(l.n))%evidenceKept] = e
		l.n++
		return
	}
	l.e[l.head] = e
	l.head = uint8((int(l.head) + 1) % evidenceKept)
}

// list returns the log oldest first in a slice of its own, nil when empty
// (as an evidenceLog never added to is).
func (l *evidenceRing) list() evidenceLog {
	if l.n == 0 {
		return nil
	}
	out := make(evidenceLog, l.n)
	for i := range out {
		out[i] = l.e[(int(l.head)+i)%evidenceKept]
	}
	return out
}

// set replaces the log with the last evidenceKept entries of es.
func (l *evidenceRing) set(es []Evidence) {
	*l = evidenceRing{}
	for _, e := range es[max(0, len(es)-evidenceKept):] {
		l.add(e)
	}
}

// saveState gob-encodes a detector's checkpointed state.
func saveState(v any) ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(v)
	return b.Bytes(), err
}

// loadState decodes what saveState wrote into v (a pointer); what names
// the detector and rule, so that a bad checkpoint says whose it was.
func loadState(b []byte, v any, what string) error {
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		return fmt.Errorf("%s: restore: %w", what, err)
	}
	return nil
}

// stateOf returns the state kept under key, creating it on first use.
func stateOf[S any](states map[string]*S, key string) *S {
	st := states[key]
	if st == nil {
		st = new(S)
		states[key] = st
	}
	return st
}

// feedCheckpoint is what the detectors with a feed-fault guard checkpoint:
// their per-series states and the guard's own.
type feedCheckpoint[S any] struct {
	States map[string]*S
	Feed   feedFaultState
}
