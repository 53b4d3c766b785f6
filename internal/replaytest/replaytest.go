// Package replaytest replays a bundled fixture through the whole pipeline
// for the tests of what draws a replay (the outage page, the report): the
// alerts and outage events in emission order, and the record of observed
// series behind their charts.
package replaytest

import (
	"testing"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart/recorder"
	"github.com/outagewatch/outagewatch/fixtures"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/scenario"
)

// Fixture replays the bundled fixture name, recording its series.
func Fixture(t testing.TB, name string) (*recorder.Recorder, []alerting.Event) {
	t.Helper()
	b, ok := fixtures.Read(name)
	if !ok {
		t.Fatalf("no fixture %s", name)
	}
	spec, err := scenario.Parse(name, b)
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := replay.RenderSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := recorder.New()
	var events []alerting.Event
	keep := func(ev *alerting.Event) { events = append(events, *ev) }
	p, err := pipeline.New(pipeline.Config{Map: spec.Map(), LocalASNs: spec.LocalASNs, Tap: rec.Bucket, Events: keep}, keep)
	if err != nil {
		t.Fatal(err)
	}
	if err := replay.Run(p, srcs, nil); err != nil {
		t.Fatal(err)
	}
	return rec, events
}
