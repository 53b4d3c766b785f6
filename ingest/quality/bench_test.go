package quality

import (
	"math"
	"math/rand/v2"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/obs"
)

// cpuTime is the process's user+system CPU time. The machine the benchmarks
// run on is shared, so wall-clock ns/op swings with other load; CPU time
// per op (the benchmark is single-threaded and allocation-free) does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds CPU-time figures to a benchmark that started at cpu0.
func reportCPU(b *testing.B, cpu0 time.Duration, unit string) {
	cpu := (cpuTime() - cpu0).Seconds()
	if cpu > 0 {
		b.ReportMetric(cpu*1e9/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(b.N)/cpu, unit+"/cpu-s")
	}
}

// accumulate stands in for the aggregator: one accumulator per (signal,
// entity) of the open bucket, found through a map with the same
// last-series shortcut the aggregator takes.
type accumulate struct {
	accs     map[accKey]obs.Accumulator
	lastKey  accKey
	last     obs.Accumulator
	observed int
}

type accKey struct {
	sig obs.Signal
	ent string
}

func (a *accumulate) Observe(o *obs.Observation) {
	a.observed++
	if a.last == nil || a.lastKey.sig != o.Signal || a.lastKey.ent != o.Entity {
		k := accKey{o.Signal, o.Entity}
		acc := a.accs[k]
		if acc == nil {
			acc = o.Signal.Def().NewAccumulator()
			a.accs[k] = acc
		}
		a.lastKey, a.last = k, acc
	}
	a.last.Add(o)
}

// benchMeasurements renders n single-RTT measurements from a spread of
// probes, networks, transits and destinations.
func benchMeasurements(n int) [][]byte {
	r := rand.New(rand.NewPCG(7, 7))
	countries := []string{"PT", "ES", "FR", "DE", "NL", "GB", "IT", "BE", "CH", "AT"}
	sites := []string{"lis01", "mad02", "par03"}
	transits := []uint32{1299, 3356, 174, 6762}
	out := make([][]byte, n)
	for i := range out {
		asn := uint32(64500 + r.IntN(200))
		m := Measurement{
			Time:       1745836500e9 + int64(i)*1e7,
			Probe:      "probe",
			Site:       sites[r.IntN(len(sites))],
			SrcASN:     asn,
			Country:    countries[asn%10],
			Dst:        netip.AddrFrom4([4]byte{198, 51, byte(r.IntN(250)), byte(1 + r.IntN(250))}),
			DstASN:     15169,
			TransitASN: transits[r.IntN(len(transits))],
			RTTms:      []float64{math.Round(math.Exp(math.Log(22)+0.4*r.NormFloat64())*1000) / 1000},
			Sent:       10,
			Rcvd:       uint32(9 + r.IntN(2)),
		}
		out[i] = AppendJSON(nil, &m)
	}
	return out
}

func BenchmarkDecodeAccumulate(b *testing.B) {
	recs := benchMeasurements(1 << 12)
	d := NewDecoder(nil)
	sink := &accumulate{accs: map[accKey]obs.Accumulator{}}
	var bytes int
	for _, r := range recs { // warm the caches and accumulators
		if err := d.Decode(r, sink); err != nil {
			b.Fatal(err)
		}
		bytes += len(r)
	}
	sink.observed = 0
	b.SetBytes(int64(bytes / len(recs)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		if err := d.Decode(recs[i&(len(recs)-1)], sink); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0, "measurements")
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/sec, "measurements/s")
	b.ReportMetric(float64(sink.observed)/float64(b.N), "obs/measurement")
	b.ReportMetric(float64(len(sink.accs)), "series")
}

func BenchmarkDecodeOnly(b *testing.B) {
	recs := benchMeasurements(1 << 12)
	d := NewDecoder(nil)
	var sink obs.SinkFunc = func(*obs.Observation) {}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		if err := d.Decode(recs[i&(len(recs)-1)], sink); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0, "measurements")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "measurements/s")
}

func BenchmarkAtlasDecodeAccumulate(b *testing.B) {
	lines := readLines(b, "testdata/ping-results.jsonl")
	d := NewAtlasDecoder(atlasMap())
	sink := &accumulate{accs: map[accKey]obs.Accumulator{}}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		if err := d.Decode(lines[i%len(lines)], sink); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0, "results")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "results/s")
}
