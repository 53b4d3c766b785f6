package scenario

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"time"

	dnstap "github.com/dnstap/golang-dnstap"
	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/ingest"
	dnsin "github.com/outagewatch/outagewatch/ingest/dns"
	"github.com/outagewatch/outagewatch/obs"
)

// DNSConfig is the `dns:` section of a fixture: what a recursive resolver
// sees of the fixture's networks. Query volume follows each network's
// country curve (Seasonal) and the events whose streams include "dns" (or
// name no stream), so a blackout or a shutdown removes queries as it
// removes traffic; failure episodes make answers for a zone, or from some
// networks, fail with SERVFAIL.
//
// Each query is rendered as one CLIENT_RESPONSE dnstap frame, which carries
// both the question and the answer: resolvers that log responses only look
// like this, the decoder counts each response as one query (it sees no
// CLIENT_QUERY frame), and the replay stays half the size of a stream of
// query/response pairs. With format dns-json each query is one query-log
// line. Rendered volumes are a sample of what a real resolver sees: keep
// them under about 100 queries per network per bucket at the daily peak, so
// that every fixture still replays in seconds.
type DNSConfig struct {
	// Format is dnstap (default) or dns-json.
	Format string `yaml:"format"`
	// Start and End limit the resolver's stream within the fixture (default:
	// the fixture's); a week before the incident is enough for the
	// week-over-week baseline and keeps the replay small.
	Start time.Time `yaml:"start"`
	End   time.Time `yaml:"end"`
	// Resolver is the dnstap identity written into each frame.
	Resolver string `yaml:"resolver"`
	// Failure is the share of answers that fail on an ordinary day
	// (default 0.005); NXDomain the share answered NXDOMAIN, which is not a
	// failure (default 0.02).
	Failure  float64 `yaml:"failure"`
	NXDomain float64 `yaml:"nxdomain"`
	// Networks are the client networks, each one of the fixture's networks.
	Networks []DNSNetwork `yaml:"networks"`
	// Zones are the queried zones with their shares of queries (normalised
	// to add up to 1).
	Zones []DNSZone `yaml:"zones"`
	// Failures are episodes in which answers fail.
	Failures []DNSFailureEpisode `yaml:"failures"`
}

// DNSNetwork is one client network of the resolver.
type DNSNetwork struct {
	ASN uint32 `yaml:"asn"`
	// Queries is the number of queries per 5-minute bucket at the daily
	// peak, before events.
	Queries float64 `yaml:"queries"`
	// Clients is the size of the network's pool of client addresses
	// (default 100, at most 250), drawn inside the network's prefix.
	Clients int `yaml:"clients"`
}

// DNSZone is a queried zone and its share of queries.
type DNSZone struct {
	Zone  string  `yaml:"zone"`
	Share float64 `yaml:"share"`
}

// DNSFailureEpisode makes a share of the answers fail between Start and End:
// for one zone (or every zone when empty), from the listed networks (or
// every network).
type DNSFailureEpisode struct {
	Name     string    `yaml:"name"`
	Zone     string    `yaml:"zone"`
	Networks []uint32  `yaml:"networks"`
	Start    time.Time `yaml:"start"`
	End      time.Time `yaml:"end"`
	// Ratio is the share of matching answers that fail.
	Ratio float64 `yaml:"ratio"`
	// Rcode is SERVFAIL (default) or REFUSED.
	Rcode string `yaml:"rcode"`
}

const (
	rcodeNoError  = 0
	rcodeServFail = 2
	rcodeNXDomain = 3
	rcodeRefused  = 5
)

func init() {
	RegisterSection("dns", func(s *Spec, node *yaml.Node) (Renderer, error) {
		// Decode strictly: a misspelt key must not leave a default in force.
		raw, err := yaml.Marshal(node)
		if err != nil {
			return nil, err
		}
		var c DNSConfig
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil {
			return nil, err
		}
		r, err := newDNSRenderer(s, &c)
		if err != nil {
			return nil, err
		}
		return r, nil
	})
}

type dnsClientNet struct {
	cfg     DNSNetwork
	net     *Network
	country Country
	ents    []string
	pool    []netip.Addr
}

type dnsRenderer struct {
	c        DNSConfig
	nets     []dnsClientNet
	zoneCum  []float64 // cumulative normalised shares
	failures []dnsEpisode
}

type dnsEpisode struct {
	DNSFailureEpisode
	rcode int
}

