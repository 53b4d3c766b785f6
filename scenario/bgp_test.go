package scenario

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	bgpin "github.com/outagewatch/outagewatch/ingest/bgp"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

const bgpSpecDoc = `
name: bgp-test
start: 2024-05-14T00:00:00Z
end: 2024-05-14T04:00:00Z
seed: 7
countries:
  GB: {peak: 1e9}
networks:
  - {asn: 5089, country: GB, share: 0.5}
  - {asn: 2856, country: GB, share: 0.5}
flows: {disabled: true}
bgp:
  format: FORMAT
  collectors: [rrc01, rrc03]
  peers: 2
  prefixes_v6: 2
  churn: -1
  episodes:
    - {name: half of AS5089 withdrawn, targets: ["asn:5089"], start: 2024-05-14T01:00:00Z, end: 2024-05-14T02:00:00Z, share: 0.5}
    - {name: session reset, kind: peer_reset, collector: rrc01, peer: 1, start: 2024-05-14T00:30:00Z, end: 2024-05-14T00:40:00Z}
    - {name: rrc03 silent, kind: collector_silent, collector: rrc03, start: 2024-05-14T03:00:00Z, end: 2024-05-14T03:30:00Z}
`

func renderBGP(t *testing.T, format string) (*Spec, []*ingest.Record) {
	t.Helper()
	s, err := Parse("bgp-test.yaml", bytes.ReplaceAll([]byte(bgpSpecDoc), []byte("FORMAT"), []byte(format)))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.Renderers()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Stream() != "bgp" {
		t.Fatalf("renderers %v", rs)
	}
	var recs []*ingest.Record
	if err := rs[0].Render(s, func(r *ingest.Record) { recs = append(recs, r) }); err != nil {
		t.Fatal(err)
	}
	return s, recs
}

// The rendered stream, decoded by the real decoders into the real table:
// exact record counts, withdrawals, visibility and peer health at each
// step of the script.
func TestBGPSectionRendersTheScript(t *testing.T) {
	for _, format := range []string{"rislive", "mrt"} {
		t.Run(format, func(t *testing.T) {
			s, recs := renderBGP(t, format)
			// 8 initial announcements (4 peers × 2 networks), 178 keepalive
			// re-announcements (48 buckets × 4 peers, less 2 while the peer
			// is down and 12 while rrc03 is silent), 4 withdrawal and 4
			// re-announcement updates for AS5089, and the reset: down, up
			// and the peer's whole table again (2 updates).
			if len(recs) != 8+178+4+4+2+2 {
				t.Fatalf("%d records", len(recs))
			}
			m := s.Map()
			tab := rib.New(rib.Config{Map: m})
			var dec ingest.Decoder = bgpin.NewRISLive(tab)
			if format == "mrt" {
				dec = bgpin.NewMRT(tab, "")
			}
			var sink obs.Slice
			i := 0
			until := func(hhmm string) {
				t.Helper()
				at, _ := time.Parse("15:04", hhmm)
				end := s.Start.Add(time.Duration(at.Hour())*time.Hour + time.Duration(at.Minute())*time.Minute).UnixNano()
				for ; i < len(recs) && recs[i].Time < end; i++ {
					if recs[i].Format != format || recs[i].Stream != "bgp" {
						t.Fatalf("record %+v", recs[i])
					}
					if err := dec.Decode(recs[i].Value, &sink); err != nil {
						t.Fatalf("record %d: %v", i, err)
					}
				}
				tab.Refresh()
			}
			withdrawn := func() float64 {
				var n float64
				for _, o := range sink {
					if o.Signal == rib.Withdrawals && o.Entity == "asn:5089" {
						n += o.Value
					}
				}
				return n
			}
			// Two networks of 1 + 8 IPv4 and 2 IPv6 prefixes each.
			until("00:20")
			if v := tab.Visible(); v != 22 {
				t.Fatalf("visible at 00:20: %d", v)
			}
			until("00:35")
			hs := tab.Health()
			if len(hs) != 4 || hs[1].Up || hs[1].Resets != 1 || hs[1].Prefixes != 0 || tab.Visible() != 22 {
				t.Fatalf("during the reset: visible %d, health %+v", tab.Visible(), hs)
			}
			until("00:45")
			if hs := tab.Health(); !hs[1].Up || hs[1].Prefixes != 22 {
				t.Fatalf("after the reset: %+v", hs[1])
			}
			if withdrawn() != 0 {
				t.Fatalf("a session reset counted as %v withdrawals", withdrawn())
			}
			// Half of AS5089: round(9 × 0.5) = 5 IPv4 and 1 IPv6 prefix,
			// withdrawn by each of the 4 peers.
			until("01:30")
			if v, w := tab.Visible(), withdrawn(); v != 16 || w != 24 {
				t.Fatalf("during the withdrawal: visible %d, withdrawals %v", v, w)
			}
			if v4, _ := tab.Space(5089); v4 >= 64 || v4 <= 0 {
				t.Fatalf("AS5089 space %v /24s", v4)
			}
			until("02:05")
			if v := tab.Visible(); v != 22 {
				t.Fatalf("after the withdrawal: visible %d", v)
			}
			if v4, v6 := tab.Space(5089); v4 != 65 || v6 != 8192 {
				t.Fatalf("AS5089 space %v /24s %v /48s, want 1 + 8 × 8 and 2 × 4096", v4, v6)
			}
			until("03:25")
			var gauges obs.Slice
			bgpin.EmitPeerHealth(tab, s.Start.Add(3*time.Hour+25*time.Minute).UnixNano(), &gauges)
			wantPeers := map[string]float64{"feed:bgp@rrc01": 2, "feed:bgp@rrc03": 0}
			if format == "mrt" {
				wantPeers = map[string]float64{"feed:bgp@unnamed": 2} // MRT names no collector
			}
			if len(gauges) != len(wantPeers) {
				t.Fatalf("peer gauges %+v", gauges)
			}
			for _, g := range gauges {
				if g.Value != wantPeers[g.Entity] {
					t.Fatalf("peer gauges %+v, want %v", gauges, wantPeers)
				}
			}
			until("04:00")
			if i != len(recs) || withdrawn() != 24 {
				t.Fatalf("decoded %d of %d, withdrawals %v", i, len(recs), withdrawn())
			}
			// Every address the flows and DNS sections use for a network
			// resolves to it through the table.
			for _, n := range s.Networks {
				var want netip.Prefix
				m.Origins.Walk(func(p netip.Prefix, asn uint32) bool {
					if asn == n.ASN {
						want = p
					}
					return true
				})
				if asn, ok := tab.OriginAS(want.Addr().Next()); !ok || asn != n.ASN {
					t.Fatalf("origin of %s: %d %v", want, asn, ok)
				}
			}
		})
	}
}

