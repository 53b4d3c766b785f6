package pipeline_test

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	flowpb "github.com/netsampler/goflow2/v2/pb"

	"github.com/outagewatch/outagewatch/ingest"
	_ "github.com/outagewatch/outagewatch/ingest/flows"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/scenario"
)

// fixtureRecords renders the Uganda fixture's goflow2 records (protobuf or
// JSON): 34 series over four weeks, as a collector would send them.
func fixtureRecords(b *testing.B, format string) (*scenario.Spec, []*ingest.Record) {
	return streamRecords(b, "../fixtures/uganda-2021-01-13.yaml", "flows", format)
}

// rendered keeps each stream rendered once per test binary: testing runs
// a benchmark function again for every b.N it tries, and rendering four
// weeks of a fixture costs far more than the replay being measured.
var rendered sync.Map // renderKey → renderedStream

type renderKey struct{ file, stream, format string }

type renderedStream struct {
	spec *scenario.Spec
	recs []*ingest.Record
}

// streamRecords renders one stream of a fixture. The records are shared
// between runs: the pipeline only reads them.
func streamRecords(b *testing.B, file, stream, flowFormat string) (*scenario.Spec, []*ingest.Record) {
	b.Helper()
	k := renderKey{file, stream, flowFormat}
	if r, ok := rendered.Load(k); ok {
		return r.(renderedStream).spec, r.(renderedStream).recs
	}
	spec, err := scenario.Load(file)
	if err != nil {
		b.Fatal(err)
	}
	if flowFormat != "" {
		spec.Flows.Format = flowFormat
	}
	srcs, err := replay.RenderSpec(spec)
	if err != nil {
		b.Fatal(err)
	}
	all, err := replay.Collect(srcs...)
	if err != nil {
		b.Fatal(err)
	}
	var recs []*ingest.Record
	for _, r := range all {
		if r.Stream == stream {
			recs = append(recs, r)
		}
	}
	rendered.Store(k, renderedStream{spec, recs})
	return spec, recs
}

// benchPipeline pushes records through decode, aggregation, detection and
// alerting, advancing the watermark as replay does.
func benchPipeline(b *testing.B, format string) {
	spec, recs := fixtureRecords(b, format)
	benchRecords(b, spec, recs)
}

func benchRecords(b *testing.B, spec *scenario.Spec, recs []*ingest.Record) {
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	n := 0
	for n < b.N {
		b.StopTimer()
		p, err := pipeline.New(pipeline.Config{Map: spec.Map(), LocalASNs: spec.LocalASNs}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu -= cpuTime(b)
		var lastAdv int64
		for _, r := range recs {
			if n == b.N {
				break
			}
			if err := p.Process(r); err != nil {
				b.Fatal(err)
			}
			if wm := r.Time - 60e9; wm-lastAdv >= 1e9 {
				p.Advance(wm)
				lastAdv = wm
			}
			n++
		}
		cpu += cpuTime(b)
	}
	reportRates(b, cpu)
}

// reportRates reports records per second of wall time, and per second of
// the processor time the process used meanwhile (garbage collection on
// other threads included): on a shared machine the load moves the first
// far more than the second.
func reportRates(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.N)/cpu.Seconds(), "records/cpu-s")
}

// cpuTime is the processor time (user and system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkPipelineGoflowProto(b *testing.B) { benchPipeline(b, "goflow2-pb") }
func BenchmarkPipelineGoflowJSON(b *testing.B)  { benchPipeline(b, "goflow2-json") }

// BenchmarkPipelineDnstap: the Iberian blackout's resolver stream, one
// dnstap frame a query, through decode, aggregation (query counts, the
// distinct-client sketch, failure ratios per network, country and zone) and
// the DNS detectors.
func BenchmarkPipelineDnstap(b *testing.B) {
	spec, recs := streamRecords(b, "../fixtures/iberia-2025-04-28.yaml", "dns", "")
	benchRecords(b, spec, recs)
}

// BenchmarkPipelineQuality: the Telia fixture's probe measurements through
// decode, P² quantiles and loss per network, transit and path, and the
// latency, bandwidth and packet-loss detectors.
func BenchmarkPipelineQuality(b *testing.B) {
	spec, recs := streamRecords(b, "../fixtures/telia-2019-06-20.yaml", "quality", "")
	benchRecords(b, spec, recs)
}

// BenchmarkBareProtoUnmarshal is the yardstick: proto.Unmarshal of the same
// records into goflow2's own type, doing nothing with them.
func BenchmarkBareProtoUnmarshal(b *testing.B) {
	_, recs := fixtureRecords(b, "goflow2-pb")
	var m flowpb.FlowMessage
	b.ReportAllocs()
	b.ResetTimer()
	cpu := -cpuTime(b)
	for i := 0; i < b.N; i++ {
		v := recs[i%len(recs)].Value
		// goflow2's Kafka framing is a varint length prefix.
		_, n := protowireLen(v)
		m.Reset()
		if err := proto.Unmarshal(v[n:], &m); err != nil {
			b.Fatal(err)
		}
	}
	cpu += cpuTime(b)
	reportRates(b, cpu)
}

func protowireLen(b []byte) (uint64, int) {
	var x uint64
	for i, c := range b {
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}
