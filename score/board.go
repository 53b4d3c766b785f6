package score

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/scenario"
)

// A scoreboard scores a method on real labelled sets the way NAB scores
// anomaly detectors: every set in one table, misses as plain as hits. Two
// kinds of label are scored.
//
// Windows (an IODA series labelled per bucket: inside an outage or not):
// a window is detected when an alert starts between WindowSlack before it
// and its end; it is raised inside when that alert's At (when the
// pipeline knew) is no later than the window's end; an alert is false
// when it starts more than WindowSlack outside every window. Pages are
// outage events and are scored the same way by their start. Muted alerts
// (silenced, or explained by a feed fault) page nobody and are not
// counted. Feed-health alerts (a source that stopped sending, a feed that
// changed every series at once) speak of the data, not of an outage: they
// are counted in their own column, never as outage alerts.
//
// Change points (a RIPE Atlas RTT trace with its level changes marked by
// hand): see ScoreShifts.

// WindowSlack is how far before a labelled window an alert may start and
// still be the outage: a label marks the first bucket the labeller saw as
// down, and the series may dip a bucket or two before it (15 minutes:
// three of IODA's 5-minute steps).
const WindowSlack = 15 * time.Minute

// Window is one labelled outage: [From, To).
type Window struct {
	From time.Time `yaml:"from" json:"from"`
	To   time.Time `yaml:"to" json:"to"`
	// Entity, when set, is a glob that limits the window to the alerts of
	// matching entities; empty matches every alert of the set.
	Entity string `yaml:"entity,omitempty" json:"entity,omitempty"`
}

// Row is one set's line on the scoreboard.
type Row struct {
	Set string `json:"set"`
	// Windows are labelled outages (or upward level shifts), Detected
	// those with an alert starting at them, Inside those whose alert was
	// also raised in time (inside the window; for shifts, within an hour).
	Windows  int `json:"windows"`
	Detected int `json:"detected"`
	Inside   int `json:"raised_inside"`
	Alerts   int `json:"alerts"`
	False    int `json:"false_alerts"`
	Pages    int `json:"pages"`
	// Feed counts feed-health alerts, apart.
	Feed int `json:"feed_alerts"`
	// FalsePages are pages that start outside every window.
	FalsePages int `json:"false_pages"`
	// Delay is the median, over detected windows, of the time from the
	// window's start to the first detecting alert being raised (negative
	// never: an alert raised before the labelled start counts as 0).
	Delay time.Duration `json:"median_delay_ns"`
	// Missed lists the windows no alert detected, FalseAt the starts of
	// the false alerts, for a person reading the board.
	Missed  []time.Time `json:"missed,omitempty"`
	FalseAt []string    `json:"false_at,omitempty"`
	delays  []time.Duration
}

// Add sums o into r (for a set made of several files).
func (r *Row) Add(o Row) {
	r.Windows += o.Windows
	r.Detected += o.Detected
	r.Inside += o.Inside
	r.Alerts += o.Alerts
	r.False += o.False
	r.Pages += o.Pages
	r.Feed += o.Feed
	r.FalsePages += o.FalsePages
	r.Missed = append(r.Missed, o.Missed...)
	r.FalseAt = append(r.FalseAt, o.FalseAt...)
	r.delays = append(r.delays, o.delays...)
	r.Delay = medianDuration(r.delays)
}

// finish counts the alerts and pages that near does not place at a label
// as false, and sets the median delay.
func (r *Row) finish(alerts, pages []alerting.Event, near func(alerting.Event) bool) {
	for _, a := range alerts {
		if !near(a) {
			r.False++
			r.FalseAt = append(r.FalseAt, a.Start.UTC().Format(time.RFC3339)+" "+a.Rule+" "+a.Entity)
		}
	}
	for _, p := range pages {
		if !near(p) {
			r.FalsePages++
		}
	}
	r.Delay = medianDuration(r.delays)
}

func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// firings returns the alerts that fired and page someone, and the outage
// events that opened (one per event, its first notification). An alert
// that fires again with the start it had (it came back inside its rule's
// keep_firing_for) is the same alert, counted once.
func firings(events []alerting.Event) (alerts, pages []alerting.Event, feed int) {
	opened := map[string]bool{}
	type key struct {
		id    string
		start time.Time
	}
	seen := map[key]bool{}
	for _, ev := range events {
		if ev.Status != alerting.Firing || ev.Muted != "" {
			continue
		}
		if ev.IsEvent() {
			if !opened[ev.ID] {
				opened[ev.ID] = true
				pages = append(pages, ev)
			}
			continue
		}
		if k := (key{ev.ID, ev.Start}); !seen[k] {
			seen[k] = true
			if ev.Detector == "feed_health" {
				feed++
				continue
			}
			alerts = append(alerts, ev)
		}
	}
	return alerts, pages, feed
}

// ScoreWindows scores the alerts and pages of one replay against labelled
// windows.
func ScoreWindows(set string, windows []Window, events []alerting.Event) Row {
	alerts, pages, feed := firings(events)
	r := Row{Set: set, Windows: len(windows), Alerts: len(alerts), Pages: len(pages), Feed: feed}
	in := func(w Window, ev alerting.Event) bool {
		return (w.Entity == "" || scenario.EntityMatches(w.Entity, ev.Entity)) &&
			!ev.Start.Before(w.From.Add(-WindowSlack)) && ev.Start.Before(w.To)
	}
	near := func(ev alerting.Event) bool {
		return slices.ContainsFunc(windows, func(w Window) bool {
			return (w.Entity == "" || scenario.EntityMatches(w.Entity, ev.Entity)) &&
				!ev.Start.Before(w.From.Add(-WindowSlack)) && !ev.Start.After(w.To.Add(WindowSlack))
		})
	}
	for _, w := range windows {
		first := -1
		for i, a := range alerts {
			if in(w, a) && (first < 0 || a.At.Before(alerts[first].At)) {
				first = i
			}
		}
		if first < 0 {
			r.Missed = append(r.Missed, w.From)
			continue
		}
		r.Detected++
		if !alerts[first].At.After(w.To) {
			r.Inside++
		}
		r.delays = append(r.delays, max(0, alerts[first].At.Sub(w.From)))
	}
	r.finish(alerts, pages, near)
	return r
}

