package dnsin

import (
	"bytes"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

func TestQueryLogLines(t *testing.T) {
	ts := time.Date(2025, 4, 28, 10, 33, 0, 250_000_000, time.UTC).UnixNano()
	for _, tc := range []struct {
		line  string
		want  logLine
		name  string
		error string // reason, "" for none
	}{
		{line: `{"time":"2025-04-28T10:33:00.25Z","client":"192.0.2.7","qname":"Example.PT.","qtype":"A","rcode":"SERVFAIL","protocol":"udp"}`,
			want: logLine{Time: ts, Client: netip.MustParseAddr("192.0.2.7"), QType: dns.TypeA, Rcode: 2, HasRcode: true, Protocol: [8]byte{'u', 'd', 'p'}}, name: "example.pt"},
		{line: ` { "client" : "::ffff:10.0.0.1", "time" : 1745836380.25 , "rcode":5, "qtype":28, "extra":{"a":[1,"}",{"b":null}]}, "qname":"a\u002eb.example.com"} `,
			want: logLine{Time: ts, Client: netip.MustParseAddr("10.0.0.1"), QType: dns.TypeAAAA, Rcode: 5, HasRcode: true}, name: "a.b.example.com"},
		{line: `{"time":"2025-04-28T12:33:00.25+02:00","client":"2001:db8::1","qname":"x.pt","rcode":"timeout","qtype":"TYPE65"}`,
			want: logLine{Time: ts, Client: netip.MustParseAddr("2001:db8::1"), QType: 65, Rcode: RcodeTimeout, HasRcode: true}, name: "x.pt"},
		{line: `{"time":"1745836380.25","client":"10.0.0.2","rcode":null,"qname":"."}`,
			want: logLine{Time: ts, Client: netip.MustParseAddr("10.0.0.2")}, name: ""},
		{line: `{"time":"2025-04-28T10:33:00Z","client":"10.0.0.2","rcode":"NXDOMAIN","ok":true,"n":-1.5e3}`,
			want: logLine{Time: ts - 250e6, Client: netip.MustParseAddr("10.0.0.2"), Rcode: 3, HasRcode: true}},
		{line: `{"time":"2025-02-29T10:33:00Z","client":"10.0.0.2"}`, error: "time"},
		{line: `{"time":"2025-04-28T10:33:00Z","client":"10.0.0.256"}`, error: "address"},
		{line: `{"time":"2025-04-28T10:33:00Z","client":"10.0.0.1","rcode":"BROKEN"}`, error: "rcode"},
		{line: `{"time":"2025-04-28T10:33:00Z","client":"10.0.0.1","rcode":70000}`, error: "rcode"},
		{line: `{"time":"2025-04-28T10:33:00Z","client":"10.0.0.1","qname":"a..b"}`, error: "dns"},
		{line: `{"time":"2025-04-28T10:33:00Z"}`, error: "field_missing"},
		{line: `{"client":"10.0.0.1"}`, error: "field_missing"},
		{line: `{"time":"2025-04-28T10:33:00Z","client":"10.0.0.1"`, error: "json"},
		{line: `{"time":"2025-04-28T10:33:00Z","client":"10.0.0.1"} x`, error: "json"},
		{line: `{"time":"2025-04-28T10:33:00Z","client":10}`, error: "field_type"},
		{line: `[1,2]`, error: "json"},
		{line: ``, error: "json"},
		{line: `{"time":"2025-04-28T10:33:00Z","client":"10.0.0.1","x":"a\u00"}`, error: ""},
		{line: `{"time":"2025-04-28T10:33:00Z","client":"10.0.0.1","qname":"a\u00"}`, error: "json"},
	} {
		d := NewQueryLogDecoder(testMap(), Config{})
		var got obs.Slice
		err := d.Decode([]byte(tc.line), &got)
		if tc.error != "" {
			if err == nil || ingest.Reason(err) != tc.error {
				t.Errorf("%s: error %v, want reason %s", tc.line, err, tc.error)
			}
			if len(got) != 0 || d.Stats().Malformed != 1 {
				t.Errorf("%s: malformed line observed", tc.line)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		if tc.want.Time != 0 && d.line != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.line, d.line, tc.want)
		}
		if tc.want.Time != 0 && string(d.ev.name) != tc.name {
			t.Errorf("%s: qname %q, want %q", tc.line, d.ev.name, tc.name)
		}
	}
}

// TestQueryLogRoundTrip renders lines with AppendQueryLog and checks the
// observations the decoder makes of them, exactly.
func TestQueryLogRoundTrip(t *testing.T) {
	lines := []QueryLog{
		{Time: t0 + 123456789, Client: netip.MustParseAddr("10.0.0.1"), QName: "www.Example.pt.", QType: dns.TypeA, Rcode: dns.RcodeSuccess, Protocol: "udp"},
		{Time: t0 + 1e9, Client: netip.MustParseAddr("10.0.0.2"), QName: "example.pt", QType: dns.TypeMX, Rcode: RcodeTimeout},
		{Time: t0 + 2e9, Client: netip.MustParseAddr("192.0.2.1"), QName: "q\"x\\.example.es", QType: 65280, Rcode: dns.RcodeRefused},
		{Time: t0 + 3e9, Client: netip.MustParseAddr("10.0.0.1"), QName: "example.pt", QType: dns.TypeA, Rcode: 4000},
	}
	var buf []byte
	for i := range lines {
		buf = AppendQueryLog(buf, &lines[i])
	}
	d := NewQueryLogDecoder(testMap(), Config{})
	var got obs.Slice
	for line := range bytes.Lines(buf) {
		if err := d.Decode(bytes.TrimSuffix(line, []byte("\n")), &got); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	h := func(s string) uint64 { return ClientHash(netip.MustParseAddr(s), 0) }
	var want obs.Slice
	add := func(tm int64, s obs.Signal, e string, v float64, hash uint64) {
		want = append(want, obs.Observation{Time: tm, Signal: s, Entity: e, Value: v, Hash: hash})
	}
	client := func(tm int64, asn, cc, ip string, fail float64, zone string) {
		add(tm, Queries, asn, 1, 0)
		add(tm, Clients, asn, 1, h(ip))
		add(tm, Queries, cc, 1, 0)
		add(tm, Clients, cc, 1, h(ip))
		add(tm, FailureRatio, asn, fail, 0)
		add(tm, FailureRatio, cc, fail, 0)
		add(tm, FailureRatio, zone, fail, 0)
	}
	client(t0+123456789, "asn:64500", "country:PT", "10.0.0.1", 0, "zone:example.pt")
	client(t0+1e9, "asn:64500", "country:PT", "10.0.0.2", 1, "zone:example.pt")
	client(t0+2e9, "asn:64501", "country:ES", "192.0.2.1", 1, "zone:example.es")
	client(t0+3e9, "asn:64500", "country:PT", "10.0.0.1", 0, "zone:example.pt")
	if !slices.Equal(got, want) {
		t.Errorf("observations\n got %v\nwant %v", got, want)
	}
	if s := d.Stats(); s != (Stats{Records: 4, Queries: 4, Responses: 4, Failures: 2}) {
		t.Errorf("stats %v", s)
	}
}

func TestRFC3339MatchesTimeParse(t *testing.T) {
	for _, s := range []string{
		"2025-04-28T10:33:00Z", "2025-04-28t10:33:00.123456789z", "2024-02-29T23:59:59-09:30",
		"1970-01-01T00:00:00+00:00", "2000-03-01T00:00:00.5+14:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z",
	} {
		checkRFC3339(t, s)
		if _, ok := parseRFC3339([]byte(s)); !ok {
			t.Errorf("%s rejected", s)
		}
	}
	for _, s := range []string{"2025-13-01T00:00:00Z", "2023-02-29T00:00:00Z", "2025-04-28T24:00:00Z", "2025-04-28T10:33:00", "2025-04-28T10:33:00.Z", "2025-04-28T10:33:00+0200"} {
		if _, ok := parseRFC3339([]byte(s)); ok {
			t.Errorf("%s accepted", s)
		}
	}
}

func checkRFC3339(t testing.TB, s string) {
	got, ok := parseRFC3339([]byte(s))
	if !ok {
		return
	}
	tt, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		// time.Parse takes only 'T' and 'Z' in upper case and no space.
		if len(s) > 10 && (s[10] == 't' || s[10] == ' ' || s[len(s)-1] == 'z') {
			return
		}
		t.Fatalf("%q: ours %d, time.Parse: %v", s, got, err)
	}
	if tt.UnixNano() != got {
		t.Fatalf("%q: ours %d, time.Parse %d", s, got, tt.UnixNano())
	}
}

func FuzzQueryLogDecode(f *testing.F) {
	f.Add([]byte(`{"time":"2025-04-28T10:33:00.25Z","client":"192.0.2.7","qname":"example.pt.","qtype":"A","rcode":"SERVFAIL","protocol":"udp"}`))
	f.Add([]byte(`{"time":1745836380,"client":"2001:db8::1","qname":"a\u002eb\ud83d\ude00.pt","rcode":5,"x":[{"y":"]"}]}`))
	f.Add([]byte(`{"time":"1745836380.5","client":"10.0.0.1%eth0","rcode":"TIMEOUT"}`))
	f.Add([]byte(`{"time":"2025-04-28T10:33:00Z","client":"10.0.0.1","qname":"a\u00"}`))
	f.Add([]byte(`{`))
	d := NewQueryLogDecoder(testMap(), Config{})
	f.Fuzz(func(t *testing.T, line []byte) {
		var got obs.Slice
		before := d.Stats()
		err := d.Decode(line, &got)
		after := d.Stats()
		if err != nil {
			var e *ingest.Error
			if !errors.As(err, &e) || e.Reason == "" || len(got) != 0 || after.Malformed != before.Malformed+1 {
				t.Fatalf("bad error handling: %v, %d observations", err, len(got))
			}
			return
		}
		if after.Queries != before.Queries+1 {
			t.Fatal("accepted line not counted as a query")
		}
		for _, o := range got {
			if o.Time != d.line.Time || o.Entity == "" {
				t.Fatalf("observation %+v", o)
			}
		}
	})
}
