package bgp

import (
	"time"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/obs"
)

// FullFeedPeers is the number of a collector's full-feed peers that are up
// and have been heard from recently, one gauge per collector (entity
// "feed:bgp@rrc21"; "feed:bgp@unnamed" for MRT and BMP inputs, whose
// records do not name their collector). A session reset or a collector that
// falls silent shows here, and not in the announced space: the table counts
// a prefix as visible against the full-feed peers that are up, so losing a
// peer moves the bar rather than the space. The bgp_peers detector watches
// this gauge, so that such a fault raises one feed-health alert instead of
// a withdrawal alert per network.
var FullFeedPeers = obs.Register(obs.SignalDef{Name: "bgp_full_feed_peers", Unit: "peers", Feed: obs.FeedBGP, Agg: obs.Last})

// PeerSilentAfter is how long a full-feed peer may send nothing before it
// stops counting as alive. A full-feed session carries updates every few
// seconds, so a quarter of an hour without one is a dead collector or a
// stuck session, not a quiet Internet.
const PeerSilentAfter = 15 * time.Minute

// unnamedCollector names the collector of inputs that do not say which.
const unnamedCollector = "unnamed"

// EmitPeerHealth emits, for the bucket ending at end, the FullFeedPeers
// gauge of every collector the table has peers of (zero when none of them
// is alive), in collector order. Call it after the table's EmitSpace, which
// re-evaluates which peers are full-feed.
func EmitPeerHealth(t *rib.Table, end int64, sink obs.Sink) {
	hs := t.Health() // sorted by collector
	var o obs.Observation
	for i := 0; i < len(hs); {
		coll := hs[i].Peer.Collector
		n := 0
		for ; i < len(hs) && hs[i].Peer.Collector == coll; i++ {
			h := &hs[i]
			if h.Up && h.FullFeed && end-h.LastMessage <= int64(PeerSilentAfter) {
				n++
			}
		}
		if coll == "" {
			coll = unnamedCollector
		}
		o = obs.Observation{Time: end - 1, Signal: FullFeedPeers, Entity: obs.KindFeed + ":" + Stream + "@" + coll, Value: float64(n)}
		sink.Observe(&o)
	}
}
