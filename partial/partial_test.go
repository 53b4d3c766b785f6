package partial

import (
	"bytes"
	"errors"
	"math"
	"testing"
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
// a record it returns encodes back to bytes that decode to the same record.
func FuzzDecode(f *testing.F) {
	s, _ := Encode(sample())
	m, _ := Encode(&Record{Marker: &Marker{Source: "flows/0", Through: 600e9, Feeds: []FeedCount{{Start: 300e9, Feed: "flows", N: 3}}}})
	f.Add(s)
	f.Add(m)
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
