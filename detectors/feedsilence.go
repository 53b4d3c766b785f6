package detectors

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
)

// FeedSilence raises one feed-health alert when an input feed that has
// delivered before sends nothing for a while. Its series then read "no
// data", which the other detectors skip: the operator hears that the feed is
// down, not that every network in it went dark.
//
// "A while" is measured against the feed's own rhythm, not the bucket
// width: a feed that reports every 30 minutes leaves five of six 5-minute
// buckets empty, and a gappy one (a sparse export, an occasional probe)
// skips buckets at random, and neither is silent. The feed's step is its
// declared cadence, or the greatest common divisor of the gaps between the
// buckets it delivered in; the share of steps it misses while alive is
// learnt (with a prior of one miss in two, forgotten over about a week). A
// silence of k steps fires when it is at least After steps long and a feed
// that misses that share of its steps would go that long only once in a
// million runs. A steady 5-minute feed thus fires after After buckets, a
// 30-minute one after After half hours, one that misses 30 % of its buckets
// after 12. Gaps that raised an alert are not learnt.
type FeedSilence struct {
	// After is how many empty steps make a feed silent, at the least.
	After int
	Feeds map[obs.Feed]*SilenceState
	// Width is the bucket width (ns), set from the first bucket.
	Width int64
}

// SilenceState is one feed's state.
type SilenceState struct {
	Empty  int
	Since  int64 // start of the first empty bucket
	Firing bool
	// Reports counts the buckets the feed delivered in; Last is the start
	// of the latest of them.
	Reports int
	Last    int64
	// Step is the feed's cadence in buckets; Declared says it came from
	// the signals' declarations rather than from the gaps.
	Step     int
	Declared bool
	// Shown is the greatest common divisor of every gap between reports,
	// alerts' included, and Gaps how many it rests on, and Cadence the
	// declared step: a declared feed whose reports come at a coarser step
	// than declared takes that step (see report).
	Shown, Gaps, Cadence int
	// Hit and Miss count the feed's steps with and without data while it
	// was alive, decayed so that a feed's rhythm may change.
	Hit, Miss float64
}

// silenceOdds is how unlikely a silence must be, for a feed that is alive,
// before it counts as the feed being down.
const silenceOdds = 1e-6

// silenceDecay forgets the learnt share of missed steps over about a week
// of 5-minute buckets.
const silenceDecay = 1 - 1.0/2016

// NewFeedSilence returns a detector that fires after `after` empty buckets.
func NewFeedSilence(after int) *FeedSilence {
	return &FeedSilence{After: max(after, 1), Feeds: map[obs.Feed]*SilenceState{}}
}

// limit is the number of empty buckets after which the feed is silent, or
// 0 while the feed's rhythm is not known yet.
func (d *FeedSilence) limit(st *SilenceState) int {
	if st.Step == 0 || (!st.Declared && st.Reports < 3) {
		return 0
	}
	q := (st.Miss + 1) / (st.Hit + st.Miss + 2)
	steps := float64(d.After)
	if n := math.Log(silenceOdds) / math.Log(q); n > steps {
		steps = math.Ceil(n)
	}
	return int(steps) * st.Step
}

// Bucket checks one closed bucket. Coarse buckets (of series with a coarser
// cadence) repeat what the base buckets said and are skipped.
func (d *FeedSilence) Bucket(c *aggregate.Closed, emit func(Finding)) {
	if c.Coarse {
		return
	}
	w := c.End - c.Start
	if d.Width == 0 {
		d.Width = w
	}
	for feed, n := range c.FeedObservations {
		if n > 0 && d.Feeds[feed] == nil {
			st := &SilenceState{}
			if cad := obs.FeedCadence(feed); cad > 0 {
				st.Step, st.Declared = int(max((cad+w-1)/w, 1)), true
				st.Cadence = st.Step
			}
			d.Feeds[feed] = st
		}
	}
	for _, feed := range slices.Sorted(maps.Keys(d.Feeds)) {
		st := d.Feeds[feed]
		entity := obs.KindFeed + ":" + string(feed)
		if c.FeedObservations[feed] > 0 {
			if st.Reports > 0 {
				st.report(int((c.Start - st.Last) / w))
			}
			if st.Firing {
				emit(Finding{Status: Resolved, Detector: "feed_health", Signal: "records", Entity: entity,
					Start: st.Since, End: c.Start, At: c.End, Observed: float64(c.FeedObservations[feed]),
					Summary: fmt.Sprintf("the %s feed delivers again", feed)})
			} else if st.Reports > 0 {
				d.learn(st, int((c.Start-st.Last)/w))
			}
			st.Reports++
			st.Last = c.Start
			st.Empty, st.Firing, st.Since = 0, false, 0
			continue
		}
		if st.Empty == 0 {
			st.Since = c.Start
		}
		st.Empty++
		if lim := d.limit(st); lim > 0 && st.Empty >= lim && !st.Firing {
			st.Firing = true
			if st.Step > 1 {
				// The silence began with the first report that did not
				// come, not with the empty bucket after the last one.
				st.Since = st.Last + int64(st.Step)*w
			}
			emit(Finding{Status: Firing, Detector: "feed_health", Signal: "records", Entity: entity,
				Start: st.Since, At: c.End, ChangePct: -100,
				Details: map[string]any{"empty_buckets": st.Empty, "step_buckets": st.Step},
				Summary: fmt.Sprintf("no data from the %s feed for %d buckets (it reports every %d): its series read as no data, not as zero",
					feed, st.Empty, st.Step)})
		}
	}
}

// report takes in the gap of n buckets before a report, whether or not
// it raised an alert. A declared feed is taken at its declared cadence
// until three gaps show a coarser step of its own, as a series' step is:
// a feed declared at five minutes whose export holds a row every two
// hours reports every two hours, and judged at five minutes it would be
// silent at every gap, each one an alert and so never learnt as its
// rhythm. A gap off that step brings it back towards the declared one.
// The share of missed steps learnt at the old step is forgotten.
func (st *SilenceState) report(n int) {
	if n <= 0 {
		return
	}
	if st.Declared && st.Cadence == 0 {
		st.Cadence = st.Step // a checkpoint from before Cadence
	}
	st.Shown = gcd(st.Shown, n)
	if st.Gaps < 3 {
		st.Gaps++
	}
	if step := max(st.Cadence, st.Shown); st.Declared && st.Gaps >= 3 && step != st.Step {
		st.Step, st.Hit, st.Miss = step, 0, 0
	}
}

// learn takes in a gap of n buckets between two buckets with data.
func (d *FeedSilence) learn(st *SilenceState, n int) {
	if n <= 0 {
		return
	}
	if !st.Declared {
		if st.Step == 0 {
			st.Step = n
		} else {
			st.Step = gcd(st.Step, n)
		}
	}
	steps := max(int(math.Round(float64(n)/float64(st.Step))), 1)
	for range steps - 1 {
		st.Hit, st.Miss = st.Hit*silenceDecay, st.Miss*silenceDecay+1
	}
	st.Hit, st.Miss = st.Hit*silenceDecay+1, st.Miss*silenceDecay
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
