package alerting

import (
	"bytes"
	"math"
	"time"

	"github.com/outagewatch/outagewatch/chart"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/words"
)

// ChartUnit returns how to chart a signal declared with unit u: per-bucket
// sums become rates (bytes in a 5-minute bucket → bit/s), ratios
// percentages, and scale is what to multiply the recorded values by.
func ChartUnit(signal string, bucket time.Duration) (chart.Unit, float64) {
	u := ""
	if s, ok := obs.Lookup(signal); ok {
		u = s.Def().Unit
	}
	sec := bucket.Seconds()
	if sec <= 0 {
		sec = 300
	}
	switch u {
	case "bytes":
		return chart.BitsPerSecond, 8 / sec
	case "packets":
		return chart.PacketsPerSecond, 1 / sec
	case "queries":
		return chart.QueriesPerSecond, 1 / sec
	case "ratio":
		return chart.Percent, 1
	case "ms":
		return chart.Milliseconds, 1
	case "Mbps":
		return chart.BitsPerSecond, 1e6
	case "slash24", "slash48":
		// "/24 prefixes", as the text around the chart says.
		return chart.Unit{Name: words.Unit(u)}, 1
	}
	return chart.Unit{Name: u, SI: true}, 1
}

// EvidenceChart draws the buckets an alert (or an event, its headline
// signal) carries: observed and the detector's own baseline, the alert
// shaded. Nil when there are fewer than two.
func EvidenceChart(ev *Event) *chart.Chart {
	if len(ev.Evidence) < 2 {
		return nil
	}
	step := ev.Evidence[1].Time.Sub(ev.Evidence[0].Time)
	if step <= 0 {
		return nil
	}
	unit, scale := ChartUnit(ev.Signal, step)
	start := ev.Evidence[0].Time
	n := int(ev.Evidence[len(ev.Evidence)-1].Time.Sub(start)/step) + 1
	obsv, base := make([]float64, n), make([]float64, n)
	for i := range obsv {
		obsv[i], base[i] = math.NaN(), math.NaN()
	}
	for _, p := range ev.Evidence {
		i := int(p.Time.Sub(start) / step)
		if i < 0 || i >= n {
			continue
		}
		if p.Value != nil {
			obsv[i] = *p.Value * scale
		}
		base[i] = p.Baseline * scale
	}
	title := ev.Labels["display"]
	if ev.Outage != nil && ev.Title != "" {
		title = ev.Title
	}
	if title == "" {
		title = ev.Entity
	}
	end := time.Time{}
	if ev.End != nil {
		end = *ev.End
	}
	return &chart.Chart{Title: title + " · " + ev.Signal + " — " + ev.Detector + " (the buckets the detector kept)", Start: start, Step: step, Unit: unit,
		Series: []chart.Series{{Name: "observed", Values: obsv, Color: chart.ColorObserved, Width: 2},
			{Name: "detector baseline", Values: base, Color: chart.ColorBaseline}},
		Spans: []chart.Span{{From: ev.Start, To: end}}}
}

// ChartPNG draws an event's or alert's evidence as a PNG, with the same
// renderer as the report and the outage page, so a Slack reader sees the
// drop without opening anything. Nil when there is nothing to draw.
func ChartPNG(ev *Event) []byte {
	c := EvidenceChart(ev)
	if c == nil {
		return nil
	}
	var b bytes.Buffer
	if err := c.PNG(&b, 1); err != nil {
		return nil
	}
	return b.Bytes()
}
