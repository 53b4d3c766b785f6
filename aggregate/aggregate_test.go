package aggregate

import (
	"math"
	"runtime"
	"testing"

	"github.com/outagewatch/outagewatch/obs"
)

const (
	min1 = int64(60e9)
	min5 = 5 * min1
	t0   = int64(1_700_000_100) * 1e9 / min5 * min5 // a bucket boundary
)

// Test signals: a Last-aggregated gauge from a feed where absence is
// unknown, a mean and a max.
var (
	gauge = obs.Register(obs.SignalDef{Name: "test_gauge", Feed: obs.FeedQuality, Agg: obs.Last})
	mean  = obs.Register(obs.SignalDef{Name: "test_mean", Feed: obs.FeedDNS, Agg: obs.Mean})
	mx    = obs.Register(obs.SignalDef{Name: "test_max", Feed: obs.FeedDNS, Agg: obs.Max})
)

type collected struct {
	starts []int64
	values map[int64]map[string]Point
}

func (c *collected) fn(cl *Closed) {
	c.starts = append(c.starts, cl.Start)
	if c.values == nil {
		c.values = map[int64]map[string]Point{}
	}
	m := map[string]Point{}
	for _, p := range cl.Points {
		m[p.Series.Key.String()] = p
	}
	c.values[cl.Start] = m
}

func obsAt(t int64, sig obs.Signal, e string, v float64) *obs.Observation {
	return &obs.Observation{Time: t, Signal: sig, Entity: e, Value: v}
}

func TestBucketsCloseOnWatermarkWithLateness(t *testing.T) {
	a := New(Config{Lateness: min1})
	var c collected
	a.Observe(obsAt(t0+10e9, obs.TrafficBytes, "asn:1", 100))
	a.Observe(obsAt(t0+20e9, obs.TrafficBytes, "asn:2", 5))
	a.Observe(obsAt(t0+min5+1, obs.TrafficBytes, "asn:1", 7)) // next bucket
	a.Advance(t0+min5-1, c.fn)
	if len(c.starts) != 0 {
		t.Fatalf("bucket closed before the watermark passed its end")
	}
	a.Observe(obsAt(t0+30e9, obs.TrafficBytes, "asn:1", 1)) // late but allowed
	a.Advance(t0+min5, c.fn)
	if len(c.starts) != 1 || c.starts[0] != t0 {
		t.Fatalf("closed %v", c.starts)
	}
	if p := c.values[t0]["traffic_bytes{asn:1}"]; p.Value != 101 || p.Count != 2 || p.Missing {
		t.Fatalf("asn:1 = %+v", p)
	}
	a.Observe(obsAt(t0+40e9, obs.TrafficBytes, "asn:1", 1000)) // too late
	if a.Stats().Late != 1 {
		t.Fatalf("late = %d", a.Stats().Late)
	}
	a.Advance(t0+2*min5, c.fn)
	// asn:2 sent nothing in the second bucket while the flows feed did: zero.
	if p := c.values[t0+min5]["traffic_bytes{asn:2}"]; p.Value != 0 || p.Missing {
		t.Fatalf("asn:2 second bucket = %+v, want 0", p)
	}
	if v, ok := a.Series(Key{obs.TrafficBytes, "asn:1"}).Hist.Get(t0); !ok || math.Abs(v-101) > 2.1 {
		t.Fatalf("history = %v %v", v, ok)
	}
}

func TestMissingIsNotZero(t *testing.T) {
	a := New(Config{})
	var c collected
	a.Observe(obsAt(t0, obs.TrafficBytes, "asn:1", 100))
	a.Observe(obsAt(t0, gauge, "dc:a", 0.5))
	// Nothing at all in the next two buckets: the flows feed is down.
	a.Observe(obsAt(t0+3*min5, gauge, "dc:a", 0.7))
	a.Advance(t0+4*min5, c.fn)
	if len(c.starts) != 4 {
		t.Fatalf("closed %d buckets, want 4", len(c.starts))
	}
	for _, b := range []int64{1, 2, 3} {
		if p := c.values[t0+b*min5]["traffic_bytes{asn:1}"]; !p.Missing || !math.IsNaN(p.Value) {
			t.Fatalf("bucket %d traffic = %+v, want missing", b, p)
		}
	}
	if p := c.values[t0+min5]["test_gauge{dc:a}"]; !p.Missing {
		t.Fatalf("gauge with no report = %+v, want missing", p)
	}
	if p := c.values[t0+3*min5]["test_gauge{dc:a}"]; p.Value != 0.7 {
		t.Fatalf("gauge = %+v", p)
	}
}

func TestAggregations(t *testing.T) {
	a := New(Config{})
	var c collected
	for i, v := range []float64{1, 0, 0, 1} {
		a.Observe(obsAt(t0+int64(i), mean, "zone:x", v))
		a.Observe(obsAt(t0+int64(i), mx, "zone:x", v*float64(i)))
	}
	a.Observe(obsAt(t0+9, gauge, "dc:a", 3))
	a.Observe(obsAt(t0+5, gauge, "dc:a", 9)) // older: Last ignores it
	a.Advance(t0+min5, c.fn)
	if p := c.values[t0]["test_mean{zone:x}"]; p.Value != 0.5 || p.Count != 4 {
		t.Fatalf("mean = %+v", p)
	}
	if p := c.values[t0]["test_max{zone:x}"]; p.Value != 3 {
		t.Fatalf("max = %+v", p)
	}
	if p := c.values[t0]["test_gauge{dc:a}"]; p.Value != 3 {
		t.Fatalf("last = %+v", p)
	}
}

