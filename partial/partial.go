// Package partial is the record format between the two stages of a
// scaled-out outagewatch: stage one pre-aggregates each input partition per
// bucket and entity and sends what it has when the partition's watermark
// passes a bucket; stage two merges the partials of every source into the
// bucket's value. A source flushes a bucket once, and a re-flush after a
// crash encodes to the same bytes, so stage two can drop duplicates by
// (source, bucket, key).
//
// # Format
//
// Records are a compact binary format (version 2) with exactly one
// encoding for each record: equal content is equal bytes, and Decode
// refuses every other form (a non-minimal varint, an unknown flag, a
// signal repeated where "same as before" would do, trailing bytes), so
// that what it accepts encodes back to the very same bytes. Integers are
// encoding/binary varints: uvarint for what cannot be negative, zigzag
// varint otherwise; a time given as a difference is taken in wrapping
// int64 arithmetic, which is one to one, so any value round-trips.
//
//	record = 0x02 kind body              0x02 is the format version; a CBOR
//	                                     map, the old format, starts 0xa0–0xbf
//	kind   = 0x01 batch | 0x02 marker
//	batch  = str(Source) varint(Start) uvarint(End-Start) str(Key)
//	         uvarint(len(Entries)) entry...
//	entry  = flags [str(Signal)] str(Entity) varint(Start-batch.Start)
//	         Sum: 8 bytes IEEE 754, little endian   uvarint(Count)
//	         [varint(LastT-batch.End)] [str(Acc)]
//	flags  = 0x01 the signal follows: set on the first entry and wherever
//	              the signal differs from the previous entry's, clear
//	              elsewhere (the entry has the previous entry's signal)
//	       | 0x02 LastT follows: set exactly when LastT != 0
//	       | 0x04 Acc follows: set exactly when len(Acc) > 0
//	marker = str(Source) varint(Through) uvarint(len(Feeds)) feed...
//	feed   = str(Feed) uvarint(Through-Start) uvarint(N)
//	str    = uvarint(length) bytes
//
// Stage one writes entries sorted by signal then entity (SortEntries), so a
// signal's name is written once per run of its entries instead of once an
// entry, and Decode shares one string among the run; a per-batch table of
// signals would save no more on sorted entries and cost an index byte on
// each. An entry's Start is almost always the batch's, one byte as a
// difference, and LastT, when set, lies just before the batch's End. A
// typical entry is about 22 bytes against about 50 in CBOR.
//
// Decode stays bounded against hostile input: a count is refused unless
// the bytes left could hold that many of the smallest entry (13 bytes) or
// feed (4 bytes), at most 1<<20 of either, so the one allocation of the
// entries is proportional to the record's length, and each string or Acc
// is at most one allocation of no more than the bytes it came from.
//
// Records of version 1, CBOR (RFC 8949) in its core deterministic
// encoding, are still read (see decodeLegacy) so that a rolling upgrade
// loses none left on the topic; Encode writes only version 2.
package partial

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/fxamacker/cbor/v2"
)

// Version is the format version of the records Encode writes and of the
// records Decode returns (a version 1 record is returned as version 2: the
// content is the same, only the bytes differ); a reader refuses others
// rather than misread them.
const Version = 2

// legacyVersion is the version of the CBOR records Decode still reads.
const legacyVersion = 1

// maxItems bounds the entries of a batch and the feed counts of a marker.
const maxItems = 1 << 20

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

// Record is what the internal topic carries: a batch or a marker. The
// struct tags are the CBOR keys of the version 1 format, which only the
// legacy reader uses.
type Record struct {
	Version int     `cbor:"1,keyasint"`
	Batch   *Batch  `cbor:"2,keyasint,omitempty"`
	Marker  *Marker `cbor:"3,keyasint,omitempty"`
}

// Wire bytes of version 2.
const (
	kindBatch  = 0x01
	kindMarker = 0x02

	flagSignal = 0x01
	flagLastT  = 0x02
	flagAcc    = 0x04
	flagsKnown = flagSignal | flagLastT | flagAcc

	// minEntry and minFeed are the fewest bytes an entry and a feed count
	// take: flags, a one-byte entity, Start, Sum, Count; a one-byte feed,
	// Start, N.
	minEntry = 1 + 2 + 1 + 8 + 1
	minFeed  = 2 + 1 + 1
)

