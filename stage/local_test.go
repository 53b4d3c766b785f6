package stage_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/scenario"
	"github.com/outagewatch/outagewatch/stage"
)

type rendered struct {
	spec *scenario.Spec
	recs []*ingest.Record
}

func render(t *testing.T, file string) rendered {
	t.Helper()
	spec, err := scenario.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := replay.RenderSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := replay.Collect(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	return rendered{spec, recs}
}

func (r rendered) config(out *bytes.Buffer) (pipeline.Config, func(*alerting.Event)) {
	sink := alerting.NewJSONL("test", out)
	send := func(ev *alerting.Event) { _ = sink.Send(context.Background(), ev) }
	return pipeline.Config{Map: r.spec.Map(), LocalASNs: r.spec.LocalASNs, Events: send}, send
}

// single is what `outagewatch replay` prints: one pipeline.
func (r rendered) single(t *testing.T) []string {
	var out bytes.Buffer
	cfg, send := r.config(&out)
	p, err := pipeline.New(cfg, send)
	if err != nil {
		t.Fatal(err)
	}
	if err := replay.Run(p, []replay.Source{replay.NewSliceSource("all", clone(r.recs))}, nil); err != nil {
		t.Fatal(err)
	}
	return lines(out.String())
}

// how a staged run advances: every advance of event time (replay.Run's
// 1 s by default), and every restore-th advance it takes each task's
// snapshot and goes on with a new task restored from it (0: never).
type how struct {
	advance int64
	restore int
}

// staged runs the records through sources × partitions, advancing the
// watermark as h says.
func (r rendered) staged(t *testing.T, split, partitions int, h how) []string {
	if h.advance == 0 {
		h.advance = 1e9
	}
	var out bytes.Buffer
	cfg, send := r.config(&out)
	var sources []string
	for _, rec := range r.recs {
		for i := range split {
			if s := fmt.Sprintf("%s/%d", rec.Stream, i); !slices.Contains(sources, s) {
				sources = append(sources, s)
			}
		}
	}
	l, err := stage.NewLocal(cfg, sources, partitions, send)
	if err != nil {
		t.Fatal(err)
	}
	// A stream's records go round-robin to its sources, as a producer
	// spreads them over partitions; BGP stays whole, as every stage-one
	// instance reads all of it.
	n := map[string]int{}
	l.SourceOf = func(rec *ingest.Record) string {
		i := n[rec.Stream] % split
		if rec.Stream == "bgp" {
			i = 0
		}
		return fmt.Sprintf("%s/%d", rec.Stream, i)
	}
	var lastAdv, last int64
	advances := 0
	for _, rec := range clone(r.recs) {
		_ = l.Process(rec)
		n[rec.Stream]++
		last = max(last, rec.Time)
		if last-lastAdv < h.advance {
			continue
		}
		if err := l.Advance(last); err != nil {
			t.Fatal(err)
		}
		lastAdv = last
		if advances++; h.restore > 0 && advances%h.restore == 0 {
			for i, task := range l.Tasks() {
				b, err := task.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				nt, err := stage.NewPartitionTask(cfg, send, sources, i)
				if err != nil {
					t.Fatal(err)
				}
				if err := nt.UnmarshalBinary(b); err != nil {
					t.Fatal(err)
				}
				l.Tasks()[i] = nt // Tasks is the Local's own slice
			}
		}
	}
	if err := l.Advance(last); err != nil {
		t.Fatal(err)
	}
	return lines(out.String())
}

func clone(recs []*ingest.Record) []*ingest.Record {
	out := make([]*ingest.Record, len(recs))
	for i, r := range recs {
		c := *r
		out[i] = &c
	}
	return out
}

func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func diff(t *testing.T, name string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	t.Errorf("%s: %d lines, want %d", name, len(got), len(want))
	for _, l := range got {
		if !slices.Contains(want, l) {
			t.Logf("extra: %.300s", l)
		}
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			t.Logf("missing: %.300s", l)
		}
	}
}

// Stage one split per stream and stage two in one partition give the very
// bytes of one pipeline; split over several partitions, the same lines
// (in another interleaving: each partition emits its own). So do tasks
// that merge an hour of buckets' partials before closing them, as a live
// task catching up does, and tasks restored from their snapshots every
// day: a series born in a bucket merged before the earlier ones closed
// once had those earlier buckets as missing values, which moved its
// history and, weeks later, Uganda's DNS alerts.
func TestStagesEqualOnePipeline(t *testing.T) {
	for _, f := range []string{"virginmedia-2023-04-04", "telia-2019-06-20", "uganda-2021-01-13"} {
		t.Run(f, func(t *testing.T) {
			r := render(t, "../fixtures/"+f+".yaml")
			want := r.single(t)
			if len(want) == 0 {
				t.Fatal("the fixture raised nothing")
			}
			diff(t, "1 source per stream, 1 partition", r.staged(t, 1, 1, how{}), want)
			sorted := slices.Sorted(slices.Values(want))
			got := r.staged(t, 3, 4, how{})
			slices.Sort(got)
			diff(t, "3 sources per stream, 4 partitions", got, sorted)
			got = r.staged(t, 3, 2, how{advance: 3600e9, restore: 24})
			slices.Sort(got)
			diff(t, "advanced hourly, restored daily", got, sorted)
		})
	}
}
