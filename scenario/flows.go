package scenario

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	flowpb "github.com/netsampler/goflow2/v2/pb"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/flows"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

// Bucket is the rendering resolution: one value per cell per 5 minutes.
const Bucket = 5 * time.Minute

// Map returns the attribution data the spec implies: each network's
// country and name, a /16 per network and a /24 per region of it.
func (s *Spec) Map() *netmap.Map {
	m := netmap.New()
	for i, n := range s.Networks {
		m.Countries[n.ASN] = n.Country
		m.Names[n.ASN] = n.Name
		m.Origins.Insert(networkPrefix(i), n.ASN)
		for j, r := range n.Regions {
			m.Regions.Insert(regionPrefix(i, j), r.Code)
		}
	}
	return m
}

func networkPrefix(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(1 + i/250), byte(i % 250), 0}), 24).Masked()
}

// regionPrefix is the /24 of region j of network i; region traffic is
// addressed inside 10.128.0.0/9 so it never overlaps a network's /24.
func regionPrefix(i, j int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(128 + i/8), byte((i%8)*32 + j), 0}), 24)
}

// cell is one slice of traffic with one attribution: a network, or the part
// of a network in one region.
type cell struct {
	net     *Network
	country Country
	share   float64
	ents    []string
	addr    netip.Addr
}

func (s *Spec) cells() []cell {
	var cs []cell
	for i := range s.Networks {
		n := &s.Networks[i]
		c := s.Countries[n.Country]
		rest := 1.0
		for j, r := range n.Regions {
			rest -= r.Share
			cs = append(cs, cell{net: n, country: c, share: n.Share * r.Share,
				ents: []string{obs.ASN(n.ASN), obs.Country(n.Country), obs.Region(r.Code)},
				addr: regionPrefix(i, j).Addr().Next()})
		}
		if rest > 1e-9 {
			cs = append(cs, cell{net: n, country: c, share: n.Share * rest,
				ents: []string{obs.ASN(n.ASN), obs.Country(n.Country)}, addr: networkPrefix(i).Addr().Next()})
		}
	}
	return cs
}

// Volume returns the rendered traffic (bytes per bucket) of a cell at t,
// before noise: tests and the HTML report use it as ground truth.
func (s *Spec) volume(c *cell, t time.Time) float64 {
	return c.country.Peak * c.share * Seasonal(t, c.country.UTCOffset, c.country.Weekend) * s.Factor("flows", t, c.ents...)
}

type flowRenderer struct{}

func (flowRenderer) Stream() string { return "flows" }

// Render writes goflow2 records: for every bucket and cell, Flows.Records
// records whose sampled bytes add up to the cell's volume, at times spread
// through the bucket, from the local AS to the network.
func (flowRenderer) Render(s *Spec, emit func(*ingest.Record)) error {
	rng := rand.New(rand.NewPCG(s.Seed, 0x666c6f7773))
	cells := s.cells()
	local := uint32(64500)
	if len(s.LocalASNs) > 0 {
		local = s.LocalASNs[0]
	}
	src := netip.MustParseAddr("192.0.2.10").AsSlice()
	n := s.Flows.Records
	rate := s.Flows.SamplingRate
	type pending struct {
		t   int64
		msg *flowpb.FlowMessage
	}
	var batch []pending
	var buf []byte
	for t := s.Start.Truncate(Bucket); t.Before(s.End); t = t.Add(Bucket) {
		batch = batch[:0]
		for i := range cells {
			c := &cells[i]
			noise := math.Max(0, 1+c.country.Noise*rng.NormFloat64())
			for k := 0; k < n; k++ {
				at := t.Add(time.Duration((float64(k) + 0.5 + 0.4*(rng.Float64()-0.5)) / float64(n) * float64(Bucket)))
				// Each record carries the traffic of its own instant, so an
				// outage starts mid-bucket as it did.
				bytes := uint64(math.Round(s.volume(c, at) * noise / float64(n) / float64(rate)))
				if bytes == 0 {
					continue
				}
				batch = append(batch, pending{at.UnixNano(), &flowpb.FlowMessage{
					Type: flowpb.FlowMessage_SFLOW_5, TimeReceivedNs: uint64(at.UnixNano()),
					TimeFlowStartNs: uint64(at.UnixNano()) - 1e9, TimeFlowEndNs: uint64(at.UnixNano()),
					SamplingRate: rate, Bytes: bytes, Packets: max(1, bytes/1200),
					SrcAddr: src, DstAddr: c.addr.AsSlice(), SrcAs: local, DstAs: c.net.ASN,
					Etype: 0x800, Proto: 6, SrcPort: 443, DstPort: uint32(32768 + k),
				}})
			}
		}
		// Records of one bucket leave in time order, as a collector sends them.
		slices.SortStableFunc(batch, func(a, b pending) int { return cmp.Compare(a.t, b.t) })
		for _, p := range batch {
			var err error
			rec := &ingest.Record{Stream: "flows", Format: s.Flows.Format, Time: p.t}
			if s.Flows.Format == "goflow2-json" {
				buf = flows.AppendJSON(buf[:0], p.msg)
			} else if buf, err = flows.AppendDelimited(buf[:0], p.msg); err != nil {
				return fmt.Errorf("render flow: %w", err)
			}
			rec.Value = append([]byte(nil), buf...)
			emit(rec)
		}
	}
	return nil
}