// Encode returns the bytes of r, after checking it as Decode would.
func Encode(r *Record) ([]byte, error) {
	if r.Version == 0 {
		r.Version = Version
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if m := r.Marker; m != nil {
		n := 2 + strLen(m.Source) + varintLen(m.Through) + uvarintLen(uint64(len(m.Feeds)))
		for i := range m.Feeds {
			f := &m.Feeds[i]
			n += strLen(f.Feed) + uvarintLen(uint64(m.Through)-uint64(f.Start)) + uvarintLen(uint64(f.N))
		}
		b := make([]byte, 0, n)
		b = append(b, Version, kindMarker)
		b = appendStr(b, m.Source)
		b = binary.AppendVarint(b, m.Through)
		b = binary.AppendUvarint(b, uint64(len(m.Feeds)))
		for i := range m.Feeds {
			f := &m.Feeds[i]
			b = appendStr(b, f.Feed)
			b = binary.AppendUvarint(b, uint64(m.Through)-uint64(f.Start))
			b = binary.AppendUvarint(b, uint64(f.N))
		}
		return b, nil
	}
	bt := r.Batch
	n := 2 + strLen(bt.Source) + varintLen(bt.Start) + uvarintLen(uint64(bt.End)-uint64(bt.Start)) +
		strLen(bt.Key) + uvarintLen(uint64(len(bt.Entries)))
	for i := range bt.Entries {
		e := &bt.Entries[i]
		flags := entryFlags(bt.Entries, i)
		n += 1 + strLen(e.Entity) + varintLen(int64(uint64(e.Start)-uint64(bt.Start))) + 8 + uvarintLen(uint64(e.Count))
		if flags&flagSignal != 0 {
			n += strLen(e.Signal)
		}
		if flags&flagLastT != 0 {
			n += varintLen(int64(uint64(e.LastT) - uint64(bt.End)))
		}
		if flags&flagAcc != 0 {
			n += uvarintLen(uint64(len(e.Acc))) + len(e.Acc)
		}
	}
	b := make([]byte, 0, n)
	b = append(b, Version, kindBatch)
	b = appendStr(b, bt.Source)
	b = binary.AppendVarint(b, bt.Start)
	b = binary.AppendUvarint(b, uint64(bt.End)-uint64(bt.Start))
	b = appendStr(b, bt.Key)
	b = binary.AppendUvarint(b, uint64(len(bt.Entries)))
	for i := range bt.Entries {
		e := &bt.Entries[i]
		flags := entryFlags(bt.Entries, i)
		b = append(b, flags)
		if flags&flagSignal != 0 {
			b = appendStr(b, e.Signal)
		}
		b = appendStr(b, e.Entity)
		b = binary.AppendVarint(b, int64(uint64(e.Start)-uint64(bt.Start)))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.Sum))
		b = binary.AppendUvarint(b, uint64(e.Count))
		if flags&flagLastT != 0 {
			b = binary.AppendVarint(b, int64(uint64(e.LastT)-uint64(bt.End)))
		}
		if flags&flagAcc != 0 {
			b = binary.AppendUvarint(b, uint64(len(e.Acc)))
			b = append(b, e.Acc...)
		}
	}
	return b, nil
}

// entryFlags are the flags entry i of es is written with: the size pass
// and the write pass of Encode read them alike.
func entryFlags(es []Entry, i int) byte {
	var flags byte
	if i == 0 || es[i].Signal != es[i-1].Signal {
		flags |= flagSignal
	}
	if es[i].LastT != 0 {
		flags |= flagLastT
	}
	if len(es[i].Acc) > 0 {
		flags |= flagAcc
	}
	return flags
}

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

func varintLen(x int64) int { return uvarintLen(uint64(x<<1) ^ uint64(x>>63)) }

func strLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

// ErrMalformed wraps every reason a record is refused.
var ErrMalformed = errors.New("malformed partial record")

// Decode reads one record, refusing anything Encode would not write; it
// also reads the version 1 records of the CBOR format (decodeLegacy).
// The record shares no memory with b.
func Decode(b []byte) (*Record, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrMalformed)
	}
	var r Record
	switch {
	case b[0] == Version:
		d := reader{b: b, off: 1}
		switch kind := d.byte("kind"); {
		case d.err != nil:
		case kind == kindBatch:
			r.Batch = d.batch()
		case kind == kindMarker:
			r.Marker = d.marker()
		default:
			d.fail("unknown kind %#x", kind)
		}
		if d.err == nil && d.off != len(b) {
			d.fail("%d trailing bytes", len(b)-d.off)
		}
		if d.err != nil {
			return nil, d.err
		}
		r.Version = Version
	case b[0]>>5 == 5: // a CBOR map
		if err := decodeLegacy(b, &r); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: unknown format %#x", ErrMalformed, b[0])
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// reader decodes version 2; its first refusal sticks in err, after which
// every read returns zero without moving.
type reader struct {
	b   []byte
	off int
	err error
}

func (d *reader) fail(f string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at offset %d", ErrMalformed, fmt.Sprintf(f, a...), d.off)
	}
}

func (d *reader) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail("truncated %s", what)
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

// uvarint reads a minimal uvarint: the last byte of one of several bytes
// is not zero, and it fits in 64 bits.
func (d *reader) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	b := d.b[d.off:]
	if len(b) > 0 && b[0] < 0x80 {
		d.off++
		return uint64(b[0])
	}
	var x uint64
	for i, c := range b {
		switch {
		case i == binary.MaxVarintLen64-1 && c > 1:
			d.fail("%s overflows 64 bits", what)
			return 0
		case c < 0x80:
			if c == 0 {
				d.fail("non-minimal varint in %s", what)
				return 0
			}
			d.off += i + 1
			return x | uint64(c)<<(7*i)
		}
		x |= uint64(c&0x7f) << (7 * i)
	}
	d.fail("truncated %s", what)
	return 0
}

