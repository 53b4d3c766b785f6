// Package partial is the record format between the two stages of a
// scaled-out outagewatch: stage one pre-aggregates each input partition per
// bucket and entity and sends what it has when the partition's watermark
// passes a bucket; stage two merges the partials of every source into the
// bucket's value. A source flushes a bucket once, and a re-flush after a
// crash encodes to the same bytes, so stage two can drop duplicates by
// (source, bucket, key).
//
// Records are CBOR (RFC 8949) in its core deterministic encoding, so equal
// content is equal bytes, and decoding is bounded against hostile input.
package partial

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/fxamacker/cbor/v2"
)

// Version is the format version every record carries; a reader refuses
// others rather than misread them.
const Version = 1

// SourceBGP is the source name of the routing series: every stage-one
// instance keeps the whole routing table and sends the same partials under
// this name, so stage two keeps the first per bucket.
const SourceBGP = "bgp"

// Entry is the state of one series' bucket as one source saw it: what an
// open bucket of the aggregator holds.
type Entry struct {
	Signal string `cbor:"1,keyasint"`
	Entity string `cbor:"2,keyasint"`
	// Start is the series' bucket start: the batch's, or for a series of a
	// coarser cadence the start of its wider bucket that ends with the
	// batch's.
	Start int64   `cbor:"3,keyasint"`
	Sum   float64 `cbor:"4,keyasint"`
	Count int64   `cbor:"5,keyasint"`
	LastT int64   `cbor:"6,keyasint,omitempty"`
	// Acc is the marshalled accumulator of a custom signal (obs.Mergeable).
	Acc []byte `cbor:"7,keyasint,omitempty"`
}

// Batch is one partial record: the entries of one route key in one bucket
// from one source.
type Batch struct {
	Source  string  `cbor:"1,keyasint"`
	Start   int64   `cbor:"2,keyasint"`
	End     int64   `cbor:"3,keyasint"`
	Key     string  `cbor:"4,keyasint"`
	Entries []Entry `cbor:"5,keyasint"`
}

// FeedCount is how many observations a feed delivered in a bucket: stage
// two tells "no data" from zero by it.
type FeedCount struct {
	Start int64  `cbor:"1,keyasint"`
	Feed  string `cbor:"2,keyasint"`
	N     int64  `cbor:"3,keyasint"`
}

// Marker says a source has flushed every bucket ending at or before
// Through; it goes to every partition of the internal topic after the
// batches, so each stage-two task knows when a bucket has all its inputs,
// and carries the feed counts of the buckets flushed since the last one.
type Marker struct {
	Source  string      `cbor:"1,keyasint"`
	Through int64       `cbor:"2,keyasint"`
	Feeds   []FeedCount `cbor:"3,keyasint,omitempty"`
}

// Record is what the internal topic carries: a batch or a marker.
type Record struct {
	Version int     `cbor:"1,keyasint"`
	Batch   *Batch  `cbor:"2,keyasint,omitempty"`
	Marker  *Marker `cbor:"3,keyasint,omitempty"`
}

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	if encMode, err = cbor.CoreDetEncOptions().EncMode(); err != nil {
		panic(err)
	}
	if decMode, err = (cbor.DecOptions{
		MaxNestedLevels:   8,
		MaxArrayElements:  1 << 20,
		MaxMapPairs:       64,
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
	}).DecMode(); err != nil {
		panic(err)
	}
}

// Encode returns the bytes of r, after checking it as Decode would.
func Encode(r *Record) ([]byte, error) {
	if r.Version == 0 {
		r.Version = Version
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	b, err := encMode.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("partial: encode: %w", err)
	}
	return b, nil
}

// ErrMalformed wraps every reason a record is refused.
var ErrMalformed = errors.New("malformed partial record")

// Decode reads one record, refusing anything Encode would not write.
func Decode(b []byte) (*Record, error) {
	var r Record
	if err := decMode.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Validate checks the invariants stage two relies on.
func (r *Record) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(f, a...)) }
	if r.Version != Version {
		return bad("version %d, want %d", r.Version, Version)
	}
	if (r.Batch == nil) == (r.Marker == nil) {
		return bad("want exactly one of batch and marker")
	}
	if m := r.Marker; m != nil {
		if m.Source == "" {
			return bad("marker without a source")
		}
		for _, f := range m.Feeds {
			if f.Feed == "" || f.N < 0 || f.Start >= m.Through {
				return bad("marker of %s: feed count %+v", m.Source, f)
			}
		}
		return nil
	}
	b := r.Batch
	switch {
	case b.Source == "":
		return bad("batch without a source")
	case b.End <= b.Start:
		return bad("batch of %s: bucket [%d, %d)", b.Source, b.Start, b.End)
	}
	for i := range b.Entries {
		e := &b.Entries[i]
		switch {
		case e.Signal == "" || e.Entity == "":
			return bad("batch of %s: entry %d without signal or entity", b.Source, i)
		case e.Start >= b.End:
			return bad("batch of %s: %s{%s} starts at %d, after the bucket", b.Source, e.Signal, e.Entity, e.Start)
		case e.Count <= 0:
			return bad("batch of %s: %s{%s} with %d observations", b.Source, e.Signal, e.Entity, e.Count)
		case math.IsNaN(e.Sum):
			return bad("batch of %s: %s{%s} is NaN", b.Source, e.Signal, e.Entity)
		}
	}
	return nil
}

// SortEntries puts entries in the order stage one writes them (signal,
// entity, start), so that a re-flush gives the same bytes.
func SortEntries(es []Entry) { slices.SortFunc(es, CompareEntries) }

// CompareEntries is the order of SortEntries: signal, entity, start.
func CompareEntries(a, b Entry) int {
	switch {
	case a.Signal != b.Signal:
		return compare(a.Signal, b.Signal)
	case a.Entity != b.Entity:
		return compare(a.Entity, b.Entity)
	}
	return compare(a.Start, b.Start)
}

func compare[T int64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