func newDNSRenderer(s *Spec, c *DNSConfig) (*dnsRenderer, error) {
	switch c.Format {
	case "":
		c.Format = dnsin.FormatDnstap
	case dnsin.FormatDnstap, dnsin.FormatJSON:
	default:
		return nil, fmt.Errorf("format: %q, want %s or %s", c.Format, dnsin.FormatDnstap, dnsin.FormatJSON)
	}
	if c.Start.IsZero() {
		c.Start = s.Start
	}
	if c.End.IsZero() {
		c.End = s.End
	}
	if !c.End.After(c.Start) {
		return nil, fmt.Errorf("start and end: want end after start")
	}
	if c.Resolver == "" {
		c.Resolver = "resolver"
	}
	if c.Failure == 0 {
		c.Failure = 0.005
	}
	if c.NXDomain == 0 {
		c.NXDomain = 0.02
	}
	if c.Failure < 0 || c.NXDomain < 0 || c.Failure+c.NXDomain >= 1 {
		return nil, fmt.Errorf("failure, nxdomain: want shares ≥ 0 adding up to less than 1")
	}
	if len(c.Networks) == 0 {
		return nil, fmt.Errorf("networks: none")
	}
	if len(c.Zones) == 0 {
		return nil, fmt.Errorf("zones: none")
	}
	r := &dnsRenderer{c: *c}
	for i, n := range c.Networks {
		idx := slices.IndexFunc(s.Networks, func(x Network) bool { return x.ASN == n.ASN })
		if idx < 0 {
			return nil, fmt.Errorf("networks[%d]: AS%d is not under the fixture's networks", i, n.ASN)
		}
		if n.Queries <= 0 || n.Queries > 1000 {
			return nil, fmt.Errorf("networks[%d] (AS%d): queries must be in (0, 1000] per bucket", i, n.ASN)
		}
		if n.Clients == 0 {
			n.Clients = 100
		}
		if n.Clients < 1 || n.Clients > 250 {
			return nil, fmt.Errorf("networks[%d] (AS%d): clients must be between 1 and 250", i, n.ASN)
		}
		nw := &s.Networks[idx]
		cn := dnsClientNet{cfg: n, net: nw, country: s.Countries[nw.Country],
			ents: []string{obs.ASN(nw.ASN), obs.Country(nw.Country)}}
		// Client addresses sit in the network's own prefix, so they are
		// attributed to it exactly as live clients are by the BGP table.
		base := networkPrefix(idx).Addr().As4()
		for k := 0; k < n.Clients; k++ {
			a := base
			a[3] = byte(2 + k)
			cn.pool = append(cn.pool, netip.AddrFrom4(a))
		}
		r.nets = append(r.nets, cn)
	}
	var sum float64
	for i, z := range c.Zones {
		if z.Share <= 0 || z.Zone == "" || strings.ContainsAny(z.Zone, " \\") {
			return nil, fmt.Errorf("zones[%d]: want a zone name and a positive share", i)
		}
		sum += z.Share
	}
	for _, z := range c.Zones {
		prev := 0.0
		if n := len(r.zoneCum); n > 0 {
			prev = r.zoneCum[n-1]
		}
		r.zoneCum = append(r.zoneCum, prev+z.Share/sum)
	}
	for i, f := range c.Failures {
		if !f.End.After(f.Start) || f.Ratio <= 0 || f.Ratio > 1 {
			return nil, fmt.Errorf("failures[%d] %q: want end after start and a ratio in (0, 1]", i, f.Name)
		}
		e := dnsEpisode{DNSFailureEpisode: f, rcode: rcodeServFail}
		switch strings.ToUpper(f.Rcode) {
		case "", "SERVFAIL":
		case "REFUSED":
			e.rcode = rcodeRefused
		default:
			return nil, fmt.Errorf("failures[%d] %q: rcode %q, want SERVFAIL or REFUSED", i, f.Name, f.Rcode)
		}
		e.Zone = strings.TrimSuffix(strings.ToLower(f.Zone), ".")
		r.failures = append(r.failures, e)
	}
	return r, nil
}

func (r *dnsRenderer) Stream() string { return dnsin.Stream }

// labels are the names queried under each zone.
var dnsLabels = []string{"www.", "", "api.", "cdn.", "mail.", "img.", "login."}

