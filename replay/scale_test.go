package replay_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/obsfile"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/rules"
)

// genSource yields one day of an export on the fly, five-minute values of
// one declared signal for n networks, so that a scale run needs no file
// and no memory for its input.
type genSource struct {
	n, i, bucket, buckets int
	t0                    int64
}

func (g *genSource) Name() string { return "generated" }

func (g *genSource) Next() (*ingest.Record, error) {
	if g.i == g.n {
		g.i, g.bucket = 0, g.bucket+1
	}
	if g.bucket == g.buckets {
		return nil, nil
	}
	s := g.i
	g.i++
	t := g.t0 + int64(g.bucket)*300
	line := fmt.Appendf(nil, "%d,asn:%d,bgp_visible_slash24,%d", t, 64512+s, 1000+(g.bucket*7+s)%13)
	return &ingest.Record{Stream: obsfile.Stream, Format: obsfile.FormatCSV, Time: t * 1e9, Value: line}, nil
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// BenchmarkScale replays days of five-minute values for many series
// through the whole pipeline (IODA's declared signals and rules) and
// reports the throughput of the first and of the last day, their ratio
// (whether the cost per record stays flat as history fills) and the live
// heap per series at the end. Sizes from the environment:
//
//	OUTAGEWATCH_SCALE_SERIES=10000 OUTAGEWATCH_SCALE_DAYS=14 go test ./replay -run '^$' -bench Scale -benchtime 1x
func BenchmarkScale(b *testing.B) {
	series := envInt(b, "OUTAGEWATCH_SCALE_SERIES", 1000)
	days := envInt(b, "OUTAGEWATCH_SCALE_DAYS", 14)
	set, err := rules.Load("../examples/ioda/ioda.yaml")
	if err != nil {
		b.Fatal(err)
	}
	const t0 = 1700006400 // a midnight
	var first, last float64
	var heap uint64
	for range b.N {
		p, err := pipeline.New(pipeline.Config{Rules: set}, nil)
		if err != nil {
			b.Fatal(err)
		}
		for d := range days {
			src := &genSource{n: series, buckets: 288, t0: t0 + int64(d)*86400}
			start := time.Now()
			if err := replay.Run(p, []replay.Source{src}, nil); err != nil {
				b.Fatal(err)
			}
			rate := float64(series*288) / time.Since(start).Seconds()
			if d == 0 {
				first = rate
			}
			last = rate
		}
		if st := p.Stats(); st.Series < series || len(st.DecodeErrors) > 0 || st.Late > 0 {
			b.Fatalf("%d series tracked (want %d), decode errors %v, %d late", st.Series, series, st.DecodeErrors, st.Late)
		}
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = ms.HeapAlloc
		runtime.KeepAlive(p)
		b.StartTimer()
	}
	b.ReportMetric(first, "day1-records/s")
	b.ReportMetric(last, fmt.Sprintf("day%d-records/s", days))
	b.ReportMetric(last/first, "last÷first")
	b.ReportMetric(float64(heap)/float64(series), "heap-bytes/series")
}
