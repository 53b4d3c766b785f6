package obsfile

import (
	"strconv"
	"testing"

	"github.com/outagewatch/outagewatch/obs"
)

func benchLines(csv bool) [][]byte {
	ccs := []string{"PT", "ES", "GB", "UG", "US"}
	var out [][]byte
	for i := range 1000 {
		ts := strconv.FormatInt(1745836500+int64(i/5)*300, 10)
		v := strconv.FormatFloat(float64(i)*1234.5, 'f', -1, 64)
		if csv {
			out = append(out, []byte(ts+",country:"+ccs[i%5]+",traffic_bytes,"+v))
		} else {
			out = append(out, []byte(`{"time":`+ts+`,"entity":"country:`+ccs[i%5]+`","signal":"traffic_bytes","value":`+v+`}`))
		}
	}
	return out
}

func benchDecode(b *testing.B, d interface {
	Decode([]byte, obs.Sink) error
}, lines [][]byte) {
	var n int
	sink := obs.SinkFunc(func(*obs.Observation) { n++ })
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := d.Decode(lines[i%len(lines)], sink); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkJSONDecode(b *testing.B) { benchDecode(b, NewJSONDecoder(), benchLines(false)) }
func BenchmarkCSVDecode(b *testing.B)  { benchDecode(b, NewCSVDecoder(), benchLines(true)) }

// BenchmarkCSVDecodeNumbered decodes what a scale run feeds: 10,000
// networks, one line each per five-minute bucket, into a sink that numbers
// its series.
func BenchmarkCSVDecodeNumbered(b *testing.B) {
	const n = 10_000
	lines := make([][]byte, 0, 3*n)
	for bucket := range 3 {
		for i := range n {
			lines = append(lines, []byte(strconv.Itoa(1745836500+300*bucket)+",asn:"+strconv.Itoa(64512+i)+",traffic_bytes,"+strconv.Itoa(1000+i%13)))
		}
	}
	d, sink := NewCSVDecoder(), &numberSink{}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := d.Decode(lines[i%len(lines)], sink); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
