// Package stage runs outagewatch as two stages, as Kafka Streams runs a
// topology: stage one pre-aggregates each input partition and sends each
// bucket's partials (package partial) keyed by where their series belong;
// stage two owns those keys by partition of the internal topic, merges the
// partials of every source and judges them. This package holds what both
// deployments share: the route key, the split of a flushed bucket into
// records, and the stage-two task that merges them with its de-duplication.
package stage

import (
	"strings"

	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

// FeedKey is the route key of feed-level series (feed health, BGP
// collectors): they go to partition 0, whose task alone judges feed health.
const FeedKey = "feed"

// Router keys series by their place: the country of a country, region or
// network, the owner's country of a zone, the transit of a transit or path;
// so whatever one outage event may group, and every series the correlator
// reads beside an alert (a country's traffic for a network's share), is in
// one stage-two partition.
type Router struct {
	corr *correlate.Correlator
	n    int
	keys map[string]string
}

// NewRouter returns a router over n partitions, with the map and zone
// owners the correlator uses.
func NewRouter(m *netmap.Map, zoneOwners map[string]uint32, n int) *Router {
	if m == nil {
		m = netmap.New()
	}
	return &Router{corr: correlate.New(correlate.Config{Map: m, ZoneOwners: zoneOwners}), n: max(n, 1), keys: map[string]string{}}
}

// Partitions is how many partitions the router spreads keys over.
func (r *Router) Partitions() int { return r.n }

// Key returns the route key of an entity.
func (r *Router) Key(entity string) string {
	if k, ok := r.keys[entity]; ok {
		return k
	}
	k := FeedKey
	kind, _, _ := strings.Cut(entity, ":")
	if kind != obs.KindFeed {
		k = r.corr.Place(entity)
	}
	if len(r.keys) < 1<<20 {
		r.keys[entity] = k
	}
	return k
}

// Partition returns the partition of a route key.
func (r *Router) Partition(key string) int {
	if key == FeedKey || r.n == 1 {
		return 0
	}
	// FNV-1a over the key, as hash/fnv's New32a computes it, without the
	// hasher and byte copy it allocates: this runs for every batch sent.
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return int(h % uint32(r.n))
}