// Render writes the resolver's stream: per bucket and network, the number
// of queries the curve and the events give, spread over the bucket minute
// by minute (fractions carry over, so small volumes keep their shape), each
// from a client of the network's pool, for a zone taken by share, answered
// NOERROR, NXDOMAIN or, by background rate or episode, a failure.
func (r *dnsRenderer) Render(s *Spec, emit func(*ingest.Record)) error {
	rng := rand.New(rand.NewPCG(s.Seed, 0x646e73))
	type pending struct {
		t   int64
		val []byte
	}
	var batch []pending
	var buf []byte
	carry := make([]float64, len(r.nets))
	seq := make([]uint64, len(r.nets))
	var id uint16
	for t := r.c.Start.Truncate(Bucket); t.Before(r.c.End); t = t.Add(Bucket) {
		batch = batch[:0]
		for i := range r.nets {
			n := &r.nets[i]
			noise := math.Max(0, 1+n.country.Noise*rng.NormFloat64())
			for m := 0; m < 5; m++ {
				at := t.Add(time.Duration(m) * time.Minute)
				if at.Before(r.c.Start) || !at.Before(r.c.End) {
					continue
				}
				want := n.cfg.Queries / 5 * Seasonal(at, n.country.UTCOffset, n.country.Weekend) *
					s.Factor(dnsin.Stream, at, n.ents...) * noise
				want += carry[i]
				k := int(math.Floor(want))
				carry[i] = want - float64(k)
				for q := 0; q < k; q++ {
					qt := at.Add(time.Duration(rng.Int64N(int64(time.Minute))))
					// Zones follow a golden-ratio sequence rather than
					// independent draws: every bucket then asks each zone
					// its share of queries, give or take one, so a small
					// sample still gives a zone enough answers to judge.
					seq[i]++
					_, u := math.Modf(float64(i)*0.1234 + float64(seq[i])*0.6180339887498949)
					zi, _ := slices.BinarySearch(r.zoneCum, u)
					zi = min(zi, len(r.c.Zones)-1)
					zone := r.c.Zones[zi].Zone
					rcode := r.rcode(rng, n.net.ASN, strings.ToLower(zone), qt)
					id++
					client := n.pool[rng.IntN(len(n.pool))]
					qname := dnsLabels[rng.IntN(len(dnsLabels))] + zone
					qtype := uint16(1) // A
					if rng.IntN(3) == 0 {
						qtype = 28 // AAAA
					}
					// Failures take the resolver longer: it waits on the
					// zone's servers before giving up.
					lat := time.Duration(2+rng.IntN(30)) * time.Millisecond
					if rcode == rcodeServFail {
						lat = time.Duration(800+rng.IntN(1200)) * time.Millisecond
					}
					rt := qt.Add(lat)
					var err error
					if r.c.Format == dnsin.FormatJSON {
						buf = dnsin.AppendQueryLog(buf[:0], &dnsin.QueryLog{Time: rt.UnixNano(), Client: client,
							QName: qname, QType: qtype, Rcode: rcode, Protocol: "udp"})
					} else {
						buf, err = dnsin.AppendDnstap(buf[:0], &dnsin.Frame{Type: dnstap.Message_CLIENT_RESPONSE,
							QueryTime: qt.UnixNano(), ResponseTime: rt.UnixNano(), Client: client,
							ClientPort: uint16(1024 + rng.IntN(60000)), Identity: r.c.Resolver, ID: id,
							QName: qname, QType: qtype, Rcode: rcode})
						if err != nil {
							return fmt.Errorf("render dnstap frame: %w", err)
						}
					}
					batch = append(batch, pending{rt.UnixNano(), slices.Clone(buf)})
				}
			}
		}
		// A resolver logs in answer order.
		slices.SortStableFunc(batch, func(a, b pending) int { return cmp.Compare(a.t, b.t) })
		for _, p := range batch {
			emit(&ingest.Record{Stream: dnsin.Stream, Format: r.c.Format, Time: p.t, Value: p.val})
		}
	}
	return nil
}

// rcode draws the answer to one query of zone from network asn at t.
func (r *dnsRenderer) rcode(rng *rand.Rand, asn uint32, zone string, t time.Time) int {
	x := rng.Float64()
	for _, e := range r.failures {
		if t.Before(e.Start) || !t.Before(e.End) {
			continue
		}
		if e.Zone != "" && e.Zone != zone {
			continue
		}
		if len(e.Networks) > 0 && !slices.Contains(e.Networks, asn) {
			continue
		}
		if x < e.Ratio {
			return e.rcode
		}
		x = rng.Float64()
		break
	}
	switch {
	case x < r.c.Failure:
		return rcodeServFail
	case x < r.c.Failure+r.c.NXDomain:
		return rcodeNXDomain
	}
	return rcodeNoError
}
