package dnsin

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	dnstap "github.com/dnstap/golang-dnstap"
	"github.com/miekg/dns"
	"google.golang.org/protobuf/proto"

	"github.com/outagewatch/outagewatch/obs"
)

// benchFrames renders n frames of a resolver's client traffic: queries and
// responses in equal numbers, 4096 clients over three ASes, 512 names in 64
// zones, 2 % SERVFAIL.
func benchFrames(tb testing.TB, n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	frames := make([][]byte, 0, n)
	for i := range n {
		c := rng.IntN(4096)
		var client netip.Addr
		switch c % 3 {
		case 0:
			client = netip.AddrFrom4([4]byte{10, 1, byte(c >> 8), byte(c)})
		case 1:
			client = netip.AddrFrom4([4]byte{192, 0, 2, byte(c)})
		default:
			client = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(c >> 8), 15: byte(c)})
		}
		name := rng.IntN(512)
		f := Frame{
			Type:      dnstap.Message_CLIENT_QUERY,
			QueryTime: t0 + int64(i)*1e6, Client: client, ClientPort: uint16(30000 + i),
			Server: netip.MustParseAddr("192.0.2.53"), ServerPort: 53,
			Identity: "res1.lis01", ID: uint16(i),
			QName: fmt.Sprintf("host%d.zone%d.example.pt", name, name%64), QType: dns.TypeA,
		}
		if i%2 == 1 {
			f.Type = dnstap.Message_CLIENT_RESPONSE
			f.ResponseTime = f.QueryTime + 2e6
			if rng.IntN(50) == 0 {
				f.Rcode = dns.RcodeServerFailure
			}
		}
		frames = append(frames, mustFrame(tb, f))
	}
	return frames
}

type countSink struct{ n int }

func (s *countSink) Observe(*obs.Observation) { s.n++ }

// BenchmarkDnstapDecode is the decoder as the pipeline runs it: frame in,
// observations out to a sink.
func BenchmarkDnstapDecode(b *testing.B) {
	frames := benchFrames(b, 4096)
	d := NewDnstapDecoder(testMap(), Config{})
	var sink countSink
	for _, f := range frames { // warm the caches: the steady state
		if err := d.Decode(f, &sink); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Decode(frames[i%len(frames)], &sink); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

// BenchmarkDnstapFullUnmarshal is the baseline the decoder is measured
// against: golang-dnstap's proto.Unmarshal and miekg/dns's Msg.Unpack of the
// same frames, without any attribution.
func BenchmarkDnstapFullUnmarshal(b *testing.B) {
	frames := benchFrames(b, 4096)
	var d dnstap.Dnstap
	var m dns.Msg
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := proto.Unmarshal(frames[i%len(frames)], &d); err != nil {
			b.Fatal(err)
		}
		wire := d.Message.QueryMessage
		if d.Message.GetType() == dnstap.Message_CLIENT_RESPONSE {
			wire = d.Message.ResponseMessage
		}
		if err := m.Unpack(wire); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

func BenchmarkQueryLogDecode(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var lines [][]byte
	for i := range 4096 {
		c := rng.IntN(4096)
		rcode := dns.RcodeSuccess
		if rng.IntN(50) == 0 {
			rcode = dns.RcodeServerFailure
		}
		name := rng.IntN(512)
		q := QueryLog{
			Time: t0 + int64(i)*1e6, Client: netip.AddrFrom4([4]byte{10, 1, byte(c >> 8), byte(c)}),
			QName: fmt.Sprintf("host%d.zone%d.example.pt.", name, name%64), QType: dns.TypeAAAA,
			Rcode: rcode, Protocol: "udp",
		}
		l := AppendQueryLog(nil, &q)
		lines = append(lines, l[:len(l)-1])
	}
	d := NewQueryLogDecoder(testMap(), Config{})
	var sink countSink
	var bytes int64
	for _, l := range lines {
		if err := d.Decode(l, &sink); err != nil {
			b.Fatal(err)
		}
		bytes += int64(len(l))
	}
	b.SetBytes(bytes / int64(len(lines)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Decode(lines[i%len(lines)], &sink); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// TestDecodeDoesNotAllocate pins the zero-allocation steady state that the
// benchmarks measure, so that a change that breaks it fails a test.
func TestDecodeDoesNotAllocate(t *testing.T) {
	frames := benchFrames(t, 512)
	d := NewDnstapDecoder(testMap(), Config{})
	var sink countSink
	for _, f := range frames {
		if err := d.Decode(f, &sink); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() { d.Decode(frames[i%len(frames)], &sink); i++ }); n != 0 {
		t.Errorf("dnstap: %v allocations per frame", n)
	}
	q := QueryLog{Time: t0, Client: netip.MustParseAddr("10.0.0.1"), QName: "a.example.pt", Rcode: 2, Protocol: "udp"}
	line := AppendQueryLog(nil, &q)
	ld := NewQueryLogDecoder(testMap(), Config{})
	ld.Decode(line, &sink)
	if n := testing.AllocsPerRun(1000, func() { ld.Decode(line, &sink) }); n != 0 {
		t.Errorf("query log: %v allocations per line", n)
	}
}
