package dnsin

import (
	"net/netip"
	"unsafe"

	"golang.org/x/net/publicsuffix"

	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

// Stats counts what a decoder did with its input; the pipeline exports them
// as metrics and tests assert them.
type Stats struct {
	Records   uint64 // records handed to Decode
	Queries   uint64 // client queries counted in dns_queries
	Responses uint64 // responses counted in dns_failure_ratio
	Failures  uint64 // of which failed (SERVFAIL, REFUSED, timeout)
	// Ignored counts well-formed records that carry no client traffic:
	// dnstap frames of other message types, or frames that CountMode does
	// not count and that have no response.
	Ignored uint64
	// Unattributed counts records whose client address has no origin AS;
	// they still reach the zone failure ratio.
	Unattributed uint64
	Malformed    uint64 // records rejected with an error
}

// event is what both formats boil down to: one client query, one response,
// or both (a query-log line).
type event struct {
	time     int64
	client   netip.Addr
	query    bool // count in dns_queries and dns_clients
	response bool // count in dns_failure_ratio
	rcode    int
	// name is the question name, lower case, presentation format with
	// miekg/dns escapes, no final dot; empty for the root or no question.
	name []byte
}

type asnEntities struct{ asn, country string }

// cacheLimit bounds each name cache: a flood of random subdomains must not
// grow memory without end. A full cache is cleared and refills with the
// names in use.
const cacheLimit = 1 << 16

// attributor maps events to entities and emits observations. It keeps
// entity strings in caches so that the steady state allocates nothing.
type attributor struct {
	m     *netmap.Map
	seed  uint64
	asns  map[uint32]asnEntities
	names map[string]string // question name -> zone entity ("" for none)
	zones map[string]string // registrable domain -> zone entity
	o     obs.Observation
	stats Stats
}

func newAttributor(m *netmap.Map, cfg Config) attributor {
	seed := cfg.ClientHashSeed
	if seed == 0 {
		seed = DefaultClientHashSeed
	}
	return attributor{
		m:     m,
		seed:  seed,
		asns:  map[uint32]asnEntities{},
		names: map[string]string{},
		zones: map[string]string{},
	}
}

func (a *attributor) observe(ev *event, sink obs.Sink) {
	var ents asnEntities
	asn, ok := a.m.OriginAS(ev.client)
	if ok {
		ents, ok = a.asns[asn]
		if !ok {
			ents.asn = obs.ASN(asn)
			if cc := a.m.Country(asn); cc != "" {
				ents.country = obs.Country(cc)
			}
			if len(a.asns) >= cacheLimit {
				clear(a.asns)
			}
			a.asns[asn] = ents
		}
	} else {
		a.stats.Unattributed++
	}
	o := &a.o
	o.Time = ev.time
	if ev.query {
		a.stats.Queries++
		if ents.asn != "" {
			h := ClientHash(ev.client, a.seed)
			a.emit(sink, Queries, ents.asn, 1, 0)
			a.emit(sink, Clients, ents.asn, 1, h)
			if ents.country != "" {
				a.emit(sink, Queries, ents.country, 1, 0)
				a.emit(sink, Clients, ents.country, 1, h)
			}
		}
	}
	if ev.response {
		a.stats.Responses++
		v := 0.0
		if Failed(ev.rcode) {
			v = 1
			a.stats.Failures++
		}
		if ents.asn != "" {
			a.emit(sink, FailureRatio, ents.asn, v, 0)
			if ents.country != "" {
				a.emit(sink, FailureRatio, ents.country, v, 0)
			}
		}
		if z := a.zone(ev.name); z != "" {
			a.emit(sink, FailureRatio, z, v, 0)
		}
	}
}

func (a *attributor) emit(sink obs.Sink, s obs.Signal, entity string, v float64, h uint64) {
	a.o.Signal, a.o.Entity, a.o.Value, a.o.Hash = s, entity, v, h
	sink.Observe(&a.o)
}

// zone returns the zone entity of a question name: its registrable domain
// (public suffix plus one label), or the name itself when it is a public
// suffix; "" for the root.
func (a *attributor) zone(name []byte) string {
	if len(name) == 0 {
		return ""
	}
	if z, ok := a.names[string(name)]; ok {
		return z
	}
	// PublicSuffix does not keep its argument, so a view of the scratch
	// buffer is enough; the cache keys below are copies.
	s := unsafe.String(&name[0], len(name))
	reg := registrable(s)
	z, ok := a.zones[reg]
	if !ok {
		z = obs.Zone(reg)
		if len(a.zones) >= cacheLimit {
			clear(a.zones)
		}
		a.zones[z[len("zone:"):]] = z
	}
	if len(a.names) >= cacheLimit {
		clear(a.names)
	}
	a.names[string(name)] = z
	return z
}

// registrable returns the registrable domain of a lower-case name without a
// final dot, as publicsuffix.EffectiveTLDPlusOne does, but falls back to the
// name itself where that one fails (a public suffix or an address).
func registrable(name string) string {
	suffix, _ := publicsuffix.PublicSuffix(name)
	if len(suffix) >= len(name) {
		return name
	}
	i := len(name) - len(suffix) - 1
	if name[i] != '.' {
		return name
	}
	for j := i - 1; j >= 0; j-- {
		if name[j] == '.' {
			return name[j+1:]
		}
	}
	return name
}
