package quantile

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/influxdata/tdigest"
)

// Benchmarks of one bucket's summary, the sketch against P² (what it
// replaced; it cannot merge) and a t-digest (the other mergeable choice,
// influxdata/tdigest at compression 100), on real RTTs: the 25 Atlas
// series laid end to end, cut into buckets of 16 samples (a network's
// probes in five minutes) and of 1024 (a country's). Run with
//
//	go test -run '^$' -bench . -benchtime 200ms ./quantile
//
// Each summary reports state_B, the bytes of its binary form for one
// bucket, and heap_B, the bytes it holds in memory. The machine is shared,
// so every benchmark also reports cpu-ns/op, the process's CPU time per
// operation, which other load disturbs less than wall-clock ns/op.

var atlasPool []float64

func pool(b *testing.B) []float64 {
	if atlasPool == nil {
		series := readAtlas(b)
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range series {
				if !yield(k) {
					return
				}
			}
		}) {
			atlasPool = append(atlasPool, series[k]...)
		}
	}
	return atlasPool
}

// summary is what the benchmarks drive; q is read by Result.
type summary interface {
	add(x float64)
	result(q float64) float64
	reset()
	merge(o summary) bool // false: cannot merge
	marshal() []byte
	unmarshal(b []byte) error
}

type sketchSum struct{ s Sketch }

func (s *sketchSum) add(x float64)            { s.s.Add(x) }
func (s *sketchSum) result(q float64) float64 { return s.s.Quantile(q) }
func (s *sketchSum) reset()                   { s.s.Reset() }
func (s *sketchSum) merge(o summary) bool     { return s.s.Merge(&o.(*sketchSum).s) == nil }
func (s *sketchSum) marshal() []byte          { b, _ := s.s.MarshalBinary(); return b }
func (s *sketchSum) unmarshal(b []byte) error { return s.s.UnmarshalBinary(b) }

type p2Sum struct{ p *P2 }

func (s *p2Sum) add(x float64)            { s.p.Add(x) }
func (s *p2Sum) result(float64) float64   { return s.p.Quantile() }
func (s *p2Sum) reset()                   { s.p.Reset() }
func (s *p2Sum) merge(summary) bool       { return false }
func (s *p2Sum) marshal() []byte          { b, _ := s.p.MarshalBinary(); return b }
func (s *p2Sum) unmarshal(b []byte) error { return s.p.UnmarshalBinary(b) }

type tdSum struct{ t *tdigest.TDigest }

func (s *tdSum) add(x float64)            { s.t.Add(x, 1) }
func (s *tdSum) result(q float64) float64 { return s.t.Quantile(q) }
func (s *tdSum) reset()                   { s.t.Reset() }
func (s *tdSum) merge(o summary) bool     { s.t.AddCentroidList(o.(*tdSum).t.Centroids()); return true }

// influxdata/tdigest has no binary form: its centroids (mean, weight) as
// float64 pairs stand for one.
func (s *tdSum) marshal() []byte {
	cs := s.t.Centroids()
	b := make([]byte, 0, 16*len(cs))
	for _, c := range cs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.Mean))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.Weight))
	}
	return b
}
func (s *tdSum) unmarshal([]byte) error { return fmt.Errorf("no binary form") }

var kinds = []struct {
	name string
	new  func() summary
}{
	{"sketch", func() summary { return &sketchSum{} }},
	{"p2", func() summary { return &p2Sum{NewP2(0.95)} }},
	{"tdigest", func() summary { return &tdSum{tdigest.NewWithCompression(100)} }},
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs f as a benchmark and reports its CPU time per op.
func measure(b *testing.B, f func(b *testing.B)) {
	b.ReportAllocs()
	cpu0 := cpuTime()
	f(b)
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

func filled(k func() summary, xs []float64) summary {
	s := k()
	for _, x := range xs {
		s.add(x)
	}
	return s
}

func BenchmarkSummary(b *testing.B) {
	data := pool(b)
	for _, size := range []int{16, 1024} {
		nb := len(data) / size
		bucket := func(i int) []float64 { i %= nb; return data[i*size : (i+1)*size] }
		for _, k := range kinds {
			name := fmt.Sprintf("%s/bucket=%d", k.name, size)
			// add: one sample into a pooled summary, Reset between buckets.
			b.Run(name+"/add", func(b *testing.B) {
				s := k.new()
				i := 0
				measure(b, func(b *testing.B) {
					for b.Loop() {
						if i%size == 0 {
							s.reset()
						}
						s.add(data[i%(nb*size)])
						i++
					}
				})
			})
			b.Run(name+"/result", func(b *testing.B) {
				s := filled(k.new, bucket(7))
				measure(b, func(b *testing.B) {
					for b.Loop() {
						_ = s.result(0.95)
					}
				})
			})
			if k.new().merge(k.new()) {
				b.Run(name+"/merge", func(b *testing.B) {
					parts := []summary{filled(k.new, bucket(1)), filled(k.new, bucket(2))}
					into := k.new()
					measure(b, func(b *testing.B) {
						for b.Loop() {
							into.reset()
							into.merge(parts[0])
							into.merge(parts[1])
						}
					})
				})
			}
			b.Run(name+"/marshal", func(b *testing.B) {
				s := filled(k.new, bucket(3))
				var n int
				measure(b, func(b *testing.B) {
					for b.Loop() {
						n = len(s.marshal())
					}
				})
				b.ReportMetric(float64(n), "state_B")
				b.ReportMetric(heapOf(k.new, bucket), "heap_B")
			})
			if k.new().unmarshal(filled(k.new, bucket(4)).marshal()) == nil {
				b.Run(name+"/unmarshal", func(b *testing.B) {
					bs := filled(k.new, bucket(4)).marshal()
					s := k.new()
					measure(b, func(b *testing.B) {
						for b.Loop() {
							if err := s.unmarshal(bs); err != nil {
								b.Fatal(err)
							}
						}
					})
				})
			}
		}
	}
}

// heapOf is the heap one summary of a bucket holds, averaged over 64
// buckets kept alive at once, as the open buckets of many series are.
func heapOf(k func() summary, bucket func(int) []float64) float64 {
	const n = 64
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	held := make([]summary, n)
	for i := range held {
		held[i] = filled(k, bucket(i))
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(held)
	return (float64(m1.HeapAlloc) - float64(m0.HeapAlloc) - float64(n*16)) / n
}
