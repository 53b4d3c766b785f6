package silence

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
)

// FuzzDecode feeds the POST /api/v1/silences body decoding and the checks
// after it: no input may panic, and whatever validates matches without
// panicking and only inside its window.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"entity":"asn:5089","start":"2023-04-04T00:00:00Z","end":"2023-04-04T09:00:00Z","author":"ana","comment":"core maintenance"}`,
		`{"labels":{"country":"G[B"},"start":"2023-04-04T00:00:00Z","end":"2023-04-04T09:00:00Z","author":"a","comment":"c"}`,
		`{"entity":"*","rule":"x","detector":"\\u0000","start":"0001-01-01T00:00:00Z","end":"9999-12-31T23:59:59Z","author":" ","comment":"c"}`,
		`{"entty":"asn:1"}`, `[]`, `null`, `{"start":"yesterday"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Silence
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if dec.Decode(&s) != nil || s.Validate() != nil {
			return
		}
		ev := &alerting.Event{Entity: "asn:5089", Rule: "x", Detector: "traffic_drop", Labels: map[string]string{"country": "GB"}}
		ev.At = s.Start.Add(-time.Nanosecond)
		if s.Matches(ev) {
			t.Fatalf("matches before its start: %+v", s)
		}
		ev.At = s.End
		if s.Matches(ev) {
			t.Fatalf("matches at its end: %+v", s)
		}
	})
}
