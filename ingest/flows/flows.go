// Package flows decodes goflow2 flow records (protobuf as written by
// `goflow2 -format=bin`, and goflow2's JSON) into per-eyeball traffic
// observations.
//
// A flow record seen at a network's border says how many sampled bytes and
// packets went between two addresses. What an outage detector needs is how
// much traffic each access network ("eyeball") exchanged, so every record is
// attributed to the side that is not the operator's own network, and counted
// against that AS, its country and, when the prefix is mapped, its region.
package flows

import (
	"math"
	"net/netip"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

// Config says how records are attributed.
type Config struct {
	// Map answers origin AS, country and region questions; nil means that
	// only records carrying an AS number can be attributed, to the AS alone.
	Map *netmap.Map
	// LocalASNs are the operator's own AS numbers: traffic from one of them
	// is attributed to its destination, traffic to one of them to its source.
	LocalASNs []uint32
}

// Stats counts what a decoder did with the records it accepted. Records that
// failed to decode are not counted here: Decode returned an error for them.
type Stats struct {
	// Records is the number of well-formed flow records.
	Records uint64
	// Unattributed is the number of well-formed records whose eyeball side
	// had no AS number and whose address no origin table knew; they yield no
	// observation, and a rising count means the mapping data is stale.
	Unattributed uint64
	// Observations is the number of observations handed to sinks.
	Observations uint64
}

// record holds the fields of one flow record that attribution needs. Both
// decoders fill it, so they attribute identically.
type record struct {
	timeNs           int64
	bytes, packets   float64
	rate             float64
	srcAS, dstAS     uint32
	srcAddr, dstAddr netip.Addr
}

// maxCacheEntries bounds the entity-name caches: country and region codes are
// few, but a hostile mapping file should not grow them without limit.
const maxCacheEntries = 1 << 16

// attributor turns records into observations. It owns the scratch state that
// keeps the hot path free of allocations: the entity-name caches and one
// reused Observation.
type attributor struct {
	m         *netmap.Map
	local     []uint32
	localSet  map[uint32]struct{}
	asns      obs.ASNCache
	countries map[string]string
	regions   map[string]string
	o         obs.Observation
	stats     Stats
	// recent remembers the entity names of recently seen eyeball ASes:
	// one array probe instead of three map lookups on the hot path.
	recent *[recentSize]asEntry
	// numbered is the sink whose series numbers recent holds: a decoder
	// that writes into an obs.SeriesSink names each series once, then
	// observes it by number (see observe).
	numbered obs.SeriesSink
}

const recentSize = 512

type asEntry struct {
	asn           uint32
	asnEnt        string
	cc, countryEn string
	// asnIDs and countryIDs are the numbers of the bytes and packets
	// series of the AS and its country in the numbered sink, plus one:
	// 0 until known.
	asnIDs, countryIDs [2]int32
}

func newAttributor(cfg Config) attributor {
	a := attributor{
		m:         cfg.Map,
		local:     append([]uint32(nil), cfg.LocalASNs...),
		asns:      make(obs.ASNCache),
		countries: map[string]string{},
		regions:   map[string]string{},
		recent:    new([recentSize]asEntry),
	}
	// A linear scan beats a map for the handful of AS numbers an operator
	// usually has; past that the map wins.
	if len(a.local) > 8 {
		a.localSet = make(map[uint32]struct{}, len(a.local))
		for _, asn := range a.local {
			a.localSet[asn] = struct{}{}
		}
	}
	return a
}

func (a *attributor) isLocal(asn uint32) bool {
	if a.localSet != nil {
		_, ok := a.localSet[asn]
		return ok
	}
	for _, l := range a.local {
		if l == asn {
			return true
		}
	}
	return false
}

// eyeball returns the AS number and address of the side of r that is not
// ours: the destination of traffic from a local AS, the source of traffic to
// one. When neither AS number is local, the missing destination AS is looked
// up first, because routers report AS 0 for the prefixes they originate
// themselves: a destination that turns out to be ours makes the source the
// eyeball. Otherwise the destination is the eyeball, as a content network
// mostly sees its own egress and that is the direction users notice.
func (a *attributor) eyeball(r *record) (uint32, netip.Addr) {
	switch {
	case a.isLocal(r.srcAS):
		return a.resolve(r.dstAS, r.dstAddr), r.dstAddr
	case a.isLocal(r.dstAS):
		return a.resolve(r.srcAS, r.srcAddr), r.srcAddr
	}
	dst := a.resolve(r.dstAS, r.dstAddr)
	if r.dstAS == 0 && dst != 0 && a.isLocal(dst) {
		return a.resolve(r.srcAS, r.srcAddr), r.srcAddr
	}
	return dst, r.dstAddr
}

// resolve returns asn, or when it is 0 the origin AS of addr, or 0.
func (a *attributor) resolve(asn uint32, addr netip.Addr) uint32 {
	if asn != 0 || !addr.IsValid() {
		return asn
	}
	asn, _ = a.m.OriginAS(addr)
	return asn
}

// emit attributes r to its eyeball side and hands the observations to sink.
func (a *attributor) emit(r *record, sink obs.Sink) {
	a.stats.Records++
	eyeAS, eyeAddr := a.eyeball(r)
	if eyeAS == 0 {
		a.stats.Unattributed++
		return
	}
	rate := r.rate
	if rate == 0 {
		rate = 1
	}
	bytes, packets := r.bytes*rate, r.packets*rate

	ss, _ := sink.(obs.SeriesSink)
	if ss != a.numbered {
		a.numbered = ss
		for i := range a.recent {
			a.recent[i].asnIDs, a.recent[i].countryIDs = [2]int32{}, [2]int32{}
		}
	}
	e := &a.recent[(eyeAS*2654435761)>>(32-9)]
	if e.asnEnt == "" || e.asn != eyeAS {
		*e = asEntry{asn: eyeAS, asnEnt: a.asns.Entity(eyeAS)}
	}
	a.observe(sink, ss, &e.asnIDs, r.timeNs, e.asnEnt, bytes, packets)
	if a.m == nil {
		return
	}
	// The country is looked up every time, so that a mapping that changes
	// under a running decoder is followed; only its entity name is cached.
	if cc := a.m.Country(eyeAS); cc != "" {
		if cc != e.cc {
			e.cc, e.countryEn, e.countryIDs = cc, cached(a.countries, cc, obs.Country), [2]int32{}
		}
		a.observe(sink, ss, &e.countryIDs, r.timeNs, e.countryEn, bytes, packets)
	}
	if eyeAddr.IsValid() && a.m.Regions.Len() > 0 {
		// Regions.Lookup rather than Map.Region: the latter upper-cases on
		// every call, obs.Region does it once per cached name.
		if rg, _ := a.m.Regions.Lookup(eyeAddr); rg != "" {
			a.observe(sink, nil, nil, r.timeNs, cached(a.regions, rg, obs.Region), bytes, packets)
		}
	}
}

// observe hands the bytes and packets of entity to sink: by series number
// when ss (the sink, when it numbers its series) has numbered both, and
// ids (plus one, 0 for not yet) remembers them; else by name, after which
// the next record asks for the numbers again.
func (a *attributor) observe(sink obs.Sink, ss obs.SeriesSink, ids *[2]int32, t int64, entity string, bytes, packets float64) {
	a.stats.Observations += 2
	if ss != nil {
		if ids[0] == 0 {
			if id, ok := ss.SeriesID(obs.TrafficBytes, entity); ok {
				ids[0] = id + 1
			}
		}
		if ids[1] == 0 {
			if id, ok := ss.SeriesID(obs.TrafficPackets, entity); ok {
				ids[1] = id + 1
			}
		}
		if ids[0] != 0 && ids[1] != 0 {
			ss.ObserveSeries(ids[0]-1, t, bytes)
			ss.ObserveSeries(ids[1]-1, t, packets)
			return
		}
	}
	a.o = obs.Observation{Time: t, Signal: obs.TrafficBytes, Entity: entity, Value: bytes}
	sink.Observe(&a.o)
	a.o = obs.Observation{Time: t, Signal: obs.TrafficPackets, Entity: entity, Value: packets}
	sink.Observe(&a.o)
}

func cached(c map[string]string, code string, name func(string) string) string {
	if e, ok := c[code]; ok {
		return e
	}
	e := name(code)
	if len(c) < maxCacheEntries {
		c[code] = e
	}
	return e
}

// nsFromUint converts a time in nanoseconds, rejecting values past the range
// of Unix nanoseconds in an int64 (year 2262).
func nsFromUint(v uint64) (int64, bool) {
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// Format names under which the decoders are registered for stream "flows".
const (
	FormatProto = "goflow2-pb"
	FormatJSON  = "goflow2-json"
)

func init() {
	ingest.RegisterFormat("flows", FormatProto, func(env *ingest.Env) (ingest.Decoder, error) {
		return NewProtoDecoder(Config{Map: env.Map, LocalASNs: env.LocalASNs}), nil
	})
	ingest.RegisterFormat("flows", FormatJSON, func(env *ingest.Env) (ingest.Decoder, error) {
		return NewJSONDecoder(Config{Map: env.Map, LocalASNs: env.LocalASNs}), nil
	})
}
