package obsfile

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

// maxAcc is the accumulator of testCustom: the largest value.
type maxAcc struct {
	v float64
	n int64
}

func (a *maxAcc) Add(o *obs.Observation) {
	if a.n == 0 || o.Value > a.v {
		a.v = o.Value
	}
	a.n++
}
func (a *maxAcc) Result() (float64, int64) { return a.v, a.n }
func (a *maxAcc) Reset()                   { *a = maxAcc{} }

// testCustom is a signal whose accumulator reads whole observations, which
// a sink never numbers.
var testCustom = obs.Register(obs.SignalDef{Name: "obsfile_test_max", Unit: "ms", Feed: "obsfile-test", Agg: obs.Custom,
	NewAccumulator: func() obs.Accumulator { return &maxAcc{} }})

// recorder is a numbered sink in front of an aggregator that writes down
// every observation it is handed, by name or by number, as the observation
// it stands for.
type recorder struct {
	agg              *aggregate.Aggregator
	keys             map[int32]aggregate.Key
	got              []obs.Observation
	byName, byNumber int
}

func newRecorder(width int64) *recorder {
	return &recorder{agg: aggregate.New(aggregate.Config{Width: width, History: 64}), keys: map[int32]aggregate.Key{}}
}

func (r *recorder) Observe(o *obs.Observation) {
	r.byName++
	r.got = append(r.got, *o)
	r.agg.Observe(o)
}

func (r *recorder) SeriesID(sig obs.Signal, ent string) (int32, bool) {
	id, ok := r.agg.SeriesID(sig, ent)
	if ok {
		r.keys[id] = aggregate.Key{Signal: sig, Entity: ent}
	}
	return id, ok
}

func (r *recorder) ObserveSeries(id int32, t int64, v float64) {
	r.byNumber++
	k, ok := r.keys[id]
	if !ok {
		panic(fmt.Sprintf("series %d observed by a number the sink never gave", id))
	}
	r.got = append(r.got, obs.Observation{Time: t, Signal: k.Signal, Entity: k.Entity, Value: v})
	r.agg.ObserveSeries(id, t, v)
}

// byName hides the recorder's numbering.
type byName struct{ r *recorder }

func (b byName) Observe(o *obs.Observation) { b.r.Observe(o) }

type decoder interface {
	Decode([]byte, obs.Sink) error
}

// feedLine is one input line and the watermark to move to after it (0:
// none).
type feedLine struct {
	text string
	wm   int64
}

// feed decodes lines into sink, advancing r's aggregator at each
// watermark and at the end to end; it returns the reason of each line's error ("" for none) and
// the points of every bucket closed.
func feed(d decoder, sink obs.Sink, r *recorder, lines []feedLine, end int64) (reasons []string, closed []string) {
	collect := func(c *aggregate.Closed) {
		for _, p := range c.Points {
			v := strconv.FormatFloat(p.Value, 'g', -1, 64)
			if math.IsNaN(p.Value) {
				v = "NaN"
			}
			closed = append(closed, fmt.Sprintf("%d %s %s %d %t", c.Start, p.Series.Key, v, p.Count, p.Missing))
		}
	}
	for _, l := range lines {
		reason := ""
		if err := d.Decode([]byte(l.text), sink); err != nil {
			reason = ingest.Reason(err)
		}
		reasons = append(reasons, reason)
		if l.wm != 0 {
			r.agg.Advance(l.wm, collect)
		}
	}
	r.agg.Advance(end, collect)
	return reasons, closed
}

