package aggregate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/obs"
)

// A signal declared with a 30-minute cadence, and one with a 7-minute
// cadence (rounded up to 10 minutes on 5-minute buckets).
var (
	halfHourly = mustDeclare(obs.SignalDef{Name: "test_half_hourly", Unit: "/24s", Kind: obs.KindGauge,
		Feed: "test-coarse", Agg: obs.Last, Cadence: 30 * min1})
	sevenMin = mustDeclare(obs.SignalDef{Name: "test_seven_min", Kind: obs.KindVolume,
		Feed: "test-coarse", Agg: obs.Sum, Cadence: 7 * min1, ZeroWhenAbsent: true})
)

func mustDeclare(d obs.SignalDef) obs.Signal {
	s, err := obs.Declare(d)
	if err != nil {
		panic(err)
	}
	return s
}

// closedLog records every Closed as "start-end coarse: key=value ...".
type closedLog []string

func (l *closedLog) fn(c *Closed) {
	var b strings.Builder
	fmt.Fprintf(&b, "%d-%d", (c.Start-t30)/min1, (c.End-t30)/min1)
	if c.Coarse {
		b.WriteString(" coarse")
	}
	b.WriteString(":")
	for _, p := range c.Points {
		fmt.Fprintf(&b, " %s=%v", p.Series.Key, p.Value)
	}
	*l = append(*l, b.String())
}

const t30 = int64(1_700_000_100) * 1e9 / (30 * min1) * (30 * min1) // a half-hour boundary

