// Package obs is the common currency of the pipeline: every decoder turns its
// input records into Observations, and everything downstream (aggregation,
// detection, alerting) only ever sees Observations and the closed buckets made
// from them. Keeping this type small and allocation-free is what lets one core
// bucket a million flow records a second.
package obs

import (
	"fmt"
	"strconv"
	"strings"
)

// Observation is one measured value of one signal for one entity at one
// instant of event time.
type Observation struct {
	// Time is the event time in Unix nanoseconds, taken from the record itself,
	// never from the wall clock, so that replay and live give the same buckets.
	Time int64
	// Signal says what was measured and how buckets of it are aggregated.
	Signal Signal
	// Entity is a typed entity name such as "asn:5089" or "country:PT".
	Entity string
	// Value is the measured value: bytes, a count, a ratio, milliseconds...
	Value float64
	// Hash identifies the counted item for distinct-count signals (for
	// example a hash of a DNS client address); the item itself is never kept.
	Hash uint64
}

// Sink receives observations from a decoder. Decoders call it once per
// observation and must not retain the pointer after the call returns.
type Sink interface {
	Observe(o *Observation)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(o *Observation)

// Observe calls f(o).
func (f SinkFunc) Observe(o *Observation) { f(o) }

// Slice is a Sink that keeps copies of what it receives; tests and small
// tools use it.
type Slice []Observation

// Observe appends a copy of o.
func (s *Slice) Observe(o *Observation) { *s = append(*s, *o) }

// Entity kinds. An entity name is "kind:id".
const (
	KindASN     = "asn"
	KindCountry = "country"
	KindRegion  = "region"
	KindTransit = "transit"
	KindZone    = "zone"
	KindDC      = "dc"
	KindFeed    = "feed"
	KindSite    = "site"
	// KindProbe is one measurement probe towards one destination
	// ("probe:6001>193.0.14.0/24"): a single vantage point judged on its
	// own rather than folded into its network's series.
	KindProbe = "probe"
)

// ASN returns the entity name of an autonomous system.
func ASN(asn uint32) string { return "asn:" + strconv.FormatUint(uint64(asn), 10) }

// Country returns the entity name of an ISO 3166-1 alpha-2 country.
func Country(cc string) string { return "country:" + strings.ToUpper(cc) }

// Region returns the entity name of an ISO 3166-2 region such as "PT-11".
func Region(code string) string { return "region:" + strings.ToUpper(code) }

// Zone returns the entity name of a DNS zone, lower case without the final dot.
func Zone(z string) string { return "zone:" + strings.TrimSuffix(strings.ToLower(z), ".") }

// Transit returns the entity name of a transit provider at a site, "transit:1299@lis01".
func Transit(asn uint32, site string) string {
	if site == "" {
		return "transit:" + strconv.FormatUint(uint64(asn), 10)
	}
	return "transit:" + strconv.FormatUint(uint64(asn), 10) + "@" + site
}

// DC returns the entity name of a data center.
func DC(name string) string { return "dc:" + name }

// SplitEntity returns the kind and id of an entity name.
func SplitEntity(e string) (kind, id string, err error) {
	k, id, ok := strings.Cut(e, ":")
	if !ok || k == "" || id == "" {
		return "", "", fmt.Errorf("entity %q: want kind:id", e)
	}
	return k, id, nil
}

// ASNCache turns AS numbers into entity names without allocating for the
// ones seen before. It is not safe for concurrent use: each decoder owns one.
type ASNCache map[uint32]string

// Entity returns the entity name of asn.
func (c ASNCache) Entity(asn uint32) string {
	if s, ok := c[asn]; ok {
		return s
	}
	s := ASN(asn)
	if len(c) < 1<<20 {
		c[asn] = s
	}
	return s
}
