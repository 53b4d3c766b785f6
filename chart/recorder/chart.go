package recorder

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/words"
)

// Chart returns the chart of series k (as "signal{entity}") around its
// alerts: from a day before the first to a day after the last resolve (or
// the end of the data). See ChartBetween.
func (r *Recorder) Chart(k string, evs []alerting.Event) *chart.Chart {
	return r.ChartBetween(k, evs, time.Time{}, time.Time{})
}

// ChartBetween returns the chart of series k from from to to (zero: a day
// either side of evs, the notifications of its alerts): the observed
// values, the baseline, the same time last week, and each alert shaded
// from start to resolve. It returns nil if nothing was recorded for k.
//
// The baseline is the one the detector judged against (see track), and
// when a chart has more buckets than points the observed line keeps each
// run's extreme in the direction its alerts went, with the run's range as
// a band: a one-bucket peak is drawn at its bucket's value.
func (r *Recorder) ChartBetween(k string, evs []alerting.Event, from, to time.Time) *chart.Chart {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t := r.track(k, evs, from, to)
	if t == nil {
		return nil
	}
	observed, baseline, lastWeek := t.observed, t.baseline, t.lastWeek
	var lo, hi []float64
	step := t.step
	if n := len(observed); n > maxPoints {
		f := (n + maxPoints - 1) / maxPoints
		observed, lo, hi = chart.Downsample(observed, f, t.keep)
		lastWeek, _, _ = chart.Downsample(lastWeek, f, t.keep)
		baseline, _, _ = chart.Downsample(baseline, f, chart.KeepMean)
		step *= time.Duration(f)
	}
	c := &chart.Chart{
		Title: k, Start: t.from, Step: step, Unit: t.unit,
		Series: []chart.Series{
			{Name: "observed" + t.per, Values: observed, Lo: lo, Hi: hi, Color: chart.ColorObserved, Width: 2},
			{Name: t.legend, Values: baseline, Color: chart.ColorBaseline},
			{Name: "same time last week", Values: lastWeek, Color: chart.ColorLastWeek, Dash: true},
		},
	}
	var dets []string
	for _, ev := range evs {
		if d := ev.Labels["display"]; d != "" && !strings.Contains(c.Title, d) {
			c.Title = d + " · " + k
		}
		if !slices.Contains(dets, ev.Detector) {
			dets = append(dets, ev.Detector)
		}
	}
	for _, sp := range t.spans {
		c.Spans = append(c.Spans, chart.Span{From: time.Unix(0, sp.from).UTC(), To: spanTo(sp)})
	}
	if len(dets) > 0 {
		c.Title += " — " + strings.Join(dets, ", ")
	}
	return c
}

func spanTo(sp span) time.Time {
	if sp.open {
		return time.Time{}
	}
	return time.Unix(0, sp.to).UTC()
}

// span is one alert of a series, from its start to its resolve (open:
// still firing), with the baseline the detector reported.
type span struct {
	from, to int64
	open     bool
	method   string
	base     float64
	fired    bool // method and base are the firing notification's
	// judged is the baseline of each bucket the alert's notifications
	// carry as evidence ("b"), by bucket start.
	judged map[int64]float64
}

func (sp span) holds(t int64) bool { return t >= sp.from && (sp.open || t < sp.to) }

