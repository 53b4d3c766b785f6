package pipeline_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/obsfile"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/rules"
)

// The service's /metrics and API read a pipeline's stats (the series
// each rule cannot judge among them) while its loop judges buckets: the
// two must not race. Under -race, series whose probing counts fall to a
// few /24s and back, so that the rule marks them unjudgeable and then
// judgeable again, are judged while another goroutine reads the stats.
func TestStatsWhileJudging(t *testing.T) {
	set, err := rules.LoadAll("../examples/ioda/ioda.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Config{Rules: set}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var recs []*ingest.Record
	t0 := int64(1_700_000_000)
	for b := range 3 * 288 {
		for s := range 8 {
			v := 2000
			if (b/144+s)%2 == 1 {
				v = 2 // half a day a handful of /24s: too few to judge
			}
			ts := t0 + int64(b)*300
			line := fmt.Sprintf("%d,asn:%d,active_probing_slash24,%d", ts, 64512+s, v)
			recs = append(recs, &ingest.Record{Stream: obsfile.Stream, Format: obsfile.FormatCSV, Time: ts * 1e9, Value: []byte(line)})
		}
	}
	var done atomic.Bool
	var saw atomic.Int64
	read := make(chan struct{})
	go func() {
		defer close(read)
		for !done.Load() {
			if st := p.Stats(); len(st.Unjudgeable) > 0 {
				saw.Add(1)
			}
		}
	}()
	err = replay.Run(p, []replay.Source{replay.NewSliceSource("gen", recs)}, nil)
	done.Store(true)
	<-read
	if err != nil {
		t.Fatal(err)
	}
	if saw.Load() == 0 {
		t.Fatal("the reader never saw an unjudgeable series: the test would prove little")
	}
}
