package partial

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

func sample() *Record {
	return &Record{Batch: &Batch{Source: "flows/2", Start: 300e9, End: 600e9, Key: "country:UG", Entries: []Entry{
		{Signal: "traffic_bytes", Entity: "asn:20294", Start: 300e9, Sum: 1.5e9, Count: 120},
		{Signal: "bgp_announced_v4", Entity: "country:UG", Start: 300e9, Sum: 412, Count: 1, LastT: 599e9},
		{Signal: "rtt_p50", Entity: "asn:20294", Start: 0, Sum: 0, Count: 7, Acc: []byte{1, 2, 3}},
	}}}
}

// Equal records are equal bytes: stage two drops a re-flush after a crash
// by its content, and the round trip keeps every field.
func TestRoundTripDeterministic(t *testing.T) {
	a, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two encodings of one record differ")
	}
	r, err := Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, c) {
		t.Fatal("decode and encode changed the record")
	}
	if e := r.Batch.Entries[1]; e.LastT != 599e9 || e.Sum != 412 || r.Batch.Key != "country:UG" {
		t.Fatalf("round trip lost fields: %+v", r.Batch)
	}
	m := &Record{Marker: &Marker{Source: "bgp", Through: 600e9, Feeds: []FeedCount{{Start: 300e9, Feed: "bgp", N: 9}}}}
	mb, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := Decode(mb)
	if err != nil || mr.Marker == nil || mr.Marker.Through != 600e9 || mr.Marker.Feeds[0].N != 9 {
		t.Fatalf("marker round trip: %+v, %v", mr, err)
	}
}

func TestRefused(t *testing.T) {
	good, _ := Encode(sample())
	cases := map[string]*Record{
		"both":        {Version: Version, Batch: sample().Batch, Marker: &Marker{Source: "x", Through: 1}},
		"neither":     {Version: Version},
		"version":     {Version: 9, Marker: &Marker{Source: "x", Through: 1}},
		"no source":   {Version: Version, Marker: &Marker{Through: 1}},
		"empty span":  {Version: Version, Batch: &Batch{Source: "a/0", Start: 5, End: 5}},
		"zero count":  {Version: Version, Batch: &Batch{Source: "a/0", Start: 0, End: 5, Entries: []Entry{{Signal: "s", Entity: "e", Count: 0}}}},
		"after":       {Version: Version, Batch: &Batch{Source: "a/0", Start: 0, End: 5, Entries: []Entry{{Signal: "s", Entity: "e", Start: 5, Count: 1}}}},
		"nan":         {Version: Version, Batch: &Batch{Source: "a/0", Start: 0, End: 5, Entries: []Entry{{Signal: "s", Entity: "e", Count: 1, Sum: math.NaN()}}}},
		"feed beyond": {Version: Version, Marker: &Marker{Source: "x", Through: 10, Feeds: []FeedCount{{Start: 10, Feed: "f", N: 1}}}},
	}
	for name, r := range cases {
		if err := r.Validate(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
	for _, b := range [][]byte{nil, {0xff}, good[:len(good)-3], append(append([]byte(nil), good...), 0)} {
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("decode %x: got %v, want ErrMalformed", b, err)
		}
	}
}

// FuzzDecode: whatever the bytes, Decode returns a record or an error, and
// a record it returns encodes back to bytes that decode to the same record;
// those are the very bytes read, unless they were of version 1.
func FuzzDecode(f *testing.F) {
	s, _ := Encode(sample())
	m, _ := Encode(&Record{Marker: &Marker{Source: "flows/0", Through: 600e9, Feeds: []FeedCount{{Start: 300e9, Feed: "flows", N: 3}}}})
	f.Add(s)
	f.Add(m)
	f.Add(small)
	f.Add(smallMarker)
	big, _ := Encode(realistic())
	f.Add(big)
	// Version 1, CBOR: the legacy reader.
	f.Add(legacy(f, sample()))
	for _, h := range []string{legacySmallHex, legacyMarkerHex} {
		b, _ := hex.DecodeString(h)
		f.Add(b)
	}
	f.Add([]byte{0xa1, 0x01, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not marked malformed: %v", err)
			}
			return
		}
		out, err := Encode(r)
		if err != nil {
			t.Fatalf("decoded record does not encode: %v", err)
		}
		if b[0] == Version && !bytes.Equal(out, b) {
			t.Fatalf("non-canonical record accepted: %x encodes as %x", b, out)
		}
		r2, err := Decode(out)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		out2, _ := Encode(r2)
		if !bytes.Equal(out, out2) {
			t.Fatal("encoding not stable")
		}
	})
}

