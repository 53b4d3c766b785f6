package quality

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
	qm "github.com/outagewatch/outagewatch/obs/quality"
)

// checkObservations holds what every decoded observation must satisfy,
// whatever the input.
func checkObservations(t *testing.T, out obs.Slice) {
	for _, o := range out {
		if o.Time <= 0 || o.Entity == "" || math.IsNaN(o.Value) || math.IsInf(o.Value, 0) || o.Value < 0 {
			t.Fatalf("bad observation %+v", o)
		}
		if _, _, err := obs.SplitEntity(o.Entity); err != nil {
			t.Fatalf("bad entity: %v", err)
		}
		if o.Signal == qm.PacketLoss && (o.Value > 1 || o.Hash == 0) {
			t.Fatalf("bad loss %+v", o)
		}
		if strings.HasPrefix(o.Entity, qm.KindPath+":") {
			if _, _, ok := qm.ParsePathEntity(o.Entity); !ok {
				t.Fatalf("path entity %q does not parse", o.Entity)
			}
		}
	}
}

func checkErr(t *testing.T, err error, out obs.Slice) {
	var ie *ingest.Error
	if !errors.As(err, &ie) || ie.Reason == "" {
		t.Fatalf("error %v is not an ingest.Error with a reason", err)
	}
	if len(out) != 0 {
		t.Fatalf("%d observations emitted with error %v", len(out), err)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(sample))
	for _, s := range []string{
		`{"time": 1745836500, "src": "203.0.113.9", "rtt_ms": 22.1}`,
		`{"time": "2025-04-28T12:35:00.25+02:00", "src": "2001:db8::1", "sent": 4, "rcvd": 1}`,
		`{"time":"2025-04-28T10:35:00Z","probe":"p\u00e9\ud83d\ude00","extra":{"a":[1,{"b":null}]},"country":"pt","site":"lis01","transit_asn":1299,"dst":"2001:db8:7:1::9","sent":1,"rcvd":0,"bandwidth_mbps":0}`,
		`{"time": 1745836500.5, "transit_asn": 174, "dst_asn": 15169, "sent": 2, "rcvd": 2}`,
		`{"time": 1745836500, "rtt_ms": [1,]}`,
		`{"time": "2025-02-30T00:00:00Z", "rtt_ms": 1}`,
		`{"time": 1e3, "rtt_ms": -0}`,
		`{"time": 1745836500, "rtt_ms": 1, "x": [[[[[[[[]]]]]]]]}`,
		``, `{`, `{"`, `{"time"`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		d := NewDecoder(nil)
		var out obs.Slice
		err := d.Decode(in, &out)
		if err != nil {
			checkErr(t, err, out)
			return
		}
		checkObservations(t, out)
		// What decodes re-encodes to the same measurement.
		var m, back Measurement
		if err := d.Parse(in, &m); err != nil {
			t.Fatalf("Parse refused what Decode accepted: %v", err)
		}
		enc := AppendJSON(nil, &m)
		if err := d.Parse(enc, &back); err != nil {
			t.Fatalf("re-encoded %s does not parse: %v", enc, err)
		}
		if !equalMeasurement(&m, &back) {
			t.Fatalf("round trip through %s:\n got %+v\nwant %+v", enc, back, m)
		}
	})
}

func FuzzDecodeAtlas(f *testing.F) {
	data, err := os.ReadFile("testdata/ping-results.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f.Add([]byte(l))
	}
	for _, s := range []string{
		`{"type":"ping","af":6,"timestamp":1378271710,"from":"2001:db8::1","result":[{"x":"*"},{"rtt":10},{"rtt":11,"dup":true},{"error":"x"}]}`,
		`{"type":"ping","timestamp":1378271710,"from":"80.56.1.1","sent":0,"rcvd":0,"result":[]}`,
		`{"type":"ping","af":6,"prb_id":82,"timestamp":1378271710,"from":"","dst_addr":"2001:6b0:e:3::1","result":[{"rtt":30.5}]}`,
		`{"timestamp":1378271710,"result":[{"rtt":1}`,
		`{"timestamp":1378271710,"sent":1,"rcvd":2}`,
		``, `[`, `{"result":[{"dup":1e400}]}`,
		`{"type":"traceroute","timestamp":1480000000,"prb_id":202,"from":"80.56.151.3","result":[{"hop":1,"result":[{"from":"192.168.1.1","rtt":1.2},{"x":"*"}]},{"hop":2,"result":[{"from":"62.2.16.12","rtt":30.25},{"from":"62.2.16.12","rtt":29.9,"dup":1}]},{"hop":255,"error":"x"}],"dst_addr":"62.2.16.12"}`,
		`{"type":"traceroute","timestamp":1480000000,"dst_addr":"::1","result":[{"hop":1,"result":[{"from":null,"rtt":-1}]},{"result":[{"rtt":1},{"from":"::1","rtt":2}]}]}`,
	} {
		f.Add([]byte(s))
	}
	nm := atlasMap()
	f.Fuzz(func(t *testing.T, in []byte) {
		d := NewAtlasDecoder(nm)
		var out obs.Slice
		if err := d.Decode(in, &out); err != nil {
			checkErr(t, err, out)
			return
		}
		checkObservations(t, out)
	})
}