func TestCoarseSeriesAreBucketedAndJudgedAtTheirCadence(t *testing.T) {
	a := New(Config{})
	var l closedLog
	if w := a.WidthOf(halfHourly); w != 30*min1 {
		t.Fatalf("width of a 30m signal %d", w)
	}
	if w := a.WidthOf(sevenMin); w != 10*min1 {
		t.Fatalf("width of a 7m signal on 5m buckets %d, want 10m", w)
	}
	// Reports at :12 and :42 (the source's own phase), a base series every
	// 5 minutes, and no report in the third half hour.
	for m := int64(0); m < 90; m += 5 {
		a.Observe(obsAt(t30+m*min1+1e9, obs.TrafficBytes, "asn:1", float64(m)))
	}
	a.Observe(obsAt(t30+12*min1, halfHourly, "country:UG", 2400))
	a.Observe(obsAt(t30+42*min1, halfHourly, "country:UG", 2300))
	a.Advance(t30+90*min1, l.fn)
	want := []string{}
	for m := int64(0); m < 90; m += 5 {
		want = append(want, fmt.Sprintf("%d-%d: traffic_bytes{asn:1}=%d", m, m+5, m))
		switch m + 5 {
		case 30:
			want = append(want, "0-30 coarse: test_half_hourly{country:UG}=2400")
		case 60:
			want = append(want, "30-60 coarse: test_half_hourly{country:UG}=2300")
		case 90:
			want = append(want, "60-90 coarse: test_half_hourly{country:UG}=NaN")
		}
	}
	if got := strings.Join(l, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("closed buckets\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	s := a.Series(Key{halfHourly, "country:UG"})
	if s.Hist.Width() != 30*min1 {
		t.Fatalf("history width %d", s.Hist.Width())
	}
	if v, ok := s.Hist.Get(t30 + 30*min1); !ok || math.Abs(v-2300)/2300 > 0.03 {
		t.Fatalf("history at :30 = %v %v", v, ok)
	}
	if _, ok := s.Hist.Get(t30 + 60*min1); ok {
		t.Fatal("the half hour with no report is held as a value")
	}
}

// A coarse volume whose feed delivered within the bucket's span reads a
// missing entity as zero; the feed counts cover the whole span.
func TestCoarseBucketFeedCountsCoverTheSpan(t *testing.T) {
	a := New(Config{})
	var feeds []map[obs.Feed]int64
	var pts []Point
	a.Observe(obsAt(t30+1*min1, sevenMin, "asn:1", 5))
	a.Observe(obsAt(t30+6*min1, sevenMin, "asn:2", 7)) // asn:1 silent in the second 5 minutes
	a.Observe(obsAt(t30+11*min1, sevenMin, "asn:2", 1))
	a.Advance(t30+20*min1, func(c *Closed) {
		if c.Coarse {
			feeds = append(feeds, c.FeedObservations)
			pts = append(pts, c.Points...)
		}
	})
	if len(feeds) != 2 || feeds[0]["test-coarse"] != 2 || feeds[1]["test-coarse"] != 1 {
		t.Fatalf("coarse feed counts %v", feeds)
	}
	got := fmt.Sprintln(pts[0].Series.Entity, pts[0].Value, pts[1].Series.Entity, pts[1].Value,
		pts[2].Series.Entity, pts[2].Value, pts[3].Series.Entity, pts[3].Value)
	if got != "asn:1 5 asn:2 7 asn:1 0 asn:2 1\n" {
		t.Fatalf("points %s", got)
	}
}

// An export of a traffic volume every 30 minutes, with no cadence declared,
// beside a series of the same feed every 5 minutes: once the series has
// shown its step, the buckets between its reports are neither zero (which
// would read as traffic gone) nor missing; a report that does not come
// when due is a zero, as for any volume whose feed delivered.
func TestDetectedStepSkipsBucketsThatWereNotDue(t *testing.T) {
	a := New(Config{})
	var got []string
	for m := int64(0); m < 240; m += 5 {
		a.Observe(obsAt(t30+m*min1+1e9, obs.TrafficBytes, "asn:1", 1))
		if m%30 == 0 && m != 180 { // the report of 03:00 never comes
			a.Observe(obsAt(t30+m*min1+2e9, obs.TrafficBytes, "country:XX", 500))
		}
	}
	a.Advance(t30+240*min1, func(c *Closed) {
		for _, p := range c.Points {
			if p.Series.Entity == "country:XX" {
				got = append(got, fmt.Sprintf("%d=%v", (c.Start-t30)/min1, p.Value))
			}
		}
	})
	// Until three gaps are seen, every bucket is due: zeros between the
	// first reports; from 01:30 on only the reports' buckets are judged.
	want := "0=500 5=0 10=0 15=0 20=0 25=0 30=500 35=0 40=0 45=0 50=0 55=0 60=500 65=0 70=0 75=0 80=0 85=0 " +
		"90=500 120=500 150=500 180=0 210=500"
	if g := strings.Join(got, " "); g != want {
		t.Fatalf("points of the 30-minute export\n got %s\nwant %s", g, want)
	}
}

func TestStepIsTheWidthOrTheDetectedStep(t *testing.T) {
	a := New(Config{})
	for m := int64(0); m <= 120; m += 5 {
		a.Observe(obsAt(t30+m*min1, obs.TrafficBytes, "asn:1", 1))
		if m%20 == 0 {
			a.Observe(obsAt(t30+m*min1, obs.TrafficBytes, "asn:2", 1))
		}
	}
	a.Observe(obsAt(t30+12*min1, halfHourly, "country:UG", 1))
	a.Advance(t30+125*min1, nil)
	for k, want := range map[Key]int64{
		{obs.TrafficBytes, "asn:1"}: min5, {obs.TrafficBytes, "asn:2"}: 20 * min1, {halfHourly, "country:UG"}: 30 * min1,
	} {
		if got := a.Series(k).Step(); got != want {
			t.Errorf("%s: step %d, want %d", k, got, want)
		}
	}
}

// A checkpoint taken inside a coarse bucket restores it: its open value,
// its width and the feed counts of its span so far.
func TestCoarseSeriesSurviveACheckpoint(t *testing.T) {
	run := func(restartAt int64) []string {
		a := New(Config{})
		var l closedLog
		for m := int64(0); m < 60; m += 5 {
			if m == restartAt {
				a = restored(t, a, Config{})
			}
			// The feed delivers in the first 5 minutes only (asn:1), before
			// the restart; asn:2 appears after it.
			if m == 0 {
				a.Observe(obsAt(t30+m*min1+1e9, sevenMin, "asn:1", 3))
			}
			if m == 10 {
				a.Observe(obsAt(t30+m*min1+1e9, sevenMin, "asn:2", 4))
			}
			if m >= 30 {
				a.Observe(obsAt(t30+m*min1+2e9, halfHourly, "country:UG", float64(100+m)))
			}
			a.Advance(t30+m*min1, l.fn)
		}
		a.Advance(t30+60*min1, l.fn)
		var coarse []string
		for _, s := range l {
			if strings.Contains(s, "coarse") {
				coarse = append(coarse, s)
			}
		}
		return coarse
	}
	want := run(-1)
	if got := run(10); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after a restart inside the coarse buckets\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// asn:2 is born in 10-20, while 0-10 is still open: it has no bucket
	// before its first data, however late 0-10 closes.
	if len(want) != 7 || want[0] != "0-10 coarse: test_seven_min{asn:1}=3" || want[1] != "10-20 coarse: test_seven_min{asn:1}=0 test_seven_min{asn:2}=4" {
		t.Fatalf("coarse buckets %q", want)
	}
}

// Spacing is the mean time between readings where they do not fall on a
// grid of their own: a 15-minute export in 5-minute buckets has a 15-minute
// step and spacing alike, but a 10-minute and a 20-minute gap in turn (an
// export every 15 minutes of a signal bucketed every 10) make a 10-minute
// step and a 15-minute spacing. A feed silent for six hours does not move
// it, and a checkpoint keeps it.
func TestSpacingIsTheMeanTimeBetweenReadings(t *testing.T) {
	tenMin := mustDeclare(obs.SignalDef{Name: "test_ten_min", Unit: "/24s", Kind: obs.KindGauge,
		Feed: "test-coarse", Agg: obs.Last, Cadence: 10 * min1})
	a := New(Config{})
	for m := int64(0); m <= 24*60; m += 15 {
		if m >= 6*60 && m < 12*60 {
			continue // the feed's silence
		}
		a.Observe(obsAt(t30+m*min1+1e9, obs.TrafficBytes, "asn:1", 1))
		a.Observe(obsAt(t30+m*min1+1e9, tenMin, "country:XX", 1))
		a.Advance(t30+m*min1, nil)
	}
	a.Advance(t30+25*60*min1, nil)
	for _, agg := range []*Aggregator{a, restored(t, a, Config{})} {
		for k, want := range map[Key][2]int64{
			{obs.TrafficBytes, "asn:1"}: {15 * min1, 15 * min1},
			{tenMin, "country:XX"}:      {10 * min1, 15 * min1},
		} {
			s := agg.Series(k)
			if s.Step() != want[0] || s.Spacing() != want[1] {
				t.Errorf("%s: step %v, spacing %v; want %v and %v", k, s.Step()/min1, s.Spacing()/min1, want[0]/min1, want[1]/min1)
			}
		}
	}
}

// A probe measured every 16 minutes on 5-minute buckets lands 15 and 20
// minutes apart: its step is 5 minutes, every gap is more than twice
// that, and yet it is the series' rhythm, not its silence. Its spacing is
// the mean gap, 16 minutes; a silence of six hours is still left out,
// and a restored aggregator knows the rhythm too.
func TestSpacingOffTheGrid(t *testing.T) {
	a := New(Config{})
	// From minute 4 the buckets go 15, 20, 15 minutes apart: the step is
	// 5 minutes by the second gap.
	for m := int64(4); m <= 24*60; m += 16 {
		if m >= 6*60 && m < 12*60 {
			continue // the feed's silence
		}
		a.Observe(obsAt(t30+m*min1+1e9, obs.TrafficBytes, "probe:1", 1))
		a.Advance(t30+m*min1, nil)
	}
	a.Advance(t30+25*60*min1, nil)
	for _, agg := range []*Aggregator{a, restored(t, a, Config{})} {
		s := agg.Series(Key{obs.TrafficBytes, "probe:1"})
		if sp := float64(s.Spacing()) / float64(min1); s.Step() != 5*min1 || sp < 15.5 || sp > 16.5 {
			t.Errorf("step %v, spacing %.2f minutes; want 5 and 16", s.Step()/min1, sp)
		}
	}
}

// A 30-minute value held on every 5-minute row (as IODA's export holds
// Google's traffic) is read once a value: after twelve changes in a row
// have come every 30 minutes, the repeats between are no points, and the
// series' step is 30 minutes. A noisy series, and a flat one whose value
// changes at a bucket off that grid, keep every bucket; so does a drop,
// which is a change.
func TestHeldValuesAreReadOnce(t *testing.T) {
	a := New(Config{})
	points := map[string][]int64{}
	const drop = 8*60 + 5 // a drop at 08:05, off the 30-minute grid, held on
	for m := int64(0); m < 10*60; m += 5 {
		held := float64(100 + m/30) // a new value every 30 minutes
		if m >= drop {
			held = 50
		}
		a.Observe(obsAt(t30+m*min1+1e9, obs.TrafficBytes, "country:HELD", held))
		a.Observe(obsAt(t30+m*min1+1e9, obs.TrafficBytes, "country:NOISY", float64(100+m%7)))
		a.Advance(t30+m*min1, func(c *Closed) {
			for _, p := range c.Points {
				points[p.Series.Entity] = append(points[p.Series.Entity], (c.Start-t30)/min1)
			}
		})
	}
	var want []int64
	for m := int64(0); m < 10*60-5; m += 5 {
		// Every bucket until the twelfth change (06:00) has shown the
		// grid, then the half hours, and from the drop every bucket.
		if m <= 6*60 || m%30 == 0 || m >= drop {
			want = append(want, m)
		}
	}
	if got := points["country:HELD"]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("held series judged at\n%v\nwant\n%v", got, want)
	}
	if n := len(points["country:NOISY"]); n != 119 {
		t.Errorf("noisy series judged at %d buckets, want all 119", n)
	}
}

// The rhythm is not the shortest gap: a probe whose first two readings
// fall a bucket apart, then every 16 minutes, still has a spacing of 16
// minutes, not of 5.
func TestSpacingAfterAClosePair(t *testing.T) {
	a := New(Config{})
	ms := []int64{0, 6} // buckets 0 and 5
	for m := int64(22); m <= 24*60; m += 16 {
		ms = append(ms, m)
	}
	for _, m := range ms {
		a.Observe(obsAt(t30+m*min1+1e9, obs.TrafficBytes, "probe:1", 1))
		a.Advance(t30+m*min1, nil)
	}
	a.Advance(t30+25*60*min1, nil)
	s := a.Series(Key{obs.TrafficBytes, "probe:1"})
	if sp := float64(s.Spacing()) / float64(min1); sp < 15.5 || sp > 16.5 {
		t.Errorf("spacing %.2f minutes; want 16", sp)
	}
}