// Observing by number must hand the aggregator exactly the observations
// that observing by name does, in the same order, with the same errors
// for the same lines and the same buckets closed: over spellings of one
// entity that normalise alike, a custom signal (never numbered), late
// lines (one of them the first of its entity, which creates no series),
// and malformed lines, which are skipped.
func TestNumberedEqualsByName(t *testing.T) {
	const width = int64(300e9)
	rng := rand.New(rand.NewPCG(7, 14))
	spellings := []string{"asn:5089", "asn:AS5089", " asn:as5089 ", "country:pt", "country:PT", "country:ES",
		"zone:VirginMedia.com.", "zone:virginmedia.com", "region:pt-11", "transit:1299@lis01", "asn:64512", "asn:64513"}
	bad := []string{"1745836500,PT,traffic_bytes,1", "1745836500,asn:AS-1,traffic_bytes,1",
		"1745836500,country:PT,traffic_bytes,lots", "1745836500,country:PT,no_such_signal,1", "1745836500,country:PT"}
	var lines []feedLine
	for i := range 2000 {
		t0 := int64(1745836500) + int64(i)*3 // ten buckets
		sig := "traffic_bytes"
		switch rng.IntN(4) {
		case 0:
			sig = "traffic_packets"
		case 1:
			sig = "obsfile_test_max"
		}
		ent := spellings[rng.IntN(len(spellings))]
		var text string
		if i%2 == 0 {
			text = fmt.Sprintf("%d,%s,%s,%d", t0, ent, sig, rng.IntN(1000))
		} else {
			text = fmt.Sprintf(`{"time":%d,"entity":%q,"signal":%q,"value":%d}`, t0, ent, sig, rng.IntN(1000))
		}
		l := feedLine{text: text}
		if i%100 == 99 {
			l.wm = (t0 - 30) * 1e9
		}
		lines = append(lines, l)
		if i%100 == 99 && i > 100 {
			late := (t0-30)*1e9/width*width/1e9 - 1
			lines = append(lines,
				feedLine{text: fmt.Sprintf("%d,asn:5089,traffic_bytes,7", late)},
				feedLine{text: fmt.Sprintf("%d,asn:%d,traffic_bytes,7", late, 100+i)}) // never a series
		}
		if i%50 == 0 {
			lines = append(lines, feedLine{text: bad[rng.IntN(len(bad))]})
		}
	}
	run := func(numbered bool) (*recorder, []string, []string) {
		r := newRecorder(width)
		var sink obs.Sink = r
		if !numbered {
			sink = byName{r}
		}
		csvDec, jsonDec := NewCSVDecoder(), NewJSONDecoder()
		dec := decoderFunc(func(b []byte, s obs.Sink) error {
			if b[0] == '{' {
				return jsonDec.Decode(b, s)
			}
			return csvDec.Decode(b, s)
		})
		reasons, closed := feed(dec, sink, r, lines, (1745836500+2000*3+600)*1e9)
		return r, reasons, closed
	}
	want, wantReasons, wantClosed := run(false)
	got, gotReasons, gotClosed := run(true)
	if !reflect.DeepEqual(gotReasons, wantReasons) {
		t.Errorf("errors differ:\nnumbered %q\nby name  %q", gotReasons, wantReasons)
	}
	if len(got.got) != len(want.got) {
		t.Fatalf("%d observations numbered, %d by name", len(got.got), len(want.got))
	}
	for i := range want.got {
		if got.got[i] != want.got[i] {
			t.Fatalf("observation %d: numbered %+v, by name %+v", i, got.got[i], want.got[i])
		}
	}
	if !reflect.DeepEqual(gotClosed, wantClosed) {
		t.Errorf("closed buckets differ: %d points numbered, %d by name", len(gotClosed), len(wantClosed))
	}
	if g, w := got.agg.Stats(), want.agg.Stats(); g != w || w.Late == 0 {
		t.Errorf("aggregator: numbered %+v, by name %+v (want late observations)", g, w)
	}
	// By name, every observation went by name. Numbered, only the first
	// of each (signal, spelling) did, and then again while its series did
	// not exist (its lines were late), and every one of the custom signal.
	if want.byNumber != 0 {
		t.Errorf("by name: %d observations by number", want.byNumber)
	}
	if n := expectByName(width, lines, wantReasons, want.got); got.byName != n || got.byNumber != len(got.got)-n || got.byNumber < len(got.got)/2 {
		t.Errorf("numbered: %d observations by name and %d by number, want %d by name of %d", got.byName, got.byNumber, n, len(got.got))
	}
}

