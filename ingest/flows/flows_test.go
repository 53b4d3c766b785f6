package flows

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netsampler/goflow2/v2/decoders/netflowlegacy"
	flowpb "github.com/netsampler/goflow2/v2/pb"
	"github.com/netsampler/goflow2/v2/producer"
	protoproducer "github.com/netsampler/goflow2/v2/producer/proto"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

func TestFieldNumbers(t *testing.T) {
	fields := (&flowpb.FlowMessage{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		packed := fd.IsList() && (fd.Kind() == protoreflect.Uint32Kind || fd.Kind() == protoreflect.EnumKind)
		if packed != isPackedVarint(fd.Number()) {
			t.Errorf("%s (%d): repeated integer %v, isPackedVarint says %v", fd.Name(), fd.Number(), packed, !packed)
		}
	}
	for name, want := range map[string]protowire.Number{
		"sampling_rate":    fieldSamplingRate,
		"src_addr":         fieldSrcAddr,
		"dst_addr":         fieldDstAddr,
		"bytes":            fieldBytes,
		"packets":          fieldPackets,
		"src_as":           fieldSrcAS,
		"dst_as":           fieldDstAS,
		"time_received_ns": fieldTimeReceivedNs,
		"time_flow_end_ns": fieldTimeFlowEndNs,
	} {
		fd := fields.ByName(protoreflect.Name(name))
		if fd == nil {
			t.Fatalf("flowpb.FlowMessage has no field %s", name)
		}
		if fd.Number() != want {
			t.Errorf("%s: field number %d, decoder uses %d", name, fd.Number(), want)
		}
	}
}

const (
	asLocal  = 13335
	asGB     = 5089
	asPT     = 3243
	asNoCC   = 64500
	tReceive = int64(1745841600_123456789) // 2025-04-28T12:00:00.123456789Z
)

// testMap is a small attribution table: two countries, an origin prefix for
// records without AS numbers and a region prefix inside it.
func testMap() *netmap.Map {
	m := netmap.New()
	m.Countries[asGB] = "GB"
	m.Countries[asPT] = "pt"
	m.Origins.Insert(netip.MustParsePrefix("81.84.0.0/14"), asPT)
	m.Origins.Insert(netip.MustParsePrefix("2001:db8::/32"), asGB)
	m.Regions.Insert(netip.MustParsePrefix("81.84.0.0/16"), "pt-11")
	m.Origins.Insert(netip.MustParsePrefix("198.51.100.0/24"), asLocal)
	return m
}

func testConfig() Config { return Config{Map: testMap(), LocalASNs: []uint32{asLocal, 209242}} }

func ip(s string) []byte { return netip.MustParseAddr(s).AsSlice() }

type flowCase struct {
	name string
	msg  *flowpb.FlowMessage
	want []obs.Observation
	// unattributed is true when the record must be counted and dropped.
	unattributed bool
}

func traffic(t int64, entity string, bytes, packets float64) []obs.Observation {
	return []obs.Observation{
		{Time: t, Signal: obs.TrafficBytes, Entity: entity, Value: bytes},
		{Time: t, Signal: obs.TrafficPackets, Entity: entity, Value: packets},
	}
}

func cat(parts ...[]obs.Observation) []obs.Observation {
	var out []obs.Observation
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func flowCases() []flowCase {
	return []flowCase{
		{
			name: "egress to a GB eyeball, sampled 1:100",
			msg: &flowpb.FlowMessage{Type: flowpb.FlowMessage_SFLOW_5, TimeReceivedNs: uint64(tReceive), SamplingRate: 100,
				Bytes: 1500, Packets: 2, SrcAs: asLocal, DstAs: asGB, SrcAddr: ip("198.51.100.7"), DstAddr: ip("2001:db8::1"),
				TimeFlowEndNs: uint64(tReceive) - 5e9},
			want: cat(traffic(tReceive, "asn:5089", 150000, 200), traffic(tReceive, "country:GB", 150000, 200)),
		},
		{
			name: "ingress from a PT eyeball in a mapped region",
			msg: &flowpb.FlowMessage{TimeReceivedNs: uint64(tReceive), SamplingRate: 1000,
				Bytes: 52, Packets: 1, SrcAs: asPT, DstAs: asLocal, SrcAddr: ip("81.84.3.4"), DstAddr: ip("198.51.100.7")},
			want: cat(traffic(tReceive, "asn:3243", 52000, 1000), traffic(tReceive, "country:PT", 52000, 1000),
				traffic(tReceive, "region:PT-11", 52000, 1000)),
		},
		{
			name: "second local AS, sampling rate 0 counts as 1",
			msg: &flowpb.FlowMessage{TimeReceivedNs: uint64(tReceive),
				Bytes: 9000, Packets: 6, SrcAs: asNoCC, DstAs: 209242},
			want: traffic(tReceive, "asn:64500", 9000, 6),
		},
		{
			name: "transit between two foreign networks: destination is the eyeball",
			msg: &flowpb.FlowMessage{TimeReceivedNs: uint64(tReceive), SamplingRate: 10,
				Bytes: 100, Packets: 1, SrcAs: asPT, DstAs: asGB},
			want: cat(traffic(tReceive, "asn:5089", 1000, 10), traffic(tReceive, "country:GB", 1000, 10)),
		},
		{
			name: "no AS number: origin from the prefix table, time from the flow end",
			msg: &flowpb.FlowMessage{TimeFlowEndNs: uint64(tReceive) + 7, SamplingRate: 2,
				Bytes: 400, Packets: 3, SrcAs: asLocal, DstAddr: ip("81.85.0.1")},
			want: cat(traffic(tReceive+7, "asn:3243", 800, 6), traffic(tReceive+7, "country:PT", 800, 6)),
		},
		{
			name: "IPv4-mapped IPv6 address in the region prefix",
			msg: &flowpb.FlowMessage{TimeReceivedNs: uint64(tReceive), Bytes: 1, Packets: 1,
				SrcAs: asLocal, DstAddr: netip.MustParseAddr("::ffff:81.84.0.9").AsSlice()},
			want: cat(traffic(tReceive, "asn:3243", 1, 1), traffic(tReceive, "country:PT", 1, 1),
				traffic(tReceive, "region:PT-11", 1, 1)),
		},
		{
			name: "router reports AS 0 for our own prefix: the source is the eyeball",
			msg: &flowpb.FlowMessage{TimeReceivedNs: uint64(tReceive), SamplingRate: 8, Bytes: 40, Packets: 1,
				SrcAs: asGB, SrcAddr: ip("2001:db8::9"), DstAddr: ip("198.51.100.80")},
			want: cat(traffic(tReceive, "asn:5089", 320, 8), traffic(tReceive, "country:GB", 320, 8)),
		},
		{
			name: "unknown eyeball address",
			msg: &flowpb.FlowMessage{TimeReceivedNs: uint64(tReceive), Bytes: 1, Packets: 1,
				SrcAs: asLocal, DstAddr: ip("192.0.2.1")},
			unattributed: true,
		},
		{
			name:         "no eyeball address at all",
			msg:          &flowpb.FlowMessage{TimeReceivedNs: uint64(tReceive), Bytes: 1, Packets: 1, DstAs: asLocal},
			unattributed: true,
		},
	}
}

// encodings lists the ways a record reaches a decoder.
var encodings = []struct {
	name   string
	decode func(cfg Config) (ingest.Decoder, func() Stats)
	encode func(t testing.TB, m *flowpb.FlowMessage) []byte
}{
	{"pb-delimited", protoDec, func(t testing.TB, m *flowpb.FlowMessage) []byte {
		b, err := AppendDelimited(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}},
	{"pb-bare", protoDec, func(t testing.TB, m *flowpb.FlowMessage) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}},
	{"json-v2", jsonDec, func(t testing.TB, m *flowpb.FlowMessage) []byte { return AppendJSON(nil, m) }},
	{"json-v1", jsonDec, func(t testing.TB, m *flowpb.FlowMessage) []byte { return v1JSON(m) }},
}

func protoDec(cfg Config) (ingest.Decoder, func() Stats) {
	d := NewProtoDecoder(cfg)
	return d, d.Stats
}

func jsonDec(cfg Config) (ingest.Decoder, func() Stats) {
	d := NewJSONDecoder(cfg)
	return d, d.Stats
}

// v1JSON writes a record the way goflow2 v1 did: Go field names, times in
// seconds (so the test times lose their sub-second part).
func v1JSON(m *flowpb.FlowMessage) []byte {
	var b strings.Builder
	b.WriteString(`{"Type":"` + m.Type.String() + `"`)
	if m.TimeReceivedNs != 0 {
		b.WriteString(`,"TimeReceived":` + itoa(m.TimeReceivedNs/1e9))
	}
	if m.TimeFlowEndNs != 0 {
		b.WriteString(`,"TimeFlowEnd":` + itoa(m.TimeFlowEndNs/1e9))
	}
	b.WriteString(`,"SamplingRate":` + itoa(m.SamplingRate) + `,"Bytes":` + itoa(m.Bytes) + `,"Packets":` + itoa(m.Packets))
	b.WriteString(`,"SrcAS":` + itoa(uint64(m.SrcAs)) + `,"DstAs":` + itoa(uint64(m.DstAs)))
	for _, f := range []struct {
		k string
		v []byte
	}{{"SrcAddr", m.SrcAddr}, {"DstAddr", m.DstAddr}} {
		s := ""
		if a, ok := netip.AddrFromSlice(f.v); ok {
			s = a.String()
		}
		b.WriteString(`,"` + f.k + `":"` + s + `"`)
	}
	b.WriteString(`,"Etype":2048,"Proto":6}`)
	return []byte(b.String())
}

func itoa(v uint64) string { return string(appendUint(nil, "", v)) }

func TestDecodeAttribution(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			dec, stats := enc.decode(testConfig())
			var wantRecords, wantUnattributed, wantObs uint64
			for _, c := range flowCases() {
				var got obs.Slice
				if err := dec.Decode(enc.encode(t, c.msg), &got); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				want := c.want
				if enc.name == "json-v1" {
					want = truncateToSeconds(want)
				}
				if !reflect.DeepEqual([]obs.Observation(got), want) {
					t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, want)
				}
				wantRecords++
				if c.unattributed {
					wantUnattributed++
				}
				wantObs += uint64(len(c.want))
			}
			want := Stats{Records: wantRecords, Unattributed: wantUnattributed, Observations: wantObs}
			if got := stats(); got != want {
				t.Errorf("stats %+v, want %+v", got, want)
			}
			if wantUnattributed != 2 || wantRecords != 9 {
				t.Fatalf("case table changed: %d records, %d unattributed", wantRecords, wantUnattributed)
			}
		})
	}
}

