package flows

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"testing"

	"google.golang.org/protobuf/proto"

	flowpb "github.com/netsampler/goflow2/v2/pb"

	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

// benchRecords are what an sFlow collector in front of a content network
// sends: our AS on one side, one of 2,000 eyeball ASNs on the other, every
// field goflow2 fills for an IPv4 TCP sample.
func benchRecords() (msgs []*flowpb.FlowMessage, cfg Config) {
	r := rand.New(rand.NewPCG(11, 12))
	m := netmap.New()
	cc := []string{"PT", "ES", "GB", "UG", "US", "DE", "FR", "BR"}
	for i := range 2000 {
		m.Countries[uint32(64512+i)] = cc[i%len(cc)]
	}
	for i := range 256 {
		m.Regions.Insert(netip.PrefixFrom(netip.AddrFrom4([4]byte{81, byte(i), 0, 0}), 16), "PT-"+itoa(uint64(i%20)))
	}
	base := uint64(1745841600) * 1e9
	for i := range 4096 {
		eye := make([]byte, 4)
		binary.BigEndian.PutUint32(eye, 81<<24|r.Uint32N(1<<24))
		ours := []byte{198, 51, 100, byte(i)}
		msg := &flowpb.FlowMessage{
			Type: flowpb.FlowMessage_SFLOW_5, TimeReceivedNs: base + uint64(i)*1e6, SequenceNum: uint32(i),
			SamplingRate: 1024, SamplerAddress: []byte{192, 0, 2, 1},
			TimeFlowStartNs: base + uint64(i)*1e6, TimeFlowEndNs: base + uint64(i)*1e6,
			Bytes: 64 + r.Uint64N(1436), Packets: 1, Etype: 0x800, Proto: 6,
			SrcPort: 443, DstPort: 1024 + r.Uint32N(60000), InIf: 3, OutIf: 7,
			SrcMac: r.Uint64N(1 << 48), DstMac: r.Uint64N(1 << 48), IpTtl: 64, TcpFlags: 0x18,
			SrcAs: asLocal, DstAs: 64512 + r.Uint32N(2000), NextHop: []byte{198, 51, 100, 254},
			SrcNet: 24, DstNet: 16, SrcAddr: ours, DstAddr: eye,
			LayerStack: []flowpb.FlowMessage_LayerStack{flowpb.FlowMessage_Ethernet, flowpb.FlowMessage_IPv4, flowpb.FlowMessage_TCP},
			LayerSize:  []uint32{14, 20, 20},
		}
		if i%2 == 1 { // ingress half
			msg.SrcAs, msg.DstAs = msg.DstAs, msg.SrcAs
			msg.SrcAddr, msg.DstAddr = msg.DstAddr, msg.SrcAddr
		}
		msgs = append(msgs, msg)
	}
	return msgs, Config{Map: m, LocalASNs: []uint32{asLocal}}
}

type sumSink struct{ bytes float64 }

func (s *sumSink) Observe(o *obs.Observation) {
	if o.Signal == obs.TrafficBytes {
		s.bytes += o.Value
	}
}

func reportRate(b *testing.B, totalBytes int) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(totalBytes)/float64(b.N), "B/record")
}

func BenchmarkProtoDecode(b *testing.B) {
	msgs, cfg := benchRecords()
	var in [][]byte
	size := 0
	for _, m := range msgs {
		in = append(in, mustDelim(m))
		size += len(in[len(in)-1])
	}
	d := NewProtoDecoder(cfg)
	var sink sumSink
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := d.Decode(in[i%len(in)], &sink); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, size*b.N/len(in))
}

// BenchmarkBareProtoUnmarshal is the baseline: proto.Unmarshal of the same
// records into one reused message, with no attribution at all.
func BenchmarkBareProtoUnmarshal(b *testing.B) {
	msgs, _ := benchRecords()
	var in [][]byte
	size := 0
	for _, m := range msgs {
		buf, _ := proto.Marshal(m)
		in = append(in, buf)
		size += len(buf)
	}
	var m flowpb.FlowMessage
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := proto.Unmarshal(in[i%len(in)], &m); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, size*b.N/len(in))
}

func BenchmarkJSONDecode(b *testing.B) {
	msgs, cfg := benchRecords()
	var in [][]byte
	size := 0
	for _, m := range msgs {
		in = append(in, AppendJSON(nil, m))
		size += len(in[len(in)-1])
	}
	d := NewJSONDecoder(cfg)
	var sink sumSink
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := d.Decode(in[i%len(in)], &sink); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, size*b.N/len(in))
}

// BenchmarkStdlibJSONUnmarshal is the baseline: encoding/json into a struct
// holding only the fields attribution needs, with no attribution at all.
func BenchmarkStdlibJSONUnmarshal(b *testing.B) {
	msgs, _ := benchRecords()
	var in [][]byte
	size := 0
	for _, m := range msgs {
		in = append(in, AppendJSON(nil, m))
		size += len(in[len(in)-1])
	}
	var v struct {
		TimeReceivedNs uint64 `json:"time_received_ns"`
		TimeFlowEndNs  uint64 `json:"time_flow_end_ns"`
		SamplingRate   uint64 `json:"sampling_rate"`
		Bytes          uint64 `json:"bytes"`
		Packets        uint64 `json:"packets"`
		SrcAs          uint32 `json:"src_as"`
		DstAs          uint32 `json:"dst_as"`
		SrcAddr        string `json:"src_addr"`
		DstAddr        string `json:"dst_addr"`
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := json.Unmarshal(in[i%len(in)], &v); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, size*b.N/len(in))
}

// BenchmarkProtoParse is the wire reading alone, without attribution: the
// figure to hold against BenchmarkBareProtoUnmarshal.
func BenchmarkProtoParse(b *testing.B) {
	msgs, _ := benchRecords()
	var in [][]byte
	size := 0
	for _, m := range msgs {
		buf, _ := proto.Marshal(m)
		in = append(in, buf)
		size += len(buf)
	}
	var r record
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := parseFlowMessage(in[i%len(in)], &r); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, size*b.N/len(in))
}