type decoderFunc func([]byte, obs.Sink) error

func (f decoderFunc) Decode(b []byte, s obs.Sink) error { return f(b, s) }

// expectByName counts the observations that a numbering sink should
// receive by name, from the lines, their errors, and what they decoded to.
func expectByName(width int64, lines []feedLine, reasons []string, decoded []obs.Observation) int {
	var closedTo int64
	cached := map[string]bool{}
	exists := map[aggregate.Key]bool{}
	n, k := 0, 0
	for i, l := range lines {
		if reasons[i] == "" {
			o := decoded[k]
			k++
			var raw string
			if l.text[0] == '{' {
				var tm int64
				if _, err := fmt.Sscanf(l.text, `{"time":%d,"entity":%q`, &tm, &raw); err != nil {
					panic(err)
				}
			} else {
				raw = strings.Split(l.text, ",")[1]
			}
			key := aggregate.Key{Signal: o.Signal, Entity: o.Entity}
			switch {
			case o.Signal == testCustom:
				n++
			case cached[l.text[:1]+o.Signal.String()+"|"+raw]:
			default:
				n++
				if o.Time >= closedTo {
					exists[key] = true
				}
				// Each decoder (JSON, CSV) has its own cache.
				cached[l.text[:1]+o.Signal.String()+"|"+raw] = exists[key]
			}
		}
		if l.wm != 0 {
			closedTo = l.wm / width * width
		}
	}
	if k != len(decoded) {
		panic(fmt.Sprintf("%d decoded observations, %d lines without error", len(decoded), k))
	}
	return n
}