func (d *reader) varint(what string) int64 {
	u := d.uvarint(what)
	return int64(u>>1) ^ -int64(u&1)
}

// int reads a uvarint that is a non-negative int64.
func (d *reader) int(what string) int64 {
	at := d.off
	u := d.uvarint(what)
	if u > math.MaxInt64 {
		d.off = at
		d.fail("%s %d out of range", what, u)
		return 0
	}
	return int64(u)
}

// bytes reads a length and returns that many bytes, not copied.
func (d *reader) bytes(what string) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail("truncated %s: %d bytes, %d left", what, n, len(d.b)-d.off)
		return nil
	}
	d.off += int(n)
	return d.b[d.off-int(n) : d.off]
}

func (d *reader) str(what string) string { return string(d.bytes(what)) }

// count reads the number of items that follow, each at least min bytes.
func (d *reader) count(what string, min int) int {
	n := d.uvarint(what)
	if d.err != nil {
		return 0
	}
	if n > maxItems || n > uint64((len(d.b)-d.off)/min) {
		d.fail("%d %s in %d bytes", n, what, len(d.b)-d.off)
		return 0
	}
	return int(n)
}

func (d *reader) marker() *Marker {
	m := &Marker{Source: d.str("source"), Through: d.varint("through")}
	n := d.count("feed counts", minFeed)
	if d.err != nil || n == 0 {
		return m
	}
	m.Feeds = make([]FeedCount, n)
	for i := range m.Feeds {
		f := &m.Feeds[i]
		f.Feed = d.str("feed")
		f.Start = int64(uint64(m.Through) - d.uvarint("feed start"))
		f.N = d.int("feed count")
		if d.err != nil {
			return nil
		}
	}
	return m
}

func (d *reader) batch() *Batch {
	bt := &Batch{Source: d.str("source"), Start: d.varint("start")}
	bt.End = int64(uint64(bt.Start) + d.uvarint("span"))
	bt.Key = d.str("key")
	n := d.count("entries", minEntry)
	if d.err != nil || n == 0 {
		return bt
	}
	bt.Entries = make([]Entry, n)
	var signal string
	for i := range bt.Entries {
		e := &bt.Entries[i]
		at := d.off
		flags := d.byte("entry flags")
		switch {
		case flags&^flagsKnown != 0:
			d.fail("entry %d: unknown flags %#x", i, flags)
		case flags&flagSignal != 0:
			s := d.bytes("signal")
			if i > 0 && string(s) == signal && d.err == nil {
				d.off = at
				d.fail("entry %d repeats the signal of the one before", i)
			}
			signal = string(s)
		case i == 0:
			d.fail("first entry without a signal")
		}
		e.Signal = signal
		e.Entity = d.str("entity")
		e.Start = int64(uint64(bt.Start) + uint64(d.varint("entry start")))
		if d.err == nil && len(d.b)-d.off < 8 {
			d.fail("truncated sum")
		}
		if d.err != nil {
			return nil
		}
		e.Sum = math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off:]))
		d.off += 8
		e.Count = d.int("count")
		if flags&flagLastT != 0 {
			if e.LastT = int64(uint64(bt.End) + uint64(d.varint("last time"))); e.LastT == 0 && d.err == nil {
				d.off = at
				d.fail("entry %d: last time flagged but zero", i)
			}
		}
		if flags&flagAcc != 0 {
			if acc := d.bytes("accumulator"); len(acc) > 0 {
				e.Acc = append([]byte(nil), acc...)
			} else if d.err == nil {
				d.off = at
				d.fail("entry %d: accumulator flagged but empty", i)
			}
		}
		if d.err != nil {
			return nil
		}
	}
	return bt
}

// The legacy reader: version 1, CBOR.
var legacyDecMode cbor.DecMode

func init() {
	var err error
	if legacyDecMode, err = (cbor.DecOptions{
		MaxNestedLevels:   8,
		MaxArrayElements:  maxItems,
		MaxMapPairs:       64,
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
	}).DecMode(); err != nil {
		panic(err)
	}
}

// decodeLegacy reads a record of version 1, CBOR (RFC 8949) by reflection
// on the struct tags of Record, into r as version 2. It is kept only as a
// reader, so that records of the old format still on the internal topic
// during a rolling upgrade are not lost; nothing writes version 1 any
// more, and it can go once no topic holds such records (their retention
// after the last stage one of the old format stopped).
func decodeLegacy(b []byte, r *Record) error {
	if err := legacyDecMode.Unmarshal(b, r); err != nil {
		return fmt.Errorf("%w: legacy CBOR: %v", ErrMalformed, err)
	}
	if r.Version != legacyVersion {
		return fmt.Errorf("%w: CBOR record of version %d, want %d", ErrMalformed, r.Version, legacyVersion)
	}
	r.Version = Version
	return nil
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
		if len(m.Feeds) > maxItems {
			return bad("marker of %s: %d feed counts, at most %d", m.Source, len(m.Feeds), maxItems)
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
	case len(b.Entries) > maxItems:
		return bad("batch of %s: %d entries, at most %d", b.Source, len(b.Entries), maxItems)
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