// small and smallMarker are written out by hand, so that a change of the
// format is noticed: see the layout in the package doc.
var (
	smallRecord = &Record{Version: Version, Batch: &Batch{Source: "f/1", Start: 300, End: 600, Key: "k", Entries: []Entry{
		{Signal: "s", Entity: "e", Start: 300, Sum: 1.5, Count: 2},
		{Signal: "s", Entity: "f", Start: 0, Count: 1, LastT: 599, Acc: []byte{9}},
	}}}
	small = []byte{
		0x02, 0x01, // version 2, batch
		0x03, 'f', '/', '1', // source
		0xd8, 0x04, // start 300, zigzag
		0xac, 0x02, // span 300
		0x01, 'k', // key
		0x02,                       // two entries
		0x01, 0x01, 's', 0x01, 'e', // signal follows; s, e
		0x00,                                           // start as the batch's
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, // sum 1.5
		0x02,            // count
		0x06, 0x01, 'f', // signal as before, last time and accumulator follow; f
		0xd7, 0x04, // start 0: -300 from the batch's
		0, 0, 0, 0, 0, 0, 0, 0, // sum 0
		0x01,       // count
		0x01,       // last time 599: -1 from the end
		0x01, 0x09, // accumulator
	}
	smallMarkerRecord = &Record{Version: Version, Marker: &Marker{Source: "m", Through: 600, Feeds: []FeedCount{{Start: 300, Feed: "x", N: 3}}}}
	smallMarker       = []byte{
		0x02, 0x02, // version 2, marker
		0x01, 'm', // source
		0xb0, 0x09, // through 600, zigzag
		0x01,      // one feed count
		0x01, 'x', // feed
		0xac, 0x02, // start: 300 before through
		0x03, // n
	}
)

// smallRecord, and the marker of TestLegacy, as the version 1 code
// encoded them (CBOR).
const (
	legacySmallHex  = "a2010102a50163662f310219012c0319025804616b0582a50161730261650319012c04f93e000502a7016173026166030004f90000050106190257074109"
	legacyMarkerHex = "a2010103a30167666c6f77732f30021b0000008bb2c970000381a3011b00000045d964b8000265666c6f77730303"
)

func TestExactBytes(t *testing.T) {
	for _, c := range []struct {
		r    *Record
		want []byte
	}{{smallRecord, small}, {smallMarkerRecord, smallMarker}} {
		got, err := Encode(c.r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("encoding\n got %x\nwant %x", got, c.want)
		}
		r, err := Decode(c.want)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r, c.r) {
			t.Errorf("decoded %+v, want %+v", r, c.r)
		}
	}
}

// legacy is r as the version 1 code wrote it: CBOR, core deterministic.
func legacy(tb testing.TB, r *Record) []byte {
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		tb.Fatal(err)
	}
	v1 := *r
	v1.Version = 1
	b, err := em.Marshal(&v1)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// A record of version 1 still on the topic decodes to what its version 2
// encoding decodes to.
func TestLegacy(t *testing.T) {
	marker := &Record{Marker: &Marker{Source: "flows/0", Through: 600e9, Feeds: []FeedCount{{Start: 300e9, Feed: "flows", N: 3}}}}
	hexOf := func(h string) []byte { b, _ := hex.DecodeString(h); return b }
	for name, c := range map[string]struct {
		r  *Record
		v1 []byte
	}{
		"sample":       {sample(), legacy(t, sample())},
		"realistic":    {realistic(), legacy(t, realistic())},
		"small hex":    {smallRecord, hexOf(legacySmallHex)},
		"marker hex":   {marker, hexOf(legacyMarkerHex)},
		"marker built": {marker, legacy(t, marker)},
	} {
		v2, err := Encode(c.r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Decode(v2)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(c.v1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: version 1 decodes to %+v, version 2 to %+v", name, got, want)
		}
		if again, _ := Encode(got); !bytes.Equal(again, v2) {
			t.Errorf("%s: version 1 re-encodes to %x, want %x", name, again, v2)
		}
	}
	// A CBOR record claiming version 2 is neither format.
	em, _ := cbor.CoreDetEncOptions().EncMode()
	b, _ := em.Marshal(&Record{Version: 2, Marker: &Marker{Source: "x", Through: 1}})
	if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
		t.Errorf("CBOR of version 2: got %v, want ErrMalformed", err)
	}
}

func TestTruncated(t *testing.T) {
	good := [][]byte{small, smallMarker}
	for _, r := range []*Record{sample(), realistic(), {Marker: &Marker{Source: "bgp", Through: 600e9, Feeds: []FeedCount{{Start: 300e9, Feed: "bgp", N: 9}}}}} {
		b, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		good = append(good, b)
	}
	for _, b := range good {
		for n := range len(b) {
			if _, err := Decode(b[:n]); !errors.Is(err, ErrMalformed) {
				t.Fatalf("%x cut at %d of %d: got %v, want ErrMalformed", b[:n], n, len(b), err)
			}
		}
		if _, err := Decode(append(b[:len(b):len(b)], 0)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%x with a trailing byte: got %v, want ErrMalformed", b, err)
		}
	}
}