// Past 65,536 entities every series is still observed by number once it
// exists, and a line of a known series allocates nothing.
func TestManyEntities(t *testing.T) {
	const n = 70_000
	r := newRecorder(300e9)
	d := NewCSVDecoder()
	line := func(bucket, i int) []byte {
		return fmt.Appendf(nil, "%d,asn:%d,traffic_bytes,%d", 1745836500+300*bucket, 64512+i, i)
	}
	for b := range 2 {
		for i := range n {
			if err := d.Decode(line(b, i), r); err != nil {
				t.Fatal(err)
			}
		}
		if want := n * (b + 1); len(r.got) != want || r.byName != n || r.byNumber != n*b {
			t.Fatalf("after bucket %d: %d observations, %d by name, %d by number; want %d, %d by name", b, len(r.got), r.byName, r.byNumber, want, n)
		}
	}
	if last := r.got[len(r.got)-1]; last != ob(t0+300e9, obs.TrafficBytes, fmt.Sprint("asn:", 64512+n-1), n-1) {
		t.Errorf("last observation %+v", last)
	}
	if d.series.nIDs != n || len(d.series.names) != 0 || r.agg.Stats().Series != n {
		t.Errorf("%d numbers and %d names cached, %d series; want %d numbers", d.series.nIDs, len(d.series.names), r.agg.Stats().Series, n)
	}
	known := line(1, n-1)
	if a := testing.AllocsPerRun(100, func() {
		if err := d.Decode(known, r.agg); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%.1f allocations a line of a known series, want none", a)
	}
}

// What the cache holds is bounded by the series the sink has, whatever the
// input: malformed entities add nothing, spellings of one series at most
// maxSpellings entries, entities that never become a series (late lines)
// and every entity into a sink that does not number series a working set
// of maxNames names.
func TestCacheBounds(t *testing.T) {
	r := newRecorder(300e9)
	d := NewCSVDecoder()
	decode := func(s obs.Sink, format string, args ...any) string {
		if err := d.Decode(fmt.Appendf(nil, format, args...), s); err != nil {
			return ingest.Reason(err)
		}
		return ""
	}
	for i := range 1000 {
		if reason := decode(r, "1745836500,asn:x%d,traffic_bytes,1", i); reason != "entity" {
			t.Fatalf("asn:x%d: %q", i, reason)
		}
	}
	if d.series.nIDs+len(d.series.names) != 0 || len(r.got) != 0 {
		t.Fatalf("malformed entities: %d numbers, %d names cached, %d observed", d.series.nIDs, len(d.series.names), len(r.got))
	}
	// A hundred spellings of one series, each padded with more blanks,
	// twice: the second time, those that found room go by number.
	for i := range 200 {
		if reason := decode(r, "1745836500,%sasn:AS5089,traffic_bytes,1", strings.Repeat(" ", i%100)); reason != "" {
			t.Fatal(reason)
		}
	}
	if d.series.nIDs != maxSpellings || r.byNumber != maxSpellings || r.byName != 200-maxSpellings {
		t.Errorf("spellings: %d numbers cached, %d by name, %d by number; want %d, %d, %d",
			d.series.nIDs, r.byName, r.byNumber, maxSpellings, 200-maxSpellings, maxSpellings)
	}
	// The padded spellings that found no room still arrive, by name, in the
	// same series.
	if st := r.agg.Stats(); st.Series != 1 || st.Observations != 200 {
		t.Errorf("spellings: %+v", st)
	}
	// Late lines of ever new entities: no series, a working set of names.
	r.agg.Advance(1745836500e9+600e9, func(*aggregate.Closed) {})
	for i := range maxNames + 100 {
		decode(r, "1745836500,asn:%d,traffic_bytes,1", 1_000_000+i)
	}
	if st := r.agg.Stats(); st.Series != 1 || len(d.series.names) != maxNames || d.series.nIDs != maxSpellings {
		t.Errorf("late: %+v, %d names, %d numbers cached", st, len(d.series.names), d.series.nIDs)
	}
	// Into a sink that numbers nothing, a working set of names too; the
	// numbers of the other sink are forgotten.
	var s obs.Slice
	for i := range maxNames + 100 {
		decode(&s, "1745836500,asn:%d,traffic_bytes,1", 2_000_000+i)
	}
	if len(s) != maxNames+100 || len(d.series.names) != maxNames || d.series.nIDs != 0 {
		t.Errorf("by name: %d observations, %d names, %d numbers", len(s), len(d.series.names), d.series.nIDs)
	}
	if s[len(s)-1] != ob(t0, obs.TrafficBytes, fmt.Sprint("asn:", 2_000_000+maxNames+99), 1) {
		t.Errorf("last %+v", s[len(s)-1])
	}
}

// numberSink numbers the series "asn:N" as N − 64512 without keeping
// anything, so that the heap the decoder grows by is its own.
type numberSink struct{ n int }

func (s *numberSink) Observe(*obs.Observation) { s.n++ }
func (s *numberSink) SeriesID(_ obs.Signal, ent string) (int32, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(ent, "asn:"))
	return int32(n - 64512), err == nil
}
func (s *numberSink) ObserveSeries(int32, int64, float64) { s.n++ }

// BenchmarkCacheBytes reports the heap a decoder's cache takes per
// distinct series (entity "asn:N", one signal), beyond the entity name the
// sink keeps anyway.
func BenchmarkCacheBytes(b *testing.B) {
	const n = 200_000
	lines := make([][]byte, n)
	for i := range lines {
		lines[i] = fmt.Appendf(nil, "1745836500,asn:%d,traffic_bytes,1", 64512+i)
	}
	var per float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d := NewCSVDecoder()
		sink := &numberSink{}
		for _, l := range lines {
			if err := d.Decode(l, sink); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		// The names the sink would keep: what normalising allocated.
		names := float64(len("asn:") + 6)
		per = (float64(after.HeapAlloc)-float64(before.HeapAlloc))/n - roundUp(names)
		runtime.KeepAlive(d)
		if d.series.nIDs != n {
			b.Fatalf("%d numbers cached", d.series.nIDs)
		}
	}
	b.ReportMetric(per, "cache-bytes/series")
}

// roundUp is the size class a small allocation takes.
func roundUp(n float64) float64 { return math.Ceil(n/8) * 8 }
