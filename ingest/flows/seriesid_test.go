package flows

import (
	"math"
	"math/rand/v2"
	"testing"

	flowpb "github.com/netsampler/goflow2/v2/pb"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
)

// A decoder writing into an aggregator observes by series number once it
// has met a series (obs.SeriesSink); the buckets it fills must be exactly
// those it fills by name. Records for four networks (two countries, one
// region, one AS without a country) over five buckets, a watermark that
// closes buckets as they go, and late records, one of them the first of
// its network: a late first record creates no series either way.
func TestNumberedSeriesFillTheSameBuckets(t *testing.T) {
	const width = int64(300e9)
	t0 := tReceive - tReceive%width
	r := rand.New(rand.NewPCG(41, 42))
	type rec struct {
		data []byte
		wm   int64 // the watermark to move to after it, or 0
	}
	var recs []rec
	eyes := []struct {
		as   uint32
		addr string
	}{{asGB, "2001:db8::1"}, {asPT, "81.84.1.2"}, {asPT, "81.86.1.2"}, {asNoCC, "192.0.2.9"}}
	msg := func(at int64, as uint32, addr string) []byte {
		return mustDelim(&flowpb.FlowMessage{TimeReceivedNs: uint64(at), SamplingRate: uint64(1 + r.IntN(4)),
			Bytes: uint64(100 + r.IntN(1500)), Packets: uint64(1 + r.IntN(3)),
			SrcAs: asLocal, DstAs: as, SrcAddr: ip("198.51.100.7"), DstAddr: ip(addr)})
	}
	for i := range 400 {
		at := t0 + int64(i)*(5*width/400)
		e := eyes[r.IntN(len(eyes))]
		recs = append(recs, rec{data: msg(at, e.as, e.addr)})
		if i%40 == 39 {
			wm := at - 30e9
			recs[len(recs)-1].wm = wm
			late := wm - wm%width - 1
			if late < t0 {
				continue // no bucket closed yet
			}
			// Late: in the bucket just closed; the second is the first
			// record of AS 64511, which must not become a series.
			recs = append(recs, rec{data: msg(late, asGB, "2001:db8::2")}, rec{data: msg(late, 64511, "192.0.2.10")})
		}
	}
	run := func(numbered bool) (map[int64]map[string]aggregate.Point, aggregate.Stats, Stats) {
		agg := aggregate.New(aggregate.Config{Width: width, History: 64})
		var sink obs.Sink = agg
		if !numbered {
			sink = obs.SinkFunc(agg.Observe) // hides SeriesID
		}
		d := NewProtoDecoder(testConfig())
		got := map[int64]map[string]aggregate.Point{}
		closed := func(c *aggregate.Closed) {
			m := map[string]aggregate.Point{}
			for _, p := range c.Points {
				m[p.Series.Key.String()] = p
			}
			got[c.Start] = m
		}
		for _, x := range recs {
			if err := d.Decode(x.data, sink); err != nil {
				t.Fatal(err)
			}
			if x.wm != 0 {
				agg.Advance(x.wm, closed)
			}
		}
		agg.Advance(t0+6*width, closed)
		return got, agg.Stats(), d.Stats()
	}
	want, wantAgg, wantDec := run(false)
	got, gotAgg, gotDec := run(true)
	if gotAgg != wantAgg || gotDec != wantDec {
		t.Errorf("numbered: aggregator %+v, decoder %+v; by name: %+v, %+v", gotAgg, gotDec, wantAgg, wantDec)
	}
	// Bytes and packets of three networks, two countries and a region;
	// none of AS 64511, whose only records were late.
	if wantAgg.Series != 12 || wantAgg.Late == 0 {
		t.Errorf("by name: %+v, want 12 series and late observations", wantAgg)
	}
	if len(got) != len(want) || len(want) < 5 {
		t.Fatalf("%d buckets numbered, %d by name, want the same, at least 5", len(got), len(want))
	}
	for start, w := range want {
		if len(got[start]) != len(w) {
			t.Errorf("bucket %d: %d points numbered, %d by name", start, len(got[start]), len(w))
		}
		for k, wp := range w {
			gp, ok := got[start][k]
			if !ok || gp.Count != wp.Count || gp.Missing != wp.Missing || gp.Value != wp.Value && !(math.IsNaN(gp.Value) && math.IsNaN(wp.Value)) {
				t.Errorf("bucket %d %s: numbered %+v, by name %+v", start, k, gp, wp)
			}
		}
		if _, ok := w["traffic_bytes{asn:64511}"]; ok {
			t.Errorf("bucket %d: a late first record made a series", start)
		}
	}
}