func TestHookEmitsBeforeClose(t *testing.T) {
	a := New(Config{})
	var c collected
	a.BeforeClose(func(start, end int64, sink obs.Sink) {
		sink.Observe(obsAt(end, gauge, "asn:9", float64(start/min5%7)))
	})
	a.Observe(obsAt(t0, obs.TrafficBytes, "asn:1", 1))
	a.Advance(t0+min5, c.fn)
	if p := c.values[t0]["test_gauge{asn:9}"]; p.Missing || p.Value != float64(t0/min5%7) {
		t.Fatalf("hook gauge = %+v", p)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	a := New(Config{})
	for i := int64(0); i < 20; i++ {
		a.Observe(obsAt(t0+i*min5, obs.TrafficBytes, "asn:1", float64(100+i)))
	}
	a.Advance(t0+10*min5, nil)
	b, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	r := New(Config{})
	if err := r.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	var ca, cr collected
	a.Advance(t0+20*min5, ca.fn)
	r.Advance(t0+20*min5, cr.fn)
	if len(ca.starts) != 10 || len(cr.starts) != 10 {
		t.Fatalf("closed %d and %d", len(ca.starts), len(cr.starts))
	}
	for _, s := range ca.starts {
		if ca.values[s]["traffic_bytes{asn:1}"].Value != cr.values[s]["traffic_bytes{asn:1}"].Value {
			t.Fatalf("bucket %d differs after restore", s)
		}
	}
	if err := New(Config{Width: min1}).UnmarshalBinary(b); err == nil {
		t.Fatal("restore into a different bucket width accepted")
	}
}

func BenchmarkObserve(b *testing.B) {
	a := New(Config{})
	ents := make([]string, 1000)
	for i := range ents {
		ents[i] = obs.ASN(uint32(i + 1))
	}
	o := obs.Observation{Signal: obs.TrafficBytes, Value: 1500}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o.Time = t0 + int64(i)*1000
		o.Entity = ents[i%1000]
		a.Observe(&o)
		if i%1_000_000 == 0 {
			a.Advance(o.Time-min1, nil)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "obs/s")
}

// BenchmarkSeriesMemory reports the heap held per tracked series once every
// series has two weeks of 5-minute history: the ring, the series record,
// its map entry and its entity name.
func BenchmarkSeriesMemory(b *testing.B) {
	const n = 5000
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		a := New(Config{})
		o := obs.Observation{Signal: obs.TrafficBytes}
		for bucket := int64(0); bucket < DefaultHistory; bucket++ {
			for s := 0; s < n; s++ {
				o.Time = t0 + bucket*min5
				o.Entity = obs.ASN(uint32(s + 1))
				o.Value = float64(1000 + s)
				a.Observe(&o)
			}
			a.Advance(t0+(bucket+1)*min5, nil)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "bytes/series")
		runtime.KeepAlive(a)
	}
}

// restored is a new aggregator of cfg restored from a's checkpoint.
func restored(t *testing.T, a *Aggregator, cfg Config) *Aggregator {
	t.Helper()
	b, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	r := New(cfg)
	if err := r.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	return r
}

// A lagging watermark keeps many buckets open: each closes with the value
// put in it, a sparse series' gaps cost nothing wrong, and the window's
// room stays bounded by twice what is open (closed slots are reused, not
// given up).
func TestWindowUnderALaggingWatermark(t *testing.T) {
	const open = 30
	a := New(Config{})
	var c collected
	put := func(i int) {
		a.Observe(obsAt(t0+int64(i)*min5+1, obs.TrafficBytes, "asn:1", float64(i)))
		if i%7 == 0 { // a sparse series: every seventh bucket
			a.Observe(obsAt(t0+int64(i)*min5+2, obs.TrafficBytes, "asn:2", float64(1000+i)))
		}
	}
	for i := range open {
		put(i)
	}
	maxRoom := 0
	for i := open; i < 400; i++ {
		put(i)
		a.Advance(t0+int64(i-open+1)*min5, c.fn)
		maxRoom = max(maxRoom, cap(a.Series(Key{obs.TrafficBytes, "asn:1"}).open))
	}
	if len(c.starts) != 400-open {
		t.Fatalf("closed %d buckets, want %d", len(c.starts), 400-open)
	}
	for j, start := range c.starts {
		if start != t0+int64(j)*min5 {
			t.Fatalf("bucket %d closed at %d, want %d", j, start, t0+int64(j)*min5)
		}
		if p := c.values[start]["traffic_bytes{asn:1}"]; p.Value != float64(j) || p.Count != 1 {
			t.Fatalf("asn:1 bucket %d = %+v", j, p)
		}
		p := c.values[start]["traffic_bytes{asn:2}"]
		if j%7 == 0 && (p.Value != float64(1000+j) || p.Count != 1) || j%7 != 0 && (p.Value != 0 || p.Count != 0) {
			t.Fatalf("asn:2 bucket %d = %+v", j, p)
		}
	}
	if maxRoom > 4*open {
		t.Fatalf("the window took room for %d buckets with %d open", maxRoom, open+1)
	}
}