func truncateToSeconds(in []obs.Observation) []obs.Observation {
	out := append([]obs.Observation(nil), in...)
	for i := range out {
		out[i].Time -= out[i].Time % 1e9
	}
	return out
}

func TestNilMapAttributesASNOnly(t *testing.T) {
	for _, enc := range encodings {
		dec, stats := enc.decode(Config{LocalASNs: []uint32{asLocal}})
		var got obs.Slice
		m := &flowpb.FlowMessage{TimeReceivedNs: 3e9, Bytes: 10, Packets: 1, SrcAs: asLocal, DstAs: asGB, DstAddr: ip("81.84.0.1")}
		if err := dec.Decode(enc.encode(t, m), &got); err != nil {
			t.Fatal(err)
		}
		if want := traffic(3e9, "asn:5089", 10, 1); !reflect.DeepEqual([]obs.Observation(got), want) {
			t.Errorf("%s: got %+v, want %+v", enc.name, got, want)
		}
		got = got[:0]
		m.DstAs = 0
		if err := dec.Decode(enc.encode(t, m), &got); err != nil || len(got) != 0 {
			t.Errorf("%s: record without AS and map: %v, %d observations", enc.name, err, len(got))
		}
		if s := stats(); s.Unattributed != 1 || s.Records != 2 {
			t.Errorf("%s: stats %+v", enc.name, s)
		}
	}
}

