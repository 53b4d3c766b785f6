package scenario

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/ingest"
	dnsin "github.com/outagewatch/outagewatch/ingest/dns"
	"github.com/outagewatch/outagewatch/obs"
)

const dnsSpec = `
name: dns-test
start: 2024-03-04T00:00:00Z
end: 2024-03-06T00:00:00Z
seed: 42
countries:
  PT: {peak: 1e9, utc_offset: 1, noise: 1e-12}
networks:
  - {asn: 3243, country: PT, share: 0.6}
  - {asn: 2860, country: PT, share: 0.4}
events:
  - {name: dns half, start: 2024-03-05T10:00:00Z, end: 2024-03-05T12:00:00Z, factor: 0.5, streams: [dns], targets: ["asn:3243"]}
  - {name: flows only, start: 2024-03-05T14:00:00Z, end: 2024-03-05T16:00:00Z, factor: 0.1, streams: [flows], targets: ["country:PT"]}
flows: {disabled: true}
dns:
  FORMAT
  failure: 1e-12
  nxdomain: 1e-12
  networks:
    - {asn: 3243, queries: 40, clients: 50}
    - {asn: 2860, queries: 17}
  zones:
    - {zone: sapo.pt, share: 3}
    - {zone: google.com, share: 1}
  failures:
    - {zone: sapo.pt, networks: [2860], start: 2024-03-05T20:00:00Z, end: 2024-03-05T21:00:00Z, ratio: 1}
`

func renderDNS(t *testing.T, format string) (*Spec, []*ingest.Record) {
	t.Helper()
	s, err := Parse("dns-test.yaml", []byte(strings.Replace(dnsSpec, "FORMAT", format, 1)))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.Renderers()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Stream() != "dns" {
		t.Fatalf("renderers %v", rs)
	}
	var recs []*ingest.Record
	if err := rs[0].Render(s, func(r *ingest.Record) { recs = append(recs, r) }); err != nil {
		t.Fatal(err)
	}
	return s, recs
}

// tally decodes records and counts per bucket what the pipeline would see.
type tally struct {
	queries  map[string]map[int64]float64 // entity -> bucket -> queries
	failures map[string]float64           // entity -> failed responses
	answers  map[string]float64           // entity -> responses
}

func decodeDNS(t *testing.T, s *Spec, format string, recs []*ingest.Record) (tally, dnsin.Stats) {
	t.Helper()
	var dec interface {
		ingest.Decoder
		Stats() dnsin.Stats
	}
	if format == dnsin.FormatJSON {
		dec = dnsin.NewQueryLogDecoder(s.Map(), dnsin.Config{})
	} else {
		dec = dnsin.NewDnstapDecoder(s.Map(), dnsin.Config{})
	}
	tl := tally{queries: map[string]map[int64]float64{}, failures: map[string]float64{}, answers: map[string]float64{}}
	var last int64
	sink := obs.SinkFunc(func(o *obs.Observation) {
		switch o.Signal {
		case dnsin.Queries:
			m := tl.queries[o.Entity]
			if m == nil {
				m = map[int64]float64{}
				tl.queries[o.Entity] = m
			}
			m[o.Time-o.Time%int64(Bucket)] += o.Value
		case dnsin.FailureRatio:
			tl.answers[o.Entity]++
			tl.failures[o.Entity] += o.Value
		}
	})
	for _, r := range recs {
		if r.Stream != "dns" || r.Format != format || r.Time < last {
			t.Fatalf("record %+v after %d", r, last)
		}
		last = r.Time
		if err := dec.Decode(r.Value, sink); err != nil {
			t.Fatalf("record at %d does not decode: %v", r.Time, err)
		}
	}
	return tl, dec.Stats()
}

