package dnsin

import (
	"net/netip"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

// The registered formats are what the pipeline builds for "dns" records:
// they must attribute with the pipeline's map.
func TestRegisteredFormats(t *testing.T) {
	env := &ingest.Env{Map: testMap()}
	dec, err := ingest.NewDecoder(Stream, FormatDnstap, env)
	if err != nil {
		t.Fatal(err)
	}
	var got obs.Slice
	for _, r := range readAll(t, "testdata/dnsdist.dnstap.fstrm") {
		if err := dec.Decode(r.Value, &got); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 7 || got[0].Entity != "asn:64500" || got[2].Entity != "country:PT" {
		t.Fatalf("dnstap through the registry: %v", got)
	}

	jd, err := ingest.NewDecoder(Stream, FormatJSON, env)
	if err != nil {
		t.Fatal(err)
	}
	line := AppendQueryLog(nil, &QueryLog{Time: 1745836380e9, Client: netip.MustParseAddr("192.0.2.7"),
		QName: "www.example.pt", QType: 1, Rcode: 2})
	got = got[:0]
	if err := jd.Decode(line, &got); err != nil {
		t.Fatal(err)
	}
	// One query (queries and clients for the AS and ES) and one failed
	// response (AS, ES and the zone).
	if len(got) != 7 || got[0].Entity != "asn:64501" || got[6].Entity != "zone:example.pt" || got[6].Value != 1 {
		t.Fatalf("query log through the registry: %v", got)
	}

	// Without a map, nothing is attributed but the zone still counts.
	nd, _ := ingest.NewDecoder(Stream, FormatJSON, &ingest.Env{})
	got = got[:0]
	if err := nd.Decode(line, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Entity != "zone:example.pt" {
		t.Fatalf("no map: %v", got)
	}
}