func TestManyLocalASNs(t *testing.T) {
	cfg := testConfig()
	for i := uint32(0); i < 20; i++ {
		cfg.LocalASNs = append(cfg.LocalASNs, 4200000000+i)
	}
	d := NewProtoDecoder(cfg)
	var got obs.Slice
	b, _ := AppendDelimited(nil, &flowpb.FlowMessage{TimeReceivedNs: 1, Bytes: 1, SrcAs: asGB, DstAs: 4200000019})
	if err := d.Decode(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Entity != "asn:5089" {
		t.Fatalf("got %+v", got)
	}
}

func TestProtoDelimitedStream(t *testing.T) {
	// goflow2's file transport writes delimited messages back to back.
	var b []byte
	var want []obs.Observation
	for _, c := range flowCases()[:4] {
		var err error
		if b, err = AppendDelimited(b, c.msg); err != nil {
			t.Fatal(err)
		}
		want = append(want, c.want...)
	}
	d := NewProtoDecoder(testConfig())
	var got obs.Slice
	if err := d.Decode(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual([]obs.Observation(got), want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if s := d.Stats(); s.Records != 4 {
		t.Fatalf("stats %+v", s)
	}
}

func TestShortBareMessageLooksDelimited(t *testing.T) {
	// A bare message whose first byte (the tag of unknown field 2) equals
	// its remaining length reads as delimited too. Its delimited reading
	// fails (field number 0) and it is rejected, not re-read as bare: a
	// corrupt delimited record re-read as bare would make up traffic.
	m := []byte{0x10, 0x00}
	m = protowire.AppendVarint(protowire.AppendTag(m, fieldTimeReceivedNs, protowire.VarintType), 5)
	m = protowire.AppendVarint(protowire.AppendTag(m, fieldDstAS, protowire.VarintType), asGB)
	m = protowire.AppendVarint(protowire.AppendTag(m, fieldBytes, protowire.VarintType), 100)
	m = protowire.AppendVarint(protowire.AppendTag(m, fieldPackets, protowire.VarintType), 1)
	m = protowire.AppendVarint(protowire.AppendTag(m, 60, protowire.VarintType), 1)
	m = protowire.AppendVarint(protowire.AppendTag(m, fieldSamplingRate, protowire.VarintType), 2)
	if len(m) != 17 || !isDelimited(m) {
		t.Fatalf("test message % x is not ambiguous", m)
	}
	var got obs.Slice
	err := NewProtoDecoder(Config{}).Decode(m, &got)
	if ingest.Reason(err) != "field_number" || len(got) != 0 {
		t.Fatalf("got %v, %+v; want a field_number error", err, got)
	}
	// The same fields behind goflow2's length prefix decode.
	if err := NewProtoDecoder(Config{}).Decode(protowire.AppendBytes(nil, m), &got); err != nil {
		t.Fatal(err)
	}
	if want := traffic(5, "asn:5089", 200, 2); !reflect.DeepEqual([]obs.Observation(got), want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestMalformed(t *testing.T) {
	good, _ := AppendDelimited(nil, flowCases()[0].msg)
	bare, _ := proto.Marshal(flowCases()[0].msg)
	pbCases := []struct {
		name, reason string
		in           []byte
	}{
		{"empty", "empty", nil},
		{"no time", "time", mustDelim(&flowpb.FlowMessage{Bytes: 1, DstAs: 1})},
		{"time past 2262", "time", mustDelim(&flowpb.FlowMessage{TimeReceivedNs: 1 << 63, DstAs: 1})},
		{"truncated bare", "truncated", bare[:len(bare)-1]},
		{"bad tag varint", "truncated", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"field number 0", "field_number", []byte{0x00, 0x01}},
		{"bytes as length-delimited", "field_type", protowire.AppendBytes(protowire.AppendTag(nil, fieldBytes, protowire.BytesType), []byte{1})},
		{"address as varint", "field_type", protowire.AppendVarint(protowire.AppendTag(nil, fieldDstAddr, protowire.VarintType), 1)},
		{"address of 5 bytes", "addr", protowire.AppendBytes(protowire.AppendTag(nil, fieldDstAddr, protowire.BytesType), []byte{1, 2, 3, 4, 5})},
		{"unknown field truncated", "truncated", protowire.AppendTag(nil, 50, protowire.Fixed64Type)},
		{"broken packed as_path", "truncated", protowire.AppendBytes(protowire.AppendTag(nil, 102, protowire.BytesType), []byte{0x05, 0x80})},
		{"end group", "truncated", protowire.AppendTag(nil, 50, protowire.EndGroupType)},
		{"delimited stream with bad second message", "truncated", append(append([]byte{}, good...), 0x02, 0xff, 0xff)},
	}
	for _, c := range pbCases {
		var got obs.Slice
		err := NewProtoDecoder(testConfig()).Decode(c.in, &got)
		if err == nil {
			t.Errorf("proto %s: no error", c.name)
			continue
		}
		if r := ingest.Reason(err); r != c.reason {
			t.Errorf("proto %s: reason %q (%v), want %q", c.name, r, err, c.reason)
		}
	}

	jsonCases := []struct{ name, reason, in string }{
		{"empty", "json", ``},
		{"not an object", "json", `[1]`},
		{"unterminated", "json", `{"bytes":1`},
		{"trailing data", "json", `{"time_received_ns":1,"dst_as":1} x`},
		{"trailing comma", "json", `{"time_received_ns":1,}`},
		{"missing colon", "json", `{"time_received_ns" 1}`},
		{"leading zero", "json", `{"time_received_ns":01}`},
		{"bad escape", "json", `{"x":"\q","time_received_ns":1}`},
		{"control char", "json", "{\"x\":\"a\x01\",\"time_received_ns\":1}"},
		{"deep nesting", "json", `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`},
		{"bytes as string", "field_type", `{"time_received_ns":1,"bytes":"12"}`},
		{"src_as as object", "field_type", `{"time_received_ns":1,"src_as":{}}`},
		{"address as number", "field_type", `{"time_received_ns":1,"dst_addr":5}`},
		{"negative bytes", "value", `{"time_received_ns":1,"bytes":-5}`},
		{"fractional AS", "value", `{"time_received_ns":1,"dst_as":1.5}`},
		{"AS past 32 bits", "value", `{"time_received_ns":1,"dst_as":4294967296}`},
		{"huge float", "value", `{"time_received_ns":1,"bytes":1e999}`},
		{"no time", "time", `{"bytes":1,"dst_as":5}`},
		{"time string", "time", `{"time_received_ns":"yesterday","dst_as":5}`},
		{"seconds past 2262", "time", `{"TimeReceived":9300000000,"dst_as":5}`},
		{"bad address", "addr", `{"time_received_ns":1,"dst_addr":"300.1.1.1"}`},
		{"zoned address", "addr", `{"time_received_ns":1,"dst_addr":"fe80::1%eth0"}`},
	}
	for _, c := range jsonCases {
		var got obs.Slice
		err := NewJSONDecoder(testConfig()).Decode([]byte(c.in), &got)
		if err == nil {
			t.Errorf("json %s: no error", c.name)
			continue
		}
		if r := ingest.Reason(err); r != c.reason {
			t.Errorf("json %s: reason %q (%v), want %q", c.name, r, err, c.reason)
		}
		if len(got) != 0 {
			t.Errorf("json %s: %d observations from a bad record", c.name, len(got))
		}
	}
}

func mustDelim(m *flowpb.FlowMessage) []byte {
	b, err := AppendDelimited(nil, m)
	if err != nil {
		panic(err)
	}
	return b
}

func TestJSONVariants(t *testing.T) {
	cfg := testConfig()
	cases := []struct {
		name, in string
		want     []obs.Observation
	}{
		{"datetimenano renderer", `{"time_received_ns":"2025-04-28T12:00:00.123456789Z","bytes":10,"packets":1,"src_as":13335,"dst_as":5089}`,
			cat(traffic(tReceive, "asn:5089", 10, 1), traffic(tReceive, "country:GB", 10, 1))},
		{"offset time", `{"time_received_ns":"2025-04-28T13:00:00.123456789+01:00","bytes":10,"packets":1,"dst_as":64500}`,
			traffic(tReceive, "asn:64500", 10, 1)},
		{"escaped key and value, white space", " {\n \"dst\\u005fas\" : 64500 ,\"time_received_ns\":\t1745841600123456789, \"dst_addr\":\"\\u0031.2.3.4\", \"bytes\":1e1,\"packets\":1.0 }\n",
			traffic(tReceive, "asn:64500", 10, 1)},
		{"null fields read as absent", `{"time_received_ns":1745841600123456789,"time_flow_end_ns":null,"sampling_rate":null,"bytes":7,"packets":null,"dst_as":64500}`,
			traffic(tReceive, "asn:64500", 7, 0)},
		{"v1 milliseconds and mixed case", `{"TimeFlowEndMs":1745841600123,"SAMPLINGRATE":4,"Bytes":5,"Packets":1,"DstAS":64500,"AsPath":[1,2,{"x":[true,false,null]}]}`,
			traffic(1745841600123000000, "asn:64500", 20, 4)},
		{"received time wins over flow end", `{"time_flow_end_ns":5,"TimeReceived":1745841600,"bytes":1,"dst_as":64500}`,
			traffic(1745841600e9, "asn:64500", 1, 0)},
		{"fractional seconds", `{"TimeReceived":1745841600.5,"bytes":1,"dst_as":64500}`,
			traffic(1745841600500000000, "asn:64500", 1, 0)},
		{"empty address string", `{"time_received_ns":1,"src_addr":"","dst_addr":"","bytes":1,"dst_as":64500}`,
			traffic(1, "asn:64500", 1, 0)},
	}
	for _, c := range cases {
		d := NewJSONDecoder(cfg)
		var got obs.Slice
		if err := d.Decode([]byte(c.in), &got); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual([]obs.Observation(got), c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// randomMessage fills every field of FlowMessage, as goflow2 would from an
// sFlow sample with MPLS and SRv6 headers.
func randomMessage(r *rand.Rand) *flowpb.FlowMessage {
	addr := func() []byte {
		switch r.IntN(5) {
		case 0:
			return nil
		case 1, 2:
			b := make([]byte, 4)
			binary.BigEndian.PutUint32(b, r.Uint32())
			return b
		case 3:
			b := make([]byte, 16)
			binary.BigEndian.PutUint64(b, r.Uint64())
			binary.BigEndian.PutUint64(b[8:], r.Uint64())
			return b
		default:
			return make([]byte, 1+r.IntN(3)) // not an address: rendered ""
		}
	}
	u32s := func() []uint32 {
		var out []uint32
		for range r.IntN(4) {
			out = append(out, r.Uint32N(1<<20))
		}
		return out
	}
	etypes := []uint32{0x800, 0x86dd, 0x806, 0x8847, 0}
	m := &flowpb.FlowMessage{
		Type:                     flowpb.FlowMessage_FlowType(r.IntN(6)),
		TimeReceivedNs:           r.Uint64N(1 << 62),
		SequenceNum:              r.Uint32(),
		SamplingRate:             r.Uint64N(1 << 20),
		SamplerAddress:           addr(),
		TimeFlowStartNs:          r.Uint64N(1 << 62),
		TimeFlowEndNs:            r.Uint64N(1 << 62),
		Bytes:                    r.Uint64N(1 << 40),
		Packets:                  r.Uint64N(1 << 30),
		SrcAddr:                  addr(),
		DstAddr:                  addr(),
		Etype:                    etypes[r.IntN(len(etypes))],
		Proto:                    r.Uint32N(260),
		SrcPort:                  r.Uint32N(65536),
		DstPort:                  r.Uint32N(65536),
		InIf:                     r.Uint32(),
		OutIf:                    r.Uint32(),
		SrcMac:                   r.Uint64N(1 << 48),
		DstMac:                   r.Uint64N(1 << 48),
		SrcVlan:                  r.Uint32N(4096),
		DstVlan:                  r.Uint32N(4096),
		VlanId:                   r.Uint32N(4096),
		IpTos:                    r.Uint32N(256),
		ForwardingStatus:         r.Uint32N(256),
		IpTtl:                    r.Uint32N(256),
		IpFlags:                  r.Uint32N(8),
		TcpFlags:                 r.Uint32N(256),
		IcmpType:                 r.Uint32N(256),
		IcmpCode:                 r.Uint32N(256),
		Ipv6FlowLabel:            r.Uint32N(1 << 20),
		FragmentId:               r.Uint32(),
		FragmentOffset:           r.Uint32N(8192),
		SrcAs:                    r.Uint32(),
		DstAs:                    r.Uint32(),
		NextHop:                  addr(),
		NextHopAs:                r.Uint32(),
		SrcNet:                   r.Uint32N(140),
		DstNet:                   r.Uint32N(140),
		BgpNextHop:               addr(),
		BgpCommunities:           u32s(),
		AsPath:                   u32s(),
		MplsTtl:                  u32s(),
		MplsLabel:                u32s(),
		ObservationDomainId:      r.Uint32(),
		ObservationPointId:       r.Uint32(),
		LayerSize:                u32s(),
		Ipv6RoutingHeaderSegLeft: r.Uint32N(8),
	}
	for range r.IntN(3) {
		m.MplsIp = append(m.MplsIp, addr())
		m.Ipv6RoutingHeaderAddresses = append(m.Ipv6RoutingHeaderAddresses, addr())
	}
	for range r.IntN(4) {
		m.LayerStack = append(m.LayerStack, flowpb.FlowMessage_LayerStack([]int{0, 1, 2, 3, 4, 5, 12, 99, 42}[r.IntN(9)]))
	}
	return m
}

// goflow2Message returns a goflow2 producer message carrying m and the
// formatter goflow2 uses when started without a mapping file, so that its
// MarshalJSON and MarshalBinary are exactly what goflow2 writes to Kafka.
func goflow2Message(t testing.TB, m *flowpb.FlowMessage) *protoproducer.ProtoProducerMessage {
	t.Helper()
	cfg, err := (&protoproducer.ProducerConfig{}).Compile()
	if err != nil {
		t.Fatal(err)
	}
	p, err := protoproducer.CreateProtoProducer(cfg, protoproducer.CreateSamplingSystem)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := p.Produce(&netflowlegacy.PacketNetFlowV5{Version: 5, Count: 1, Records: make([]netflowlegacy.RecordsNetFlowV5, 1)},
		&producer.ProduceArgs{TimeReceived: time.Unix(0, 0), SamplerAddress: netip.MustParseAddr("192.0.2.1")})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("goflow2 producer: %v, %d messages", err, len(msgs))
	}
	pm := msgs[0].(*protoproducer.ProtoProducerMessage)
	proto.Reset(&pm.FlowMessage)
	proto.Merge(&pm.FlowMessage, m)
	return pm
}

func TestAppendMatchesGoflow2(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		m := randomMessage(r)
		if i == 0 {
			m = &flowpb.FlowMessage{} // all zero values
		}
		pm := goflow2Message(t, m)
		wantJSON, err := pm.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendJSON(nil, m); !bytes.Equal(got, wantJSON) {
			t.Fatalf("message %d: AppendJSON\n got %s\nwant %s", i, got, wantJSON)
		}
		wantBin, err := pm.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := AppendDelimited(nil, m); err != nil || !bytes.Equal(got, wantBin) {
			t.Fatalf("message %d: AppendDelimited: %v\n got % x\nwant % x", i, err, got, wantBin)
		}
	}
}

// reference computes the observations of m the slow, obvious way.
func reference(cfg Config, m *flowpb.FlowMessage) (obsv []obs.Observation, unattributed bool) {
	t := m.TimeReceivedNs
	if t == 0 {
		t = m.TimeFlowEndNs
	}
	local := map[uint32]bool{}
	for _, a := range cfg.LocalASNs {
		local[a] = true
	}
	resolve := func(as uint32, b []byte) (uint32, netip.Addr) {
		a, _ := netip.AddrFromSlice(b)
		if as == 0 {
			as, _ = cfg.Map.OriginAS(a)
		}
		return as, a
	}
	srcAS, srcAddr := resolve(m.SrcAs, m.SrcAddr)
	dstAS, dstAddr := resolve(m.DstAs, m.DstAddr)
	as, addr := dstAS, dstAddr
	switch {
	case local[m.SrcAs]:
	case local[m.DstAs], local[dstAS] && dstAS != 0:
		as, addr = srcAS, srcAddr
	}
	if as == 0 {
		return nil, true
	}
	rate := float64(m.SamplingRate)
	if rate == 0 {
		rate = 1
	}
	bytes, packets := float64(m.Bytes)*rate, float64(m.Packets)*rate
	out := traffic(int64(t), obs.ASN(as), bytes, packets)
	if cc := cfg.Map.Country(as); cc != "" {
		out = append(out, traffic(int64(t), obs.Country(cc), bytes, packets)...)
	}
	if rg := cfg.Map.Region(addr); rg != "" && addr.IsValid() {
		out = append(out, traffic(int64(t), obs.Region(rg), bytes, packets)...)
	}
	return out, false
}

const unixSecs, unixNsecs, uptime = 1745841600, 500, 3_600_000

type nfRecord struct {
	src, dst         string
	pkts, octets     uint32
	srcAS, dstAS     uint16
	srcMask, dstMask uint8
}

var testNetFlowRecords = []nfRecord{
	{"198.51.100.7", "81.84.1.2", 10, 14000, asLocal, asPT, 24, 16},
	{"81.84.200.9", "198.51.100.7", 3, 180, asPT, asLocal, 16, 24},
	{"198.51.100.7", "81.86.0.1", 1, 60, asLocal, 0, 24, 0},
	{"198.51.100.7", "192.0.2.55", 1, 60, asLocal, 0, 24, 0},
}

// produceNetFlowV5 builds a NetFlow v5 export packet (24-byte header, then
// 48-byte records, sampled 1:64), decodes it with goflow2's decoder and
// turns it into flow messages with goflow2's producer and the given config.
func produceNetFlowV5(t *testing.T, pcfg *protoproducer.ProducerConfig, received time.Time, recs []nfRecord) []producer.ProducerMessage {
	t.Helper()
	pkt := binary.BigEndian.AppendUint16(nil, 5)
	pkt = binary.BigEndian.AppendUint16(pkt, uint16(len(recs)))
	pkt = binary.BigEndian.AppendUint32(pkt, uptime)
	pkt = binary.BigEndian.AppendUint32(pkt, unixSecs)
	pkt = binary.BigEndian.AppendUint32(pkt, unixNsecs)
	pkt = binary.BigEndian.AppendUint32(pkt, 77) // flow sequence
	pkt = append(pkt, 0, 0)
	pkt = binary.BigEndian.AppendUint16(pkt, 0x4000|64) // random sampling, 1:64
	for _, r := range recs {
		pkt = append(pkt, netip.MustParseAddr(r.src).AsSlice()...)
		pkt = append(pkt, netip.MustParseAddr(r.dst).AsSlice()...)
		pkt = append(pkt, 0, 0, 0, 0) // next hop
		pkt = binary.BigEndian.AppendUint16(pkt, 1)
		pkt = binary.BigEndian.AppendUint16(pkt, 2)
		pkt = binary.BigEndian.AppendUint32(pkt, r.pkts)
		pkt = binary.BigEndian.AppendUint32(pkt, r.octets)
		pkt = binary.BigEndian.AppendUint32(pkt, uptime-60_000)
		pkt = binary.BigEndian.AppendUint32(pkt, uptime-1_000)
		pkt = binary.BigEndian.AppendUint16(pkt, 443)
		pkt = binary.BigEndian.AppendUint16(pkt, 50000)
		pkt = append(pkt, 0, 0x18, 6, 0)
		pkt = binary.BigEndian.AppendUint16(pkt, r.srcAS)
		pkt = binary.BigEndian.AppendUint16(pkt, r.dstAS)
		pkt = append(pkt, r.srcMask, r.dstMask, 0, 0)
	}
	var packet netflowlegacy.PacketNetFlowV5
	if err := netflowlegacy.DecodeMessageVersion(bytes.NewBuffer(pkt), &packet); err != nil {
		t.Fatal(err)
	}
	cfg, err := pcfg.Compile()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := protoproducer.CreateProtoProducer(cfg, protoproducer.CreateSamplingSystem)
	msgs, err := p.Produce(&packet, &producer.ProduceArgs{TimeReceived: received, SamplerAddress: netip.MustParseAddr("192.0.2.1")})
	if err != nil || len(msgs) != len(recs) {
		t.Fatalf("goflow2 producer: %v, %d messages", err, len(msgs))
	}
	return msgs
}

// TestGoflow2MappingJSON reads what goflow2 writes with the formatter
// section of the mapping.yaml it ships: a chosen field list without src_as
// and dst_as, extra protobuf fields, a virtual icmp_name field, and
// time_received_ns rendered as RFC 3339 text. The eyeball AS then comes from
// the origin table.
func TestGoflow2MappingJSON(t *testing.T) {
	pcfg := &protoproducer.ProducerConfig{Formatter: protoproducer.FormatterConfig{
		Fields: []string{"type", "time_received_ns", "sequence_num", "sampling_rate", "flow_direction", "sampler_address",
			"time_flow_start_ns", "time_flow_end_ns", "bytes", "packets", "src_addr", "src_net", "dst_addr", "dst_net",
			"etype", "proto", "src_port", "dst_port", "in_if", "out_if", "src_mac", "dst_mac", "icmp_name", "csum"},
		Key: []string{"sampler_address"},
		Protobuf: []protoproducer.ProtobufFormatterConfig{
			{Name: "flow_direction", Index: 42, Type: "varint"},
			{Name: "bi_flow_direction", Index: 41, Type: "varint"},
			{Name: "csum", Index: 999, Type: "varint"},
		},
		Render: map[string]protoproducer.RendererID{"time_received_ns": protoproducer.RendererDateTimeNano},
	}}
	received := time.Unix(unixSecs+1, 157626000)
	msgs := produceNetFlowV5(t, pcfg, received, testNetFlowRecords)
	tr := received.UnixNano()
	want := [][]obs.Observation{
		cat(traffic(tr, "asn:3243", 14000*64, 10*64), traffic(tr, "country:PT", 14000*64, 10*64), traffic(tr, "region:PT-11", 14000*64, 10*64)),
		// No AS numbers: the destination's origin is ours, so the source
		// is the eyeball.
		cat(traffic(tr, "asn:3243", 180*64, 3*64), traffic(tr, "country:PT", 180*64, 3*64), traffic(tr, "region:PT-11", 180*64, 3*64)),
		cat(traffic(tr, "asn:3243", 60*64, 64), traffic(tr, "country:PT", 60*64, 64)),
		nil,
	}
	d := NewJSONDecoder(testConfig())
	for i, msg := range msgs {
		js, err := msg.(interface{ MarshalJSON() ([]byte, error) }).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(js, []byte(`"time_received_ns":"2025-04-28T12:00:01.157626Z"`)) {
			t.Fatalf("goflow2 wrote %s", js)
		}
		var got obs.Slice
		if err := d.Decode(js, &got); err != nil {
			t.Fatalf("record %d: %v\n%s", i, err, js)
		}
		if !reflect.DeepEqual([]obs.Observation(got), want[i]) {
			t.Errorf("record %d:\n got %+v\nwant %+v\n%s", i, got, want[i], js)
		}
	}
}

// TestGoflow2Output feeds what goflow2 itself produces from a NetFlow v5
// export packet (decoded by goflow2's own decoder) through both decoders.
func TestGoflow2Output(t *testing.T) {
	received := time.Unix(unixSecs+1, 250)
	msgs := produceNetFlowV5(t, &protoproducer.ProducerConfig{}, received, testNetFlowRecords)
	tr := received.UnixNano()
	want := [][]obs.Observation{
		cat(traffic(tr, "asn:3243", 14000*64, 10*64), traffic(tr, "country:PT", 14000*64, 10*64), traffic(tr, "region:PT-11", 14000*64, 10*64)),
		cat(traffic(tr, "asn:3243", 180*64, 3*64), traffic(tr, "country:PT", 180*64, 3*64), traffic(tr, "region:PT-11", 180*64, 3*64)),
		cat(traffic(tr, "asn:3243", 60*64, 64), traffic(tr, "country:PT", 60*64, 64)),
		nil,
	}
	pd, jd := NewProtoDecoder(testConfig()), NewJSONDecoder(testConfig())
	for i, msg := range msgs {
		bin, err := msg.(interface{ MarshalBinary() ([]byte, error) }).MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		js, err := msg.(interface{ MarshalJSON() ([]byte, error) }).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		for name, dec := range map[string]ingest.Decoder{"bin": pd, "json": jd} {
			in := bin
			if name == "json" {
				in = js
			}
			var got obs.Slice
			if err := dec.Decode(in, &got); err != nil {
				t.Fatalf("record %d %s: %v\n%s", i, name, err, in)
			}
			if !reflect.DeepEqual([]obs.Observation(got), want[i]) {
				t.Errorf("record %d %s:\n got %+v\nwant %+v", i, name, got, want[i])
			}
		}
	}
	for _, s := range []Stats{pd.Stats(), jd.Stats()} {
		if s != (Stats{Records: 4, Unattributed: 1, Observations: 16}) {
			t.Errorf("stats %+v", s)
		}
	}
}

func TestRandomRoundTrip(t *testing.T) {
	cfg := testConfig()
	r := rand.New(rand.NewPCG(3, 4))
	pd, jd := NewProtoDecoder(cfg), NewJSONDecoder(cfg)
	for i := range 2000 {
		m := randomMessage(r)
		// Keep addresses decodable and make attribution interesting.
		m.SrcAddr, m.DstAddr = []byte(netip.MustParseAddr("81.84.0.0").AsSlice()), ip("2001:db8::5")
		if i%2 == 0 {
			m.SrcAddr = nil
		}
		switch i % 5 {
		case 0:
			m.SrcAs = asLocal
		case 1:
			m.DstAs, m.SrcAs = asLocal, 0
		case 2:
			m.DstAs = 0
		case 3:
			m.TimeReceivedNs = 0
		}
		want, unattr := reference(cfg, m)
		for _, dec := range []ingest.Decoder{pd, jd} {
			var in []byte
			if dec == ingest.Decoder(pd) {
				in = mustDelim(m)
			} else {
				in = AppendJSON(nil, m)
			}
			var got obs.Slice
			if err := dec.Decode(in, &got); err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			if !reflect.DeepEqual([]obs.Observation(got), want) || (len(got) == 0) != unattr {
				t.Fatalf("message %d:\n got %+v\nwant %+v", i, got, want)
			}
		}
	}
}

func TestRFC3339(t *testing.T) {
	for _, s := range []string{
		"2025-04-28T12:00:00Z", "2025-04-28T12:00:00.1Z", "2025-04-28T12:00:00.123456789Z",
		"2024-02-29T23:59:59.5-03:30", "1970-01-01T00:00:00Z", "1969-12-31T23:59:59.999999999Z",
		"2262-04-11T23:47:16.854775807Z", "1677-09-21T00:12:43.145224192Z", "0001-01-01T00:00:00Z",
		"2025-04-28T12:00:00.1234567891Z", "2025-02-29T12:00:00Z", "2025-04-28T24:00:00Z", "2025-04-28T12:00:00",
		"2025-04-28 12:00:00Z", "2025-04-28T12:00:00+25:00",
	} {
		checkRFC3339(t, s)
	}
}

func checkRFC3339(t *testing.T, s string) {
	got, ok := parseRFC3339([]byte(s))
	tm, err := time.Parse(time.RFC3339Nano, s)
	wantOK := err == nil
	var want int64
	if wantOK {
		want, wantOK = unixNano(tm)
	}
	if ok != wantOK || got != want {
		t.Errorf("parseRFC3339(%q) = %d, %v; time.Parse gives %d, %v (%v)", s, got, ok, want, wantOK, err)
	}
}

func TestZeroAllocs(t *testing.T) {
	cfg := testConfig()
	r := rand.New(rand.NewPCG(5, 6))
	m := randomMessage(r)
	m.SrcAs, m.DstAs, m.SrcAddr, m.DstAddr = asLocal, asPT, ip("198.51.100.1"), ip("81.84.9.9")
	var n int
	sink := obs.SinkFunc(func(*obs.Observation) { n++ })
	for _, c := range []struct {
		dec ingest.Decoder
		in  []byte
	}{
		{NewProtoDecoder(cfg), mustDelim(m)},
		{NewJSONDecoder(cfg), AppendJSON(nil, m)},
		{NewJSONDecoder(cfg), []byte(`{"time_received_ns":"2025-04-28T12:00:00.5Z","sampling_rate":10,"bytes":1.5e3,"packets":1,"src_as":13335,"dst_as":0,"dst_addr":"81.84.\u0039.9"}`)},
	} {
		if err := c.dec.Decode(c.in, sink); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(200, func() {
			if err := c.dec.Decode(c.in, sink); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%T: %v allocations per record", c.dec, allocs)
		}
	}
	if n != 3*202*6 { // one warm-up call, then AllocsPerRun's own warm-up and 200 runs
		t.Fatalf("sink saw %d observations", n)
	}
}

func TestRegistered(t *testing.T) {
	env := &ingest.Env{Map: testMap(), LocalASNs: []uint32{asLocal}}
	for format, enc := range map[string]func(*flowpb.FlowMessage) []byte{
		FormatProto: mustDelim,
		FormatJSON:  func(m *flowpb.FlowMessage) []byte { return AppendJSON(nil, m) },
	} {
		dec, err := ingest.NewDecoder("flows", format, env)
		if err != nil {
			t.Fatal(err)
		}
		var got obs.Slice
		if err := dec.Decode(enc(flowCases()[0].msg), &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual([]obs.Observation(got), flowCases()[0].want) {
			t.Errorf("%s: got %+v", format, got)
		}
	}
}