// Every form but the one Encode writes is refused.
func TestNonCanonical(t *testing.T) {
	edit := func(b []byte, at int, drop int, ins ...byte) []byte {
		out := append([]byte(nil), b[:at]...)
		out = append(out, ins...)
		return append(out, b[at+drop:]...)
	}
	idx := func(b []byte, sub ...byte) int {
		i := bytes.Index(b, sub)
		if i < 0 {
			t.Fatalf("%x not in %x", sub, b)
		}
		return i
	}
	e2 := idx(small, 0x06, 0x01, 'f')
	cases := map[string][]byte{
		"non-minimal source length": edit(small, 2, 1, 0x83, 0x00),
		"non-minimal count":         edit(small, e2-1, 1, 0x82, 0x00),
		"non-minimal start":         edit(small, 6, 2, 0xd8, 0x84, 0x00),
		"non-minimal feed n":        edit(smallMarker, len(smallMarker)-1, 1, 0x83, 0x80, 0x00),
		"overflowing varint":        edit(small, e2-1, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02),
		"count beyond int64":        edit(small, e2-1, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01),
		"signal repeated":           edit(small, e2, 1, 0x07, 0x01, 's'),
		"first without signal":      edit(small, 13, 3, 0x00),
		"unknown flag":              edit(small, e2, 1, 0x0e),
		"unknown kind":              edit(small, 1, 1, 0x03),
		"unknown format":            edit(small, 0, 1, 0x01),
		"zero last time flagged":    edit(small, len(small)-3, 1, 0xaf, 0x09), // -600: LastT 0
		"empty accumulator flagged": edit(small, len(small)-2, 2, 0x00),
		"trailing byte":             append(append([]byte(nil), small...), 0),
		"zero feed count as varint": edit(smallMarker, len(smallMarker)-1, 1, 0x80, 0x00),
	}
	for name, b := range cases {
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s (%x): got %v, want ErrMalformed", name, b, err)
		}
	}
	// The edits are not refused for some other reason: undone, they decode.
	if _, err := Decode(edit(small, e2, 1, 0x07, 0x01, 't')); err != nil {
		t.Errorf("a new signal: %v", err)
	}
}

// A count far beyond what the bytes could hold is refused before anything
// is allocated for it.
func TestHugeCount(t *testing.T) {
	head := []byte{0x02, 0x01, 0x01, 'a', 0x00, 0x01, 0x00}
	for _, n := range []uint64{1 << 20, 1<<20 + 1, 1 << 40, math.MaxUint64, 3} {
		b := append(append([]byte(nil), head...), appendUvarint(n)...)
		b = append(b, make([]byte, 30)...) // room for two entries at most
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%d entries in %d bytes: got %v, want ErrMalformed", n, len(b), err)
		}
		// The bytes allocated a decoding, on average over many (the
		// counter is the whole process's): the error's, not the entries'.
		const runs = 100
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			Decode(b)
		}
		runtime.ReadMemStats(&after)
		if d := (after.TotalAlloc - before.TotalAlloc) / runs; d > 1024 {
			t.Errorf("%d entries in %d bytes: allocated %d bytes", n, len(b), d)
		}
	}
	m := append([]byte{0x02, 0x02, 0x01, 'm', 0x02}, appendUvarint(1<<30)...)
	if _, err := Decode(append(m, 0x01, 'x', 0x01, 0x01)); !errors.Is(err, ErrMalformed) {
		t.Errorf("huge feed count: got %v", err)
	}
}

func appendUvarint(n uint64) []byte {
	var b []byte
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

// realistic is a batch as stage one writes them: three signals over a few
// dozen entities, sorted, a couple with an accumulator and a last time.
func realistic() *Record {
	const start, end = 1_764_680_100e9, 1_764_680_400e9
	var es []Entry
	for _, sig := range []string{"traffic_bytes", "traffic_bytes_v6", "traffic_flows"} {
		for i := range 17 {
			ent := fmt.Sprintf("asn:%d", 3000+i*1117)
			if i >= 12 {
				ent = "country:" + string(rune('A'+i)) + string(rune('Z'-i))
			}
			e := Entry{Signal: sig, Entity: ent, Start: start, Sum: float64(1000*i*i) + 0.25, Count: int64(3 + i*7)}
			if sig == "traffic_flows" && i < 2 {
				e.Acc = bytes.Repeat([]byte{byte(i + 1)}, 24)
				e.LastT = end - 1_500_000_000
			}
			es = append(es, e)
		}
	}
	es = es[:50]
	SortEntries(es)
	return &Record{Batch: &Batch{Source: "flows/7", Start: start, End: end, Key: "country:UG", Entries: es}}
}

func BenchmarkEncode(b *testing.B) {
	r := realistic()
	out, _ := Encode(r)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(out)), "bytes/record")
}

func BenchmarkDecode(b *testing.B) {
	in, _ := Encode(realistic())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(in)), "bytes/record")
}

// BenchmarkEncodeCBOR is the yardstick: what Encode did in version 1.
func BenchmarkEncodeCBOR(b *testing.B) {
	r := realistic()
	r.Version = 1
	em, _ := cbor.CoreDetEncOptions().EncMode()
	out, _ := em.Marshal(r)
	b.ReportAllocs()
	for b.Loop() {
		r.Version = Version
		if err := r.Validate(); err != nil {
			b.Fatal(err)
		}
		r.Version = 1
		if _, err := em.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(out)), "bytes/record")
}

// BenchmarkDecodeCBOR is the yardstick: what Decode did in version 1, now
// the legacy reader.
func BenchmarkDecodeCBOR(b *testing.B) {
	in := legacy(b, realistic())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(in)), "bytes/record")
}