// spans returns the alerts among evs (a firing notification, and its
// resolve if there was one) as spans, in start order.
func spans(evs []alerting.Event) []span {
	byID := map[string]*span{}
	var order []string
	for _, ev := range evs {
		sp := byID[ev.ID]
		if sp == nil {
			sp = &span{from: ev.Start.UnixNano(), open: true, judged: map[int64]float64{}}
			byID[ev.ID] = sp
			order = append(order, ev.ID)
		}
		// The firing notification says what the detector judged against.
		if !sp.fired && (ev.Status == alerting.Firing || sp.method == "") {
			sp.method, sp.base, sp.fired = ev.BaselineMethod, ev.Baseline, ev.Status == alerting.Firing
		}
		if ev.Status == alerting.Resolved && ev.End != nil {
			sp.to, sp.open = ev.End.UnixNano(), false
		}
		for _, p := range ev.Evidence {
			if !math.IsNaN(p.Baseline) && !p.Time.Before(ev.Start) {
				sp.judged[p.Time.UnixNano()] = p.Baseline
			}
		}
	}
	out := make([]span, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	return out
}

// heldMethods are the baselines a detector holds still while its alert
// fires: a recent level, frozen at onset so the outage never becomes its
// own baseline. The others (similar_days, previous_days,
// same_time_previous_days) follow the time of day.
var heldMethods = map[string]bool{"median_recent": true, "recent_median": true, "max_recent": true, "threshold": true, "previous_hour": true}

func held(method string) bool {
	return heldMethods[method] || strings.HasPrefix(method, "p") && strings.HasSuffix(method, "_recent")
}

// MethodWords says what a detector's baseline method means, for legends.
func MethodWords(method string) string {
	switch method {
	case "similar_days":
		return "same time on similar previous days"
	case "previous_days":
		return "same time on previous days"
	case "same_time_previous_days":
		return "same time on previous days"
	case "median_recent", "recent_median":
		return "median of the hours before onset"
	case "max_recent":
		return "recent maximum"
	case "previous_hour":
		return "level of the hour before onset"
	case "threshold":
		return "fixed threshold"
	case "previous_weeks":
		return "same time on previous weeks"
	}
	if strings.HasPrefix(method, "p") && strings.HasSuffix(method, "_recent") {
		return strings.TrimSuffix(strings.TrimPrefix(method, "p"), "_recent") + "th percentile of recent buckets"
	}
	return strings.ReplaceAll(method, "_", " ")
}

// track is one series over a chart's window, bucket by bucket, in the
// chart's unit.
type track struct {
	from                         time.Time
	step                         time.Duration
	unit                         chart.Unit
	observed, baseline, lastWeek []float64
	spans                        []span
	legend                       string
	keep                         chart.Keep
	// per is what the observed line's legend adds for a count per
	// bucket that the axis shows as a count, not a rate (", per 5 min"
	// for withdrawals): the axis says "300 prefixes", as the page says
	// "315 prefixes per 5 min".
	per string
}

// track builds series k's values over [from, to] (zero: a day either side
// of evs). Its baseline, bucket by bucket:
//
//   - inside an alert, the baseline the detector judged against: the value
//     its notifications carry for that bucket as evidence, else, for a
//     baseline the detector holds while firing (a recent median), the one
//     it reported; for a baseline that follows the time of day, the median
//     of the same time on previous weeks (or days) as below;
//   - elsewhere the median of the same time on up to four previous weeks,
//     or, with no week of history, on up to six previous days;
//
// and no bucket inside an alert ever feeds a median: a five-day shutdown
// does not drag its own baseline down. The caller holds r.mu.
func (r *Recorder) track(k string, evs []alerting.Event, from, to time.Time) *track {
	s := r.series[k]
	if s == nil || len(s.values) == 0 || r.width <= 0 {
		return nil
	}
	w := r.width
	last0 := s.start + int64(len(s.values)-1)*w
	lo, hi := s.start, last0
	if !from.IsZero() || !to.IsZero() {
		if !from.IsZero() {
			lo = max(from.UnixNano(), s.start)
		}
		if !to.IsZero() {
			hi = min(to.UnixNano(), last0)
		}
	} else if len(evs) > 0 {
		first, last := evs[0].Start.UnixNano(), evs[0].At.UnixNano()
		for _, ev := range evs {
			first = min(first, ev.Start.UnixNano())
			last = max(last, ev.At.UnixNano())
			if ev.End != nil {
				last = max(last, ev.End.UnixNano())
			}
		}
		day := int64(24 * time.Hour)
		lo = max(first-day, s.start)
		hi = min(last+day, last0)
	}
	lo -= (lo - s.start) % w
	if hi < lo {
		hi = lo
	}
	n := int((hi-lo)/w) + 1
	signal, _, _ := strings.Cut(k, "{")
	unit, scale := alerting.ChartUnit(signal, time.Duration(w))
	sps := spans(evs)
	inAlert := func(t int64) (span, bool) {
		for _, sp := range sps {
			if sp.holds(t) {
				return sp, true
			}
		}
		return span{}, false
	}
	tr := &track{from: time.Unix(0, lo).UTC(), step: time.Duration(w), unit: unit, spans: sps,
		observed: make([]float64, n), baseline: make([]float64, n), lastWeek: make([]float64, n)}
	hist := map[string]bool{}
	var detector []string
	for i := range n {
		t := lo + int64(i)*w
		tr.observed[i] = r.at(s, t) * scale
		tr.lastWeek[i] = r.at(s, t-int64(week)) * scale
		sp, ok := inAlert(t)
		switch b, judged := sp.judged[t]; {
		case ok && judged:
			tr.baseline[i] = b * scale
			detector = appendOnce(detector, sp.method)
		case ok && held(sp.method):
			tr.baseline[i] = sp.base * scale
			detector = appendOnce(detector, sp.method)
		default:
			v, how := r.usual(s, t, inAlert)
			tr.baseline[i] = v * scale
			// Inside an alert whose baseline follows the time of day, the
			// buckets no notification carried are the chart's median too,
			// and the legend says so.
			if how != "" {
				hist[how] = true
			}
		}
	}
	tr.legend = legend(detector, hist)
	tr.per = perBucket(signal, unit, time.Duration(w))
	tr.keep = direction(evs)
	return tr
}

// perBucket is ", per 5 min" for a signal counted over its bucket (its
// observed_unit says its bucket) whose chart unit is not a rate per
// second: a chart drawn from a downsampled window keeps each bucket's
// value, so the count stays one bucket's.
func perBucket(signal string, unit chart.Unit, bucket time.Duration) string {
	s, ok := obs.Lookup(signal)
	if !ok || strings.HasSuffix(unit.Name, "/s") || unit.Percent {
		return ""
	}
	if alerting.ObservedUnit(signal) == words.Unit(s.Def().Unit) {
		return "" // a level, as announced space
	}
	return ", per " + alerting.HumanDuration(bucket)
}

// legend names the baselines a chart draws: the detector's method inside
// its alerts, and the chart's own median elsewhere.
func legend(detector []string, hist map[string]bool) string {
	var words []string
	for _, m := range detector {
		w := MethodWords(m)
		if !held(m) {
			// Only the buckets its notifications carried are its.
			w += ", where reported"
		}
		words = appendOnce(words, w)
	}
	h := ""
	switch {
	case hist["weeks"] && hist["days"]:
		h = "median, same time, previous weeks or days"
	case hist["weeks"]:
		h = "median, same time, previous weeks"
	case hist["days"]:
		h = "median, same time, previous days"
	}
	switch {
	case len(words) == 0 && h == "":
		return "baseline"
	case len(words) == 0:
		return "baseline (" + h + ")"
	case h == "":
		return "baseline the detector judged against (" + strings.Join(words, "; ") + ")"
	}
	return "baseline: detector's (" + strings.Join(words, "; ") + "), else " + h
}

// direction is which extreme of a run of buckets the alerts care about:
// the lowest for a drop, the highest for a rise; the mean when they
// disagree or there is no alert.
func direction(evs []alerting.Event) chart.Keep {
	down, up := false, false
	for _, ev := range evs {
		if ev.Status != alerting.Firing {
			continue
		}
		switch {
		case ev.Observed < ev.Baseline:
			down = true
		case ev.Observed > ev.Baseline:
			up = true
		}
	}
	switch {
	case down && !up:
		return chart.KeepMin
	case up && !down:
		return chart.KeepMax
	}
	return chart.KeepMean
}

func appendOnce(s []string, v string) []string {
	if v == "" || slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// at returns the value of s at t, NaN when unknown.
func (r *Recorder) at(s *recorded, t int64) float64 {
	if t < s.start {
		return math.NaN()
	}
	i := (t - s.start) / r.width
	if i >= int64(len(s.values)) {
		return math.NaN()
	}
	return s.values[i]
}

// usual is the median of s at the same time on up to four previous weeks,
// or, with no week of history, on up to six previous days, leaving out
// every bucket inside an alert; how says which ("weeks", "days"), empty
// with no value.
func (r *Recorder) usual(s *recorded, t int64, inAlert func(int64) (span, bool)) (v float64, how string) {
	pick := func(back int64, n int64) []float64 {
		var vs []float64
		for k := int64(1); k <= n; k++ {
			u := t - k*back
			if _, out := inAlert(u); out {
				continue
			}
			if v := r.at(s, u); !math.IsNaN(v) {
				vs = append(vs, v)
			}
		}
		return vs
	}
	vs, how := pick(int64(week), 4), "weeks"
	if len(vs) == 0 {
		vs, how = pick(int64(24*time.Hour), 6), "days"
	}
	if len(vs) == 0 {
		return math.NaN(), ""
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], how
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, how
}

// overlayColors tell the signals of an overlay apart (Okabe-Ito, the
// observed blue first).
var overlayColors = []string{"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442"}

// Overlay returns one chart of several series of a place, each as a
// share of its own baseline (100 % is usual), over [from, to] (zero: a day
// either side of all of evs): IODA's view, where signals of different
// units fall and recover together. evs gives each series' alert
// notifications, whose spans are shaded and whose detector baselines are
// the ones divided by (see track). Series with nothing recorded are left
// out; nil when none is left.
func (r *Recorder) Overlay(title string, keys []string, evs map[string][]alerting.Event, from, to time.Time) *chart.Chart {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if from.IsZero() && to.IsZero() {
		var all []alerting.Event
		for _, k := range keys {
			all = append(all, evs[k]...)
		}
		if len(all) > 0 {
			first, last := all[0].Start, all[0].At
			for _, ev := range all {
				first = minTime(first, ev.Start)
				last = maxTime(last, ev.At)
				if ev.End != nil {
					last = maxTime(last, *ev.End)
				}
			}
			from, to = first.Add(-24*time.Hour), last.Add(24*time.Hour)
		}
	}
	c := &chart.Chart{Title: title, Unit: chart.Percent}
	var tracks []*track
	var names []string
	var start time.Time
	var step time.Duration
	for _, k := range keys {
		t := r.track(k, evs[k], from, to)
		if t == nil {
			continue
		}
		if start.IsZero() || t.from.Before(start) {
			start = t.from
		}
		step = t.step
		tracks = append(tracks, t)
		names = append(names, k)
		for _, sp := range t.spans {
			c.Spans = append(c.Spans, chart.Span{From: time.Unix(0, sp.from).UTC(), To: spanTo(sp)})
		}
	}
	if len(tracks) == 0 {
		return nil
	}
	var lines [][]float64
	for _, t := range tracks {
		// Series may start at different buckets: pad to the common start.
		ratio := make([]float64, int(t.from.Sub(start)/step), int(t.from.Sub(start)/step)+len(t.observed))
		for i := range ratio {
			ratio[i] = math.NaN()
		}
		for i, v := range t.observed {
			q := math.NaN()
			if b := t.baseline[i]; b > 0 && !math.IsNaN(v) {
				q = v / b
			}
			ratio = append(ratio, q)
		}
		lines = append(lines, ratio)
	}
	c.Start, c.Step = start, step
	n := 0
	for _, l := range lines {
		n = max(n, len(l))
	}
	f := 1
	if n > maxPoints {
		f = (n + maxPoints - 1) / maxPoints
		c.Step *= time.Duration(f)
	}
	for i, l := range lines {
		if f > 1 {
			l, _, _ = chart.Downsample(l, f, chart.KeepMean)
		}
		signal, _, _ := strings.Cut(names[i], "{")
		c.Series = append(c.Series, chart.Series{Name: alerting.SignalWords(signal), Values: l,
			Color: overlayColors[i%len(overlayColors)], Width: 1.5})
	}
	c.Spans = mergeSpans(c.Spans)
	return c
}

// mergeSpans joins overlapping spans, so an overlay shades the outage
// once rather than once per series.
func mergeSpans(in []chart.Span) []chart.Span {
	slices.SortFunc(in, func(a, b chart.Span) int { return a.From.Compare(b.From) })
	var out []chart.Span
	for _, s := range in {
		if n := len(out); n > 0 && (out[n-1].To.IsZero() || !s.From.After(out[n-1].To)) {
			if !out[n-1].To.IsZero() && (s.To.IsZero() || s.To.After(out[n-1].To)) {
				out[n-1].To = s.To
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