// Shift scoring, exact so that everyone counts the same. Of a trace's
// labelled change points, an upward level shift is one whose following
// segment (to the next change point) has a mean RTT at least ShiftRise
// and ShiftMinMs above the preceding segment's (from the previous change
// point) and lasts at least ShiftLasts, counted from ShiftWarmup after the
// trace starts (no detector can know a level before it has seen one). It
// is detected when an alert for the probe starts between ShiftEarly
// before and ShiftLate after it and is raised (its At) within ShiftRaised
// of it; an alert is false when it starts more than ShiftLate from every
// labelled change point of its probe.
const (
	ShiftRise   = 0.2
	ShiftMinMs  = 10.0
	ShiftLasts  = 30 * time.Minute
	ShiftWarmup = 2*time.Hour + 40*time.Minute
	ShiftEarly  = 5 * time.Minute
	ShiftLate   = 30 * time.Minute
	ShiftRaised = 60 * time.Minute
)

// Sample is one measurement of a labelled RTT trace; RTT < 0 is lost.
type Sample struct {
	Time time.Time
	RTT  float64
	CP   bool
}

// UpwardShifts returns the times of a trace's labelled upward level shifts.
func UpwardShifts(s []Sample) []time.Time {
	var cps []int
	for i, x := range s {
		if x.CP {
			cps = append(cps, i)
		}
	}
	mean := func(from, to int) (float64, bool) {
		var sum float64
		var n int
		for _, x := range s[from:to] {
			if x.RTT >= 0 {
				sum += x.RTT
				n++
			}
		}
		return sum / float64(max(n, 1)), n > 0
	}
	var out []time.Time
	for k, i := range cps {
		prev, next := 0, len(s)
		if k > 0 {
			prev = cps[k-1]
		}
		if k+1 < len(cps) {
			next = cps[k+1]
		}
		if s[i].Time.Before(s[0].Time.Add(ShiftWarmup)) {
			continue
		}
		before, ok1 := mean(prev, i)
		after, ok2 := mean(i, next)
		if ok1 && ok2 && after >= (1+ShiftRise)*before && after-before >= ShiftMinMs &&
			s[next-1].Time.Sub(s[i].Time) >= ShiftLasts {
			out = append(out, s[i].Time)
		}
	}
	return out
}

// ScoreShifts scores the alerts of one probe's replay against its trace's
// labels. Pages are scored like alerts, by their start.
func ScoreShifts(set string, s []Sample, events []alerting.Event) Row {
	alerts, pages, feed := firings(events)
	var cps []time.Time
	for _, x := range s {
		if x.CP {
			cps = append(cps, x.Time)
		}
	}
	shifts := UpwardShifts(s)
	r := Row{Set: set, Windows: len(shifts), Alerts: len(alerts), Pages: len(pages), Feed: feed}
	for _, cp := range shifts {
		first := -1
		for i, a := range alerts {
			if !a.Start.Before(cp.Add(-ShiftEarly)) && !a.Start.After(cp.Add(ShiftLate)) &&
				!a.At.After(cp.Add(ShiftRaised)) && (first < 0 || a.At.Before(alerts[first].At)) {
				first = i
			}
		}
		if first < 0 {
			r.Missed = append(r.Missed, cp)
			continue
		}
		// Raised within the hour is what detected means here, so every
		// detected shift was raised inside its window.
		r.Detected++
		r.Inside++
		r.delays = append(r.delays, max(0, alerts[first].At.Sub(cp)))
	}
	near := func(ev alerting.Event) bool {
		return slices.ContainsFunc(cps, func(cp time.Time) bool {
			d := ev.Start.Sub(cp)
			return d >= -ShiftLate && d <= ShiftLate
		})
	}
	r.finish(alerts, pages, near)
	return r
}

// PrintBoard writes the scoreboard as a table, then each set's misses and
// false alerts when verbose.
func PrintBoard(w io.Writer, rows []Row, verbose bool) {
	width := 20
	for _, r := range rows {
		width = max(width, len(r.Set))
	}
	fmt.Fprintf(w, "%-*s %7s %9s %6s %6s %6s %6s %5s %5s %6s %9s %4s\n", width,
		"set", "windows", "detected", "inside", "alerts", "false", "false%", "pages", "false", "false%", "delay", "feed")
	pct := func(a, b int) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(a)/float64(b))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%-*s %7d %9s %6d %6d %6d %6s %5d %5d %6s %9s %4d\n", width, r.Set, r.Windows,
			fmt.Sprintf("%d %s", r.Detected, pct(r.Detected, r.Windows)), r.Inside, r.Alerts, r.False, pct(r.False, r.Alerts),
			r.Pages, r.FalsePages, pct(r.FalsePages, r.Pages), r.Delay, r.Feed)
	}
	if !verbose {
		return
	}
	for _, r := range rows {
		for _, m := range r.Missed {
			fmt.Fprintf(w, "%s: MISSED window at %s\n", r.Set, m.UTC().Format(time.RFC3339))
		}
		for _, f := range r.FalseAt {
			fmt.Fprintf(w, "%s: FALSE %s\n", r.Set, strings.TrimSpace(f))
		}
	}
}