func TestDNSSectionRenders(t *testing.T) {
	for _, format := range []string{"", "format: dns-json"} {
		name := dnsin.FormatDnstap
		if format != "" {
			name = dnsin.FormatJSON
		}
		t.Run(name, func(t *testing.T) {
			s, recs := renderDNS(t, format)
			tl, st := decodeDNS(t, s, name, recs)
			if st.Unattributed != 0 || st.Malformed != 0 || st.Queries != uint64(len(recs)) || st.Responses != uint64(len(recs)) {
				t.Fatalf("stats %v for %d records", st, len(recs))
			}
			// Totals: the curve and the DNS events, minute by minute, with
			// fractions carried, so the total is the floor of the sum.
			for _, n := range []struct {
				asn uint32
				q   float64
			}{{3243, 40}, {2860, 17}} {
				var want float64
				ent := obs.ASN(n.asn)
				for m := s.Start; m.Before(s.End); m = m.Add(time.Minute) {
					want += n.q / 5 * Seasonal(m, 1, 0.9) * s.Factor("dns", m, ent, "country:PT")
				}
				var got float64
				for _, v := range tl.queries[ent] {
					got += v
				}
				if got != math.Floor(want+1e-6) {
					t.Errorf("%s: %v queries, want %v", ent, got, math.Floor(want))
				}
			}
			// The DNS event halves AS3243's queries; the flows-only event
			// leaves DNS alone (same hour the day before, give or take the
			// carried fraction).
			q := tl.queries["asn:3243"]
			day := 24 * time.Hour
			at := func(s string) int64 { t, _ := time.Parse(time.RFC3339, s); return t.UnixNano() }
			if a, b := q[at("2024-03-05T11:00:00Z")], q[at("2024-03-04T11:00:00Z")]; math.Abs(a-b/2) > 1 {
				t.Errorf("during the dns event %v queries, the day before %v", a, b)
			}
			if a, b := q[at("2024-03-05T15:00:00Z")], q[at("2024-03-05T15:00:00Z")-int64(day)]; math.Abs(a-b) > 1 || a == 0 {
				t.Errorf("during the flows-only event %v queries, the day before %v", a, b)
			}
			// Zones follow their shares (3:1) within a query or two.
			sapo, google := tl.answers["zone:sapo.pt"], tl.answers["zone:google.com"]
			if math.Abs(sapo/(sapo+google)-0.75) > 0.001 {
				t.Errorf("zone shares %v : %v", sapo, google)
			}
			// Only the episode fails: sapo.pt, from AS2860, for an hour.
			if tl.failures["asn:3243"] != 0 || tl.failures["zone:google.com"] != 0 {
				t.Errorf("failures outside the episode: %v", tl.failures)
			}
			var epi float64
			for b, v := range tl.queries["asn:2860"] {
				if b >= at("2024-03-05T20:00:00Z") && b < at("2024-03-05T21:00:00Z") {
					epi += v
				}
			}
			if f := tl.failures["zone:sapo.pt"]; f != tl.failures["asn:2860"] || math.Abs(f-epi*0.75) > 2 || f == 0 {
				t.Errorf("episode failures %v (AS2860 %v), AS2860 queries in the hour %v", f, tl.failures["asn:2860"], epi)
			}
		})
	}
}

func TestDNSSectionIsDeterministic(t *testing.T) {
	_, a := renderDNS(t, "")
	_, b := renderDNS(t, "")
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%d and %d records", len(a), len(b))
	}
	for i := range a {
		if a[i].Time != b[i].Time || !bytes.Equal(a[i].Value, b[i].Value) {
			t.Fatalf("record %d differs", i)
		}
	}
}

func TestDNSSectionErrors(t *testing.T) {
	cases := map[string]string{
		"format: bind":                 `format: "bind"`,
		"format: dnstap\n  flavour: x": "field flavour not found",
	}
	for in, want := range cases {
		s, err := Parse("x.yaml", []byte(strings.Replace(dnsSpec, "FORMAT", in, 1)))
		if err == nil {
			_, err = s.Renderers()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
	bad := strings.Replace(dnsSpec, "failure: 1e-12", "failure: 1.2", 1)
	s, _ := Parse("x.yaml", []byte(strings.Replace(bad, "FORMAT", "", 1)))
	if _, err := s.Renderers(); err == nil || !strings.Contains(err.Error(), "failure, nxdomain") {
		t.Errorf("failure share: %v", err)
	}
	bad = strings.Replace(dnsSpec, "asn: 2860, queries: 17", "asn: 9, queries: 17", 1)
	s, _ = Parse("x.yaml", []byte(strings.Replace(bad, "FORMAT", "", 1)))
	if _, err := s.Renderers(); err == nil || !strings.Contains(err.Error(), "networks[1]: AS9 is not under the fixture's networks") {
		t.Errorf("unknown network: %v", err)
	}
	bad = strings.Replace(dnsSpec, "ratio: 1}", "ratio: 1, rcode: NXDOMAIN}", 1)
	s, _ = Parse("x.yaml", []byte(strings.Replace(bad, "FORMAT", "", 1)))
	if _, err := s.Renderers(); err == nil || !strings.Contains(err.Error(), `rcode "NXDOMAIN"`) {
		t.Errorf("bad rcode: %v", err)
	}
}