func TestBGPSectionIsDeterministic(t *testing.T) {
	_, a := renderBGP(t, "rislive")
	_, b := renderBGP(t, "rislive")
	if len(a) != len(b) {
		t.Fatal("record counts differ")
	}
	for i := range a {
		if a[i].Time != b[i].Time || !bytes.Equal(a[i].Value, b[i].Value) {
			t.Fatalf("record %d differs", i)
		}
	}
}

func TestBGPPrefixesMatchTheMap(t *testing.T) {
	s, _ := renderBGP(t, "rislive")
	ps, err := s.BGPPrefixes()
	if err != nil {
		t.Fatal(err)
	}
	m := s.Map()
	for asn, list := range ps {
		if len(list) != 11 {
			t.Fatalf("AS%d: %d prefixes", asn, len(list))
		}
		if got, _ := m.Origins.Lookup(list[0].Addr()); got != asn {
			t.Fatalf("AS%d's first prefix %s maps to AS%d", asn, list[0], got)
		}
	}
	all := netmap.Table[uint32]{}
	for asn, list := range ps {
		for _, p := range list {
			if _, dup := all.Get(p); dup {
				t.Fatalf("prefix %s given twice", p)
			}
			all.Insert(p, asn)
		}
	}
}

func TestBGPSectionErrors(t *testing.T) {
	cases := map[string]string{
		"format: bmp\n":    "format",
		"peers: 61\n":      "peers",
		"prefixes: 65\n":   "prefixes",
		"collectrs: [a]\n": "collectrs",
		"episodes: [{kind: peer_reset, collector: rrc99, start: 2024-05-14T01:00:00Z, end: 2024-05-14T02:00:00Z}]\n": "collector",
		"episodes: [{targets: [\"asn:1\"], share: 2, start: 2024-05-14T01:00:00Z, end: 2024-05-14T02:00:00Z}]\n":     "share",
		"episodes: [{kind: meteor, start: 2024-05-14T01:00:00Z, end: 2024-05-14T02:00:00Z}]\n":                       "kind",
		"networks: [{asn: 1, prefixes: 4}]\n": "AS1",
	}
	for body, want := range cases {
		doc := "name: x\nstart: 2024-05-14T00:00:00Z\nend: 2024-05-14T04:00:00Z\ncountries: {GB: {peak: 1}}\nnetworks: [{asn: 5089, country: GB}]\nbgp:\n" +
			indent(body)
		s, err := Parse("x.yaml", []byte(doc))
		if err == nil {
			_, err = s.Renderers()
		}
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("%q: got %v, want an error about %s", body, err, want)
		}
	}
}

func indent(s string) string {
	var b bytes.Buffer
	for _, l := range bytes.Split([]byte(s), []byte("\n")) {
		if len(l) > 0 {
			b.WriteString("  ")
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
