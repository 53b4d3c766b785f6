package detectors

import (
	"fmt"
	"maps"
	"slices"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
)

// FeedSilence raises one feed-health alert when an input feed that has
// delivered before sends nothing for a while. Its series then read "no
// data", which the other detectors skip: the operator hears that the feed is
// down, not that every network in it went dark.
type FeedSilence struct {
	// After is how many empty buckets make a feed silent.
	After int
	Feeds map[obs.Feed]*SilenceState
}

// SilenceState is one feed's state.
type SilenceState struct {
	Empty  int
	Since  int64 // start of the first empty bucket
	Firing bool
}

// NewFeedSilence returns a detector that fires after `after` empty buckets.
func NewFeedSilence(after int) *FeedSilence {
	return &FeedSilence{After: max(after, 1), Feeds: map[obs.Feed]*SilenceState{}}
}

// Bucket checks one closed bucket.
func (d *FeedSilence) Bucket(c *aggregate.Closed, emit func(Finding)) {
	for feed, n := range c.FeedObservations {
		if n > 0 && d.Feeds[feed] == nil {
			d.Feeds[feed] = &SilenceState{}
		}
	}
	for _, feed := range slices.Sorted(maps.Keys(d.Feeds)) {
		st := d.Feeds[feed]
		entity := obs.KindFeed + ":" + string(feed)
		if c.FeedObservations[feed] > 0 {
			if st.Firing {
				emit(Finding{Status: Resolved, Detector: "feed_health", Signal: "records", Entity: entity,
					Start: st.Since, End: c.Start, At: c.End, Observed: float64(c.FeedObservations[feed]),
					Summary: fmt.Sprintf("the %s feed delivers again", feed)})
			}
			*st = SilenceState{}
			continue
		}
		if st.Empty == 0 {
			st.Since = c.Start
		}
		st.Empty++
		if st.Empty >= d.After && !st.Firing {
			st.Firing = true
			emit(Finding{Status: Firing, Detector: "feed_health", Signal: "records", Entity: entity,
				Start: st.Since, At: c.End, ChangePct: -100,
				Summary: fmt.Sprintf("no data from the %s feed since %d buckets: its series read as no data, not as zero", feed, st.Empty)})
		}
	}
}
