package replay_test

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
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
	signal                string
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
	// strconv rather than fmt: the generator's cost counts in the figures.
	line := make([]byte, 0, 48)
	line = strconv.AppendInt(line, t, 10)
	line = append(line, ",asn:"...)
	line = strconv.AppendInt(line, int64(64512+s), 10)
	line = append(append(append(line, ','), g.signal...), ',')
	line = strconv.AppendInt(line, int64(1000+(g.bucket*7+s)%13), 10)
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

// scaleRules are the rule sets a scale run can use: IODA's declared
// signals and rules (prefix_withdrawal against the median of a day, ±0.1 %
// history), or one default-format volume signal judged by traffic_drop
// (similar days).
var scaleRules = map[string]struct{ file, signal string }{
	"ioda":    {"../examples/ioda/ioda.yaml", "bgp_visible_slash24"},
	"traffic": {"testdata/scale-traffic.yaml", "scale_traffic_bytes"},
}

// residentBytes reads the resident set (VmRSS) or its peak (VmHWM) of
// this process from /proc: the memory the machine must have, which the
// live heap understates by the garbage collector's headroom.
func residentBytes(b *testing.B, field string) float64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	for line := range strings.Lines(string(st)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatalf("%s: %v", field, err)
			}
			return kb * 1024
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// cpuSeconds is the processor time this process has used (user and
// system, every thread): a day's throughput per second of it moves much
// less with the load of a shared machine than per second of wall time.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// writeHeapProfile writes the heap profile while the pipeline is still
// live: the one `go test -memprofile` writes comes after the benchmark,
// when the pipeline is garbage.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkScale replays days of five-minute values for many series
// through the whole pipeline and reports the throughput of the first and
// of the last day, their ratio (whether the cost per record stays flat as
// history fills), the same per second of processor time, and the memory
// per series at the end: live heap, and
// resident memory from /proc (the process's peak, less what it held
// before the pipeline started). Sizes and rules from the environment:
//
//	OUTAGEWATCH_SCALE_SERIES=10000 OUTAGEWATCH_SCALE_DAYS=14 OUTAGEWATCH_SCALE_RULES=traffic go test ./replay -run '^$' -bench Scale -benchtime 1x
//
// OUTAGEWATCH_SCALE_RULES is ioda (the default) or traffic.
// OUTAGEWATCH_SCALE_MEMLIMIT=5000 runs under a soft memory limit of what
// the runtime held before the pipeline plus that many bytes per series
// (debug.SetMemoryLimit, as --memory-limit sets it), to measure the peak
// an operator provisions with a limit and the collections it costs.
// OUTAGEWATCH_SCALE_RESTORE_DAYS=13 restores the stage-two aggregator
// from a checkpoint holding the first 13 days' history of every series
// (restoreHistory), so that only the last day replays: day 1 in the
// figures is then the first day replayed. The memory figures then cover
// the full history, the state detectors build in a day of judging it, and
// the peak of that day.
// OUTAGEWATCH_SCALE_HEAPPROFILE=file writes a heap profile at the end, the
// pipeline still live.
func BenchmarkScale(b *testing.B) {
	series := envInt(b, "OUTAGEWATCH_SCALE_SERIES", 1000)
	days := envInt(b, "OUTAGEWATCH_SCALE_DAYS", 14)
	name := cmp.Or(os.Getenv("OUTAGEWATCH_SCALE_RULES"), "ioda")
	rs, ok := scaleRules[name]
	if !ok {
		b.Fatalf("OUTAGEWATCH_SCALE_RULES=%q: want ioda or traffic", name)
	}
	set, err := rules.Load(rs.file)
	if err != nil {
		b.Fatal(err)
	}
	limitPerSeries := envInt(b, "OUTAGEWATCH_SCALE_MEMLIMIT", 0)
	restore := envInt(b, "OUTAGEWATCH_SCALE_RESTORE_DAYS", -1)
	if restore >= days {
		b.Fatalf("OUTAGEWATCH_SCALE_RESTORE_DAYS=%d: want fewer than the %d days of the run", restore, days)
	}
	restore = max(restore, 0)
	const t0 = 1700006400 // a midnight
	var first, last, firstCPU, lastCPU, heap, rss, peak, gcs float64
	for range b.N {
		b.StopTimer()
		runtime.GC()
		debug.FreeOSMemory()
		rss0 := residentBytes(b, "VmRSS")
		if limitPerSeries > 0 {
			// What the runtime holds already, plus the limit per series:
			// the setting an operator would derive from the scale table.
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(runtimeTotal() + int64(series)*int64(limitPerSeries)))
		}
		var ms0 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		b.StartTimer()
		p, err := pipeline.New(pipeline.Config{Rules: set}, nil)
		if err != nil {
			b.Fatal(err)
		}
		from := 0
		if restore > 0 {
			restoreHistory(b, p.Aggregator(), series, restore, t0, rs.signal)
			from = restore
			// The peak from here on: the restore's own buffers are not
			// what a run with this much history holds.
			runtime.GC()
			debug.FreeOSMemory()
			resetPeak(b)
		}
		for d := from; d < days; d++ {
			src := &genSource{n: series, buckets: 288, t0: t0 + int64(d)*86400, signal: rs.signal}
			start, cpu0 := time.Now(), cpuSeconds(b)
			if err := replay.Run(p, []replay.Source{src}, nil); err != nil {
				b.Fatal(err)
			}
			rate := float64(series*288) / time.Since(start).Seconds()
			cpuRate := float64(series*288) / (cpuSeconds(b) - cpu0)
			if d == from {
				first, firstCPU = rate, cpuRate
			}
			last, lastCPU = rate, cpuRate
		}
		if st := p.Stats(); st.Series < series || len(st.DecodeErrors) > 0 || st.Late > 0 {
			b.Fatalf("%d series tracked (want %d), decode errors %v, %d late", st.Series, series, st.DecodeErrors, st.Late)
		}
		b.StopTimer()
		peak = residentBytes(b, "VmHWM") - rss0
		runtime.GC()
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = float64(ms.HeapAlloc)
		gcs = float64(ms.NumGC - ms0.NumGC - 1) // less the one just above
		rss = residentBytes(b, "VmRSS") - rss0
		if path := os.Getenv("OUTAGEWATCH_SCALE_HEAPPROFILE"); path != "" {
			writeHeapProfile(b, path)
		}
		runtime.KeepAlive(p)
		b.StartTimer()
	}
	if restore > 0 {
		b.ReportMetric(float64(restore), "restored-days")
	}
	b.ReportMetric(first, "day1-records/s")
	b.ReportMetric(last, fmt.Sprintf("day%d-records/s", days))
	b.ReportMetric(last/first, "last÷first")
	b.ReportMetric(firstCPU, "day1-records/cpu-s")
	b.ReportMetric(lastCPU, fmt.Sprintf("day%d-records/cpu-s", days))
	b.ReportMetric(lastCPU/firstCPU, "cpu-last÷first")
	b.ReportMetric(heap/float64(series), "heap-bytes/series")
	b.ReportMetric(rss/float64(series), "rss-bytes/series")
	b.ReportMetric(peak/float64(series), "peak-rss-bytes/series")
	b.ReportMetric(gcs, "gc-cycles")
	if limitPerSeries > 0 {
		b.ReportMetric(float64(limitPerSeries), "limit-bytes/series")
	}
}

// runtimeTotal is all the memory the Go runtime has mapped (heap, stacks,
// its own structures), which is what a soft memory limit bounds.
func runtimeTotal() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
