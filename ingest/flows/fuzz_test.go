package flows

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	flowpb "github.com/netsampler/goflow2/v2/pb"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

func checkErr(t *testing.T, err error) {
	t.Helper()
	var ie *ingest.Error
	if err != nil && (!errors.As(err, &ie) || ie.Reason == "") {
		t.Fatalf("error without a reason: %v", err)
	}
}

// validForReference says whether m is a record both decoders must accept.
func validForReference(m *flowpb.FlowMessage) bool {
	t := m.TimeReceivedNs
	if t == 0 {
		t = m.TimeFlowEndNs
	}
	okAddr := func(b []byte) bool { return len(b) == 0 || len(b) == 4 || len(b) == 16 }
	return t != 0 && t <= math.MaxInt64 && okAddr(m.SrcAddr) && okAddr(m.DstAddr)
}

func FuzzProtoDecode(f *testing.F) {
	for _, c := range flowCases() {
		b, _ := proto.Marshal(c.msg)
		f.Add(b)
		f.Add(mustDelim(c.msg))
		f.Add(b[:len(b)/2])
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 8 {
		f.Add(mustDelim(randomMessage(r)))
	}
	f.Add([]byte{})
	f.Add([]byte{0x00})
	f.Add([]byte{0x0b, 0x0c}) // groups
	cfg := testConfig()
	f.Fuzz(func(t *testing.T, data []byte) {
		var got obs.Slice
		err := NewProtoDecoder(cfg).Decode(data, &got)
		checkErr(t, err)
		var m flowpb.FlowMessage
		uerr := proto.Unmarshal(data, &m)
		if err == nil && !isDelimited(data) {
			// The hand-rolled reader accepted a bare message: the real
			// unmarshaller must agree on it and on what it says.
			if uerr != nil {
				t.Fatalf("decoder accepted % x, proto.Unmarshal: %v", data, uerr)
			}
			want, _ := reference(cfg, &m)
			if !reflect.DeepEqual([]obs.Observation(got), want) {
				t.Fatalf("% x:\n got %+v\nwant %+v", data, got, want)
			}
		}
		// proto.Unmarshal keeps fields of an unexpected wire type as
		// unknown fields, which the decoder rejects; drop them.
		m.ProtoReflect().SetUnknown(nil)
		if uerr == nil && validForReference(&m) {
			// Whatever the real unmarshaller reads, re-encoded as goflow2
			// does, must decode to the reference observations.
			got = got[:0]
			if err := NewProtoDecoder(cfg).Decode(mustDelim(&m), &got); err != nil {
				t.Fatalf("re-encoded %v: %v", &m, err)
			}
			want, _ := reference(cfg, &m)
			if !reflect.DeepEqual([]obs.Observation(got), want) {
				t.Fatalf("re-encoded %v:\n got %+v\nwant %+v", &m, got, want)
			}
		}
	})
}

func FuzzJSONDecode(f *testing.F) {
	for _, c := range flowCases() {
		f.Add(AppendJSON(nil, c.msg))
		f.Add(v1JSON(c.msg))
	}
	for _, s := range []string{
		`{"time_received_ns":"2025-04-28T12:00:00.123456789Z","bytes":10,"packets":1,"src_as":13335,"dst_as":5089}`,
		" {\n \"dst\\u005fas\" : 64500 ,\"time_received_ns\":\t1745841600123456789, \"dst_addr\":\"\\u0031.2.3.4\", \"bytes\":1e1,\"packets\":1.0 }\n",
		`{"TimeFlowEndMs":1745841600123,"SAMPLINGRATE":4,"Bytes":5,"Packets":1,"DstAS":64500,"AsPath":[1,2,{"x":[true,false,null]}]}`,
		`{"x":"\ud83d\ude00\ud800","time_received_ns":1,"dst_as":5}`,
		`{"bytes":-0,"time_received_ns":1e3,"dst_as":5}`,
		`{"x":` + strings.Repeat("[", 70) + `}`,
		``, `{`, `{}`, `[]`, `"a"`,
	} {
		f.Add([]byte(s))
	}
	cfg := testConfig()
	f.Fuzz(func(t *testing.T, data []byte) {
		var got obs.Slice
		err := NewJSONDecoder(cfg).Decode(data, &got)
		checkErr(t, err)
		if err == nil && !json.Valid(data) {
			t.Fatalf("decoder accepted invalid JSON %q", data)
		}
		if err != nil && len(got) != 0 {
			t.Fatalf("%d observations from a rejected record %q", len(got), data)
		}
	})
}

// FuzzRoundTrip builds a record from fuzzed field values, writes it the two
// ways goflow2 does, and checks both decoders against the reference.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint64(tReceive), uint64(0), uint64(100), uint64(1500), uint64(2), uint32(asLocal), uint32(asGB), []byte{198, 51, 100, 7}, []byte{81, 84, 0, 1})
	f.Add(uint64(0), uint64(tReceive), uint64(0), uint64(1), uint64(1), uint32(asPT), uint32(asLocal), []byte{81, 84, 0, 1}, []byte{})
	f.Add(uint64(1<<63), uint64(0), uint64(1), uint64(1), uint64(1), uint32(0), uint32(0), []byte{1, 2, 3}, []byte{})
	cfg := testConfig()
	f.Fuzz(func(t *testing.T, recv, end, rate, bytes, packets uint64, srcAS, dstAS uint32, src, dst []byte) {
		m := &flowpb.FlowMessage{TimeReceivedNs: recv, TimeFlowEndNs: end, SamplingRate: rate, Bytes: bytes, Packets: packets,
			SrcAs: srcAS, DstAs: dstAS, SrcAddr: src, DstAddr: dst}
		want, _ := reference(cfg, m)
		valid := validForReference(m)
		// pb first: the JSON step below edits m.
		for _, name := range []string{"pb", "json"} {
			in := mustDelim(m)
			var dec ingest.Decoder = NewProtoDecoder(cfg)
			if name == "json" {
				in = AppendJSON(nil, m)
				dec = NewJSONDecoder(cfg)
				// goflow2 renders an address of a bad length as "", so the
				// JSON form reads as a record without that address.
				for _, a := range []*[]byte{&m.SrcAddr, &m.DstAddr} {
					if _, ok := netip.AddrFromSlice(*a); !ok {
						*a = nil
					}
				}
				want, _ = reference(cfg, m)
				valid = validForReference(m)
			}
			var got obs.Slice
			err := dec.Decode(in, &got)
			checkErr(t, err)
			if (err == nil) != valid {
				t.Fatalf("%s %v: error %v, want valid=%v", name, m, err, valid)
			}
			if valid && !reflect.DeepEqual([]obs.Observation(got), want) {
				t.Fatalf("%s %v:\n got %+v\nwant %+v", name, m, got, want)
			}
		}
	})
}
