// Package dnsin turns DNS resolver streams (dnstap frames and JSON query logs)
// into the DNS signals of outagewatch: query volume, distinct clients and the
// failure ratio, per client AS, per client country and per queried zone.
//
// A resolver sees an outage from the client side before anyone calls: a
// country that loses power or connectivity stops asking (dns_queries and
// dns_clients fall), and a broken zone or upstream shows up as SERVFAIL,
// REFUSED or timeouts (dns_failure_ratio rises).
//
// Client addresses are never stored: a decoder reads the address only to find
// its origin AS and to hash it for the distinct-client sketch; neither
// observations, accumulators nor checkpoints hold the address itself.
//
// Counting rule. A query is counted once: dnstap CLIENT_QUERY frames count as
// queries; CLIENT_RESPONSE frames count as queries only for streams that carry
// no CLIENT_QUERY frames at all (see CountMode), and always feed the failure
// ratio. Every JSON query-log line is one query, and feeds the failure ratio
// when it has an rcode. Other dnstap message types (resolver, forwarder, auth)
// describe the resolver's own upstream traffic and are skipped.
package dnsin

import (
	"github.com/outagewatch/outagewatch/obs"
)

// The signals this package produces.
var (
	// Queries is the number of client queries per client AS and country.
	Queries = obs.Register(obs.SignalDef{
		Name: "dns_queries", Unit: "queries", Feed: obs.FeedDNS,
		Agg: obs.Sum, ZeroWhenAbsent: true,
	})
	// Clients is the estimated number of distinct client addresses per
	// client AS and country, from a HyperLogLog sketch per open bucket.
	Clients = obs.Register(obs.SignalDef{
		Name: "dns_clients", Unit: "clients", Feed: obs.FeedDNS,
		Agg: obs.Custom, NewAccumulator: func() obs.Accumulator { return NewClientsAccumulator() },
	})
	// FailureRatio is the share of responses that failed (SERVFAIL, REFUSED
	// or a timeout) per client AS, country and queried zone. The Mean
	// accumulator's count is the number of responses, which rules use as the
	// minimum volume before they trust the ratio.
	FailureRatio = obs.Register(obs.SignalDef{
		Name: "dns_failure_ratio", Unit: "ratio", Feed: obs.FeedDNS,
		Agg: obs.Mean,
	})
)

// DNS response codes that matter here (RFC 1035, 4.1.1).
const (
	rcodeServFail = 2
	rcodeRefused  = 5
)

// RcodeTimeout stands for a query that got no answer in time. It is not a
// DNS response code: query logs write it as "TIMEOUT".
const RcodeTimeout = -1

// Failed says whether a response code counts as a failure in
// dns_failure_ratio. NXDOMAIN is not a failure: it is a correct answer, and
// typo or probe traffic would otherwise look like an outage.
func Failed(rcode int) bool {
	return rcode == rcodeServFail || rcode == rcodeRefused || rcode == RcodeTimeout
}

// CountMode says which dnstap frames count as queries, so that a query is
// counted once whatever the resolver logs.
type CountMode uint8

const (
	// CountAuto counts CLIENT_QUERY frames, and CLIENT_RESPONSE frames only
	// while the decoder has not seen any CLIENT_QUERY frame: a stream that
	// logs only responses is counted from them, a stream that logs both is
	// counted from queries.
	CountAuto CountMode = iota
	// CountQueries counts CLIENT_QUERY frames only.
	CountQueries
	// CountResponses counts CLIENT_RESPONSE frames only, for resolvers that
	// log queries and responses but where the query frames are sampled or
	// filtered.
	CountResponses
)

// Config tunes a decoder. The zero value is ready to use.
type Config struct {
	// Count selects which dnstap frames count as queries.
	Count CountMode
	// ClientHashSeed seeds the hash of client addresses. All instances whose
	// sketches are merged must use the same seed; a deployment that does not
	// want hashes of its clients to be guessable keeps it secret. Zero means
	// DefaultClientHashSeed.
	ClientHashSeed uint64
}

// DefaultClientHashSeed is the seed axiomhq/hyperloglog uses for Insert, so
// that InsertHash(ClientHash(a)) and Insert(a.As16()) agree.
const DefaultClientHashSeed = 1337
