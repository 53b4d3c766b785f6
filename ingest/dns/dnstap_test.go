package dnsin

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	dnstap "github.com/dnstap/golang-dnstap"
	framestream "github.com/farsightsec/golang-framestream"
	"github.com/miekg/dns"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

func TestFieldNumbersMatchDnstapDescriptor(t *testing.T) {
	env := (&dnstap.Dnstap{}).ProtoReflect().Descriptor()
	msg := (&dnstap.Message{}).ProtoReflect().Descriptor()
	check := func(md protoreflect.MessageDescriptor, name string, num protowire.Number, kind protoreflect.Kind) {
		t.Helper()
		f := md.Fields().ByName(protoreflect.Name(name))
		if f == nil {
			t.Fatalf("%s has no field %s", md.FullName(), name)
		}
		if f.Number() != num || f.Kind() != kind {
			t.Errorf("%s.%s: descriptor says %d %v, decoder uses %d %v", md.FullName(), name, f.Number(), f.Kind(), num, kind)
		}
	}
	check(env, "type", fieldDnstapType, protoreflect.EnumKind)
	check(env, "message", fieldDnstapMessage, protoreflect.MessageKind)
	check(msg, "type", fieldMsgType, protoreflect.EnumKind)
	check(msg, "socket_family", fieldMsgSocketFamily, protoreflect.EnumKind)
	check(msg, "query_address", fieldMsgQueryAddress, protoreflect.BytesKind)
	check(msg, "query_time_sec", fieldMsgQueryTimeSec, protoreflect.Uint64Kind)
	check(msg, "query_time_nsec", fieldMsgQueryTimeNsec, protoreflect.Fixed32Kind)
	check(msg, "query_message", fieldMsgQueryMessage, protoreflect.BytesKind)
	check(msg, "response_time_sec", fieldMsgRespTimeSec, protoreflect.Uint64Kind)
	check(msg, "response_time_nsec", fieldMsgRespTimeNsec, protoreflect.Fixed32Kind)
	check(msg, "response_message", fieldMsgRespMessage, protoreflect.BytesKind)
	if dnstapTypeMessage != int(dnstap.Dnstap_MESSAGE) ||
		msgTypeClientQuery != int(dnstap.Message_CLIENT_QUERY) ||
		msgTypeClientReponse != int(dnstap.Message_CLIENT_RESPONSE) {
		t.Error("enum values differ from golang-dnstap's")
	}
}

// testMap attributes 172.16.0.0/12 and 10.0.0.0/8 to AS64500 (PT),
// 192.0.2.0/24 to AS64501 (ES) and 2001:db8::/32 to AS64502 (no country).
func testMap() *netmap.Map {
	m := netmap.New()
	m.Origins.Insert(netip.MustParsePrefix("172.16.0.0/12"), 64500)
	m.Origins.Insert(netip.MustParsePrefix("10.0.0.0/8"), 64500)
	m.Origins.Insert(netip.MustParsePrefix("192.0.2.0/24"), 64501)
	m.Origins.Insert(netip.MustParsePrefix("2001:db8::/32"), 64502)
	m.Countries[64500] = "PT"
	m.Countries[64501] = "ES"
	return m
}

// oracleFrame is what golang-dnstap's full decoder and miekg/dns's full
// Unpack say about a frame.
type oracleFrame struct {
	typ    dnstap.Message_Type
	client netip.Addr
	time   int64
	qname  string
	rcode  int
}

func oracle(t testing.TB, frame []byte) (oracleFrame, error) {
	var d dnstap.Dnstap
	if err := proto.Unmarshal(frame, &d); err != nil {
		return oracleFrame{}, err
	}
	m := d.GetMessage()
	if m == nil {
		return oracleFrame{}, errors.New("no message")
	}
	o := oracleFrame{typ: m.GetType()}
	a, ok := netip.AddrFromSlice(m.GetQueryAddress())
	if !ok {
		return o, errors.New("address")
	}
	o.client = a.Unmap()
	wire := m.GetQueryMessage()
	o.time = int64(m.GetQueryTimeSec())*1e9 + int64(m.GetQueryTimeNsec())
	if o.typ == dnstap.Message_CLIENT_RESPONSE {
		wire = m.GetResponseMessage()
		if m.ResponseTimeSec != nil {
			o.time = int64(m.GetResponseTimeSec())*1e9 + int64(m.GetResponseTimeNsec())
		}
	}
	var msg dns.Msg
	if err := msg.Unpack(wire); err != nil {
		return o, err
	}
	o.rcode = msg.Rcode
	if len(msg.Question) > 0 {
		o.qname = msg.Question[0].Name
	}
	return o, nil
}

func readAll(t *testing.T, path string) []ingest.Record {
	t.Helper()
	var recs []ingest.Record
	if err := ReadFile(path, func(r ingest.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestRealDnsdistFile decodes the dnsdist capture and checks every frame
// against golang-dnstap + miekg/dns, and the observations exactly.
func TestRealDnsdistFile(t *testing.T) {
	recs := readAll(t, "testdata/dnsdist.dnstap.fstrm")
	if len(recs) != 2 {
		t.Fatalf("got %d records, want 2", len(recs))
	}
	// The same file through golang-framestream's own Decoder.
	raw, err := readFramesWithLibrary("testdata/dnsdist.dnstap.fstrm")
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != len(recs) {
		t.Fatalf("library reads %d frames, ReadFile %d", len(raw), len(recs))
	}
	wantTypes := []dnstap.Message_Type{dnstap.Message_CLIENT_QUERY, dnstap.Message_CLIENT_RESPONSE}
	var ors []oracleFrame
	for i, r := range recs {
		if r.Stream != "dns" || r.Format != "dnstap" || r.Offset != int64(i) || !bytes.Equal(r.Value, raw[i]) {
			t.Fatalf("record %d: %+v", i, r)
		}
		o, err := oracle(t, r.Value)
		if err != nil {
			t.Fatalf("oracle, frame %d: %v", i, err)
		}
		if o.typ != wantTypes[i] || o.qname != "www.google.com." || o.rcode != dns.RcodeSuccess ||
			o.client != netip.MustParseAddr("172.19.0.1") {
			t.Fatalf("frame %d: oracle says %+v", i, o)
		}
		if r.Time != o.time || o.time < 1.7e18 {
			t.Errorf("frame %d: record time %d, oracle %d", i, r.Time, o.time)
		}
		ors = append(ors, o)
	}

	d := NewDnstapDecoder(testMap(), Config{})
	var got obs.Slice
	for _, r := range recs {
		if err := d.Decode(r.Value, &got); err != nil {
			t.Fatal(err)
		}
	}
	h := ClientHash(netip.MustParseAddr("172.19.0.1"), 0)
	q, rsp := ors[0].time, ors[1].time
	want := obs.Slice{
		{Time: q, Signal: Queries, Entity: "asn:64500", Value: 1},
		{Time: q, Signal: Clients, Entity: "asn:64500", Value: 1, Hash: h},
		{Time: q, Signal: Queries, Entity: "country:PT", Value: 1},
		{Time: q, Signal: Clients, Entity: "country:PT", Value: 1, Hash: h},
		{Time: rsp, Signal: FailureRatio, Entity: "asn:64500", Value: 0},
		{Time: rsp, Signal: FailureRatio, Entity: "country:PT", Value: 0},
		{Time: rsp, Signal: FailureRatio, Entity: "zone:google.com", Value: 0},
	}
	if !slices.Equal(got, want) {
		t.Errorf("observations:\n got %v\nwant %v", got, want)
	}
	if s := d.Stats(); s != (Stats{Records: 2, Queries: 1, Responses: 1}) {
		t.Errorf("stats %v", s)
	}
}

func readFramesWithLibrary(path string) ([][]byte, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec, err := framestream.NewDecoder(f, &framestream.DecoderOptions{ContentType: []byte(ContentType)})
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for {
		b, err := dec.Decode()
		if err != nil {
			if errors.Is(err, framestream.EOF) {
				return out, nil
			}
			return nil, err
		}
		out = append(out, bytes.Clone(b))
	}
}

const t0 = int64(1745836200) * 1e9 // 2025-04-28T10:30:00Z

func mustFrame(t testing.TB, f Frame) []byte {
	t.Helper()
	b, err := AppendDnstap(nil, &f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStreamWithMalformedFrames writes a Frame Streams file mixing good and
// bad frames and checks that the bad ones are counted and skipped.
func TestStreamWithMalformedFrames(t *testing.T) {
	good := []Frame{
		{Type: dnstap.Message_CLIENT_QUERY, QueryTime: t0, Client: netip.MustParseAddr("10.1.2.3"), QName: "WWW.Example.PT.", QType: dns.TypeA, ID: 7},
		{Type: dnstap.Message_CLIENT_RESPONSE, QueryTime: t0, ResponseTime: t0 + 3e6, Client: netip.MustParseAddr("10.1.2.3"), QName: "www.example.pt", QType: dns.TypeA, ID: 7, Rcode: dns.RcodeServerFailure},
		{Type: dnstap.Message_CLIENT_QUERY, QueryTime: t0 + 1e9, Client: netip.MustParseAddr("2001:db8::5"), QName: "a.b.example.co.uk", QType: dns.TypeAAAA, TCP: true},
		{Type: dnstap.Message_CLIENT_RESPONSE, QueryTime: t0 + 1e9, ResponseTime: t0 + 2e9, Client: netip.MustParseAddr("2001:db8::5"), QName: "a.b.example.co.uk", QType: dns.TypeAAAA, Rcode: dns.RcodeRefused},
		{Type: dnstap.Message_CLIENT_RESPONSE, QueryTime: t0 + 3e9, ResponseTime: t0 + 3e9, Client: netip.MustParseAddr("198.51.100.1"), QName: "example.pt", Rcode: dns.RcodeNameError},
		{Type: dnstap.Message_RESOLVER_QUERY, QueryTime: t0 + 4e9, Client: netip.MustParseAddr("10.9.9.9"), QName: "pt"},
	}
	var frames [][]byte
	for _, f := range good {
		frames = append(frames, mustFrame(t, f))
	}
	valid := mustFrame(t, good[0])
	noTime := protowire.AppendTag(nil, fieldDnstapMessage, protowire.BytesType)
	noTime = protowire.AppendBytes(noTime, protowire.AppendVarint(protowire.AppendTag(nil, fieldMsgType, protowire.VarintType), 5))
	noTime = protowire.AppendVarint(protowire.AppendTag(noTime, fieldDnstapType, protowire.VarintType), 1)
	bad := [][]byte{
		[]byte("not a protobuf at all \xff\xff\xff"),                          // protobuf
		valid[:len(valid)-9],                                                  // truncated inside the message
		bytes.Replace(valid, []byte("\x07Example"), []byte("\x3fExample"), 1), // label runs past the name
		noTime, // a CLIENT_QUERY with no DNS message
	}
	var buf bytes.Buffer
	w, err := NewFileWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var all [][]byte
	for i, f := range frames {
		all = append(all, f)
		if i < len(bad) {
			all = append(all, bad[i])
		}
	}
	for _, f := range all {
		if _, err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	d := NewDnstapDecoder(testMap(), Config{})
	var got obs.Slice
	reasons := map[string]int{}
	n := 0
	err = ReadFrameStream(&buf, func(r ingest.Record) error {
		if !bytes.Equal(r.Value, all[n]) {
			t.Errorf("record %d differs from frame written", n)
		}
		n++
		if err := d.Decode(r.Value, &got); err != nil {
			reasons[ingest.Reason(err)]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(all) {
		t.Fatalf("read %d records, wrote %d", n, len(all))
	}
	wantReasons := map[string]int{"protobuf": 2, "dns": 1, "field_missing": 1}
	if fmt.Sprint(reasons) != fmt.Sprint(wantReasons) {
		t.Errorf("reasons %v, want %v", reasons, wantReasons)
	}
	want := Stats{Records: 10, Queries: 2, Responses: 3, Failures: 2, Ignored: 1, Unattributed: 1, Malformed: 4}
	if s := d.Stats(); s != want {
		t.Errorf("stats %v\n want %v", s, want)
	}
	sums := map[string]float64{}
	for _, o := range got {
		sums[o.Signal.String()+" "+o.Entity] += o.Value
	}
	wantSums := map[string]float64{
		"dns_queries asn:64500": 1, "dns_queries country:PT": 1, "dns_queries asn:64502": 1,
		"dns_clients asn:64500": 1, "dns_clients country:PT": 1, "dns_clients asn:64502": 1,
		"dns_failure_ratio asn:64500": 1, "dns_failure_ratio country:PT": 1,
		"dns_failure_ratio zone:example.pt": 1, "dns_failure_ratio asn:64502": 1,
		"dns_failure_ratio zone:example.co.uk": 1,
	}
	if fmt.Sprint(sums) != fmt.Sprint(wantSums) {
		t.Errorf("sums\n got %v\nwant %v", sums, wantSums)
	}
	// Every good client frame agrees with the full decoders.
	for i, f := range frames[:5] {
		o, err := oracle(t, f)
		if err != nil {
			t.Fatal(err)
		}
		var m dnstapMessage
		if err := parseDnstap(f, &m); err != nil {
			t.Fatal(err)
		}
		wire := m.queryMessage
		if m.typ == msgTypeClientReponse {
			wire = m.responseMessage
		}
		name, _ := appendQuestionName(nil, wire)
		rc, _, _ := dnsHeader(wire)
		tm, _ := m.eventTime(m.typ == msgTypeClientReponse)
		if string(name)+"." != strings.ToLower(o.qname) || rc != o.rcode || tm != o.time || uint64(o.typ) != m.typ {
			t.Errorf("frame %d: fast %q rcode %d time %d, oracle %+v", i, name, rc, tm, o)
		}
	}
}

func TestCountModes(t *testing.T) {
	c := netip.MustParseAddr("10.0.0.1")
	q := mustFrame(t, Frame{Type: dnstap.Message_CLIENT_QUERY, QueryTime: t0, Client: c, QName: "example.pt"})
	r := mustFrame(t, Frame{Type: dnstap.Message_CLIENT_RESPONSE, QueryTime: t0, ResponseTime: t0 + 1, Client: c, QName: "example.pt"})
	for _, tc := range []struct {
		name    string
		mode    CountMode
		frames  [][]byte
		queries uint64
	}{
		{"auto, responses only", CountAuto, [][]byte{r, r, r}, 3},
		{"auto, both", CountAuto, [][]byte{q, r, q, r}, 2},
		{"queries, responses only", CountQueries, [][]byte{r, r}, 0},
		{"responses, both", CountResponses, [][]byte{q, r, q, r}, 2},
	} {
		d := NewDnstapDecoder(testMap(), Config{Count: tc.mode})
		var n float64
		sink := obs.SinkFunc(func(o *obs.Observation) {
			if o.Signal == Queries && o.Entity == "asn:64500" {
				n += o.Value
			}
		})
		for _, f := range tc.frames {
			if err := d.Decode(f, sink); err != nil {
				t.Fatal(err)
			}
		}
		if s := d.Stats(); s.Queries != tc.queries || n != float64(tc.queries) {
			t.Errorf("%s: counted %d queries (%v observed), want %d", tc.name, s.Queries, n, tc.queries)
		}
	}
}

func TestZones(t *testing.T) {
	a := newAttributor(nil, Config{})
	for name, want := range map[string]string{
		"www.google.com":         "zone:google.com",
		"a.b.example.co.uk":      "zone:example.co.uk",
		"example.co.uk":          "zone:example.co.uk",
		"co.uk":                  "zone:co.uk",
		"pt":                     "zone:pt",
		"x.y.virginmedia.com":    "zone:virginmedia.com",
		"foo.blogspot.com":       "zone:foo.blogspot.com",
		"":                       "",
		"1.2.0.192.in-addr.arpa": "zone:192.in-addr.arpa",
	} {
		for range 2 { // the second time from the cache
			if got := a.zone([]byte(name)); got != want {
				t.Errorf("zone(%q) = %q, want %q", name, got, want)
			}
		}
	}
}

// TestQuestionNameMatchesMiekg compares the question-name reader with
// dns.UnpackDomainName on names with escapes, compression and errors.
func TestQuestionNameMatchesMiekg(t *testing.T) {
	hdr := []byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	cases := [][]byte{
		[]byte("\x03www\x07Example\x03com\x00"),
		[]byte("\x00"),
		[]byte("\x03a.b\x04c d\\\x02\x00\xff\x00"),
		[]byte("\x03www\xc0\x0c"), // pointer loop
		[]byte("\x03www\xc0\x12\x00\x02pt\x00"),
		[]byte("\x03www\x80\x00"),
		[]byte("\x05ab"),
		[]byte(strings.Repeat("\x3f"+strings.Repeat("a", 63), 4) + "\x00"),
		[]byte(strings.Repeat("\x3f"+strings.Repeat("a", 63), 3) + "\x3d" + strings.Repeat("b", 61) + "\x00"),
	}
	for _, c := range cases {
		checkName(t, append(slices.Clone(hdr), c...))
	}
}

func checkName(t testing.TB, msg []byte) {
	want, _, werr := dns.UnpackDomainName(msg, dnsHeaderLength)
	got, gerr := appendQuestionName(nil, msg)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%q: miekg error %v, ours %v", msg, werr, gerr)
	}
	if werr == nil {
		w := strings.TrimSuffix(strings.ToLower(want), ".")
		if string(got) != w {
			t.Fatalf("%q: miekg %q, ours %q", msg, w, got)
		}
	}
}

func FuzzQuestionName(f *testing.F) {
	f.Add([]byte("\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03www\x07example\x03com\x00"))
	f.Add([]byte("\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03w.w\xc0\x0c"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		if len(msg) < dnsHeaderLength {
			return
		}
		checkName(t, msg)
	})
}

// FuzzDnstapDecode feeds arbitrary frames to the decoder: it must not panic,
// and what it accepts must agree with golang-dnstap + miekg/dns.
func FuzzDnstapDecode(f *testing.F) {
	for _, r := range readAllF(f, "testdata/dnsdist.dnstap.fstrm") {
		f.Add(r.Value)
	}
	f.Add(mustFrame(f, Frame{Type: dnstap.Message_CLIENT_RESPONSE, QueryTime: t0, ResponseTime: t0 + 5, Client: netip.MustParseAddr("2001:db8::1"), QName: "a.example.pt", Rcode: 2}))
	f.Add(mustFrame(f, Frame{Type: dnstap.Message_CLIENT_QUERY, QueryTime: t0, Client: netip.MustParseAddr("10.0.0.1"), QName: "."}))
	f.Add([]byte{0x72, 0x02, 0x08, 0x05, 0x78, 0x01})
	f.Add([]byte{})
	d := NewDnstapDecoder(testMap(), Config{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		var got obs.Slice
		before := d.Stats()
		err := d.Decode(frame, &got)
		after := d.Stats()
		if err != nil {
			if after.Malformed != before.Malformed+1 || len(got) != 0 {
				t.Fatalf("error %v not counted or with observations", err)
			}
			var e *ingest.Error
			if !errors.As(err, &e) || e.Reason == "" {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		if after.Queries == before.Queries && after.Responses == before.Responses {
			return // ignored frame
		}
		o, oerr := oracle(t, frame)
		if oerr != nil {
			// The full DNS unpack is stricter than header + question.
			return
		}
		for _, ob := range got {
			if ob.Time != o.time {
				t.Fatalf("time %d, oracle %d", ob.Time, o.time)
			}
			if ob.Signal == FailureRatio && (ob.Value == 1) != Failed(o.rcode&0xf) {
				t.Fatalf("failure %v for rcode %d", ob.Value, o.rcode)
			}
		}
	})
}

func readAllF(f *testing.F, path string) []ingest.Record {
	var recs []ingest.Record
	if err := ReadFile(path, func(r ingest.Record) error { recs = append(recs, r); return nil }); err != nil {
		f.Fatal(err)
	}
	return recs
}

// FuzzReadFrameStream feeds arbitrary bytes as a Frame Streams file: errors
// are fine, panics are not.
func FuzzReadFrameStream(f *testing.F) {
	b, err := readTestFile("testdata/dnsdist.dnstap.fstrm")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)-7])
	f.Add(b[:40])
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		_ = ReadFrameStream(bytes.NewReader(data), func(r ingest.Record) error {
			n++
			if len(r.Value) == 0 {
				t.Fatal("empty record")
			}
			return nil
		})
	})
}

// envelope wraps message fields in a Dnstap MESSAGE envelope.
func envelope(envType int, msg []byte) []byte {
	var b []byte
	if msg != nil {
		b = protowire.AppendTag(b, fieldDnstapMessage, protowire.BytesType)
		b = protowire.AppendBytes(b, msg)
	}
	if envType >= 0 {
		b = protowire.AppendTag(b, fieldDnstapType, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(envType))
	}
	return b
}

func TestDnstapReasons(t *testing.T) {
	query := []byte("\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x02pt\x00\x00\x01\x00\x01")
	msg := func(typ int, addr []byte, sec uint64, nsec uint32, wire []byte) []byte {
		var b []byte
		b = protowire.AppendTag(b, fieldMsgType, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(typ))
		if addr != nil {
			b = protowire.AppendTag(b, fieldMsgQueryAddress, protowire.BytesType)
			b = protowire.AppendBytes(b, addr)
		}
		if sec != 0 {
			b = protowire.AppendTag(b, fieldMsgQueryTimeSec, protowire.VarintType)
			b = protowire.AppendVarint(b, sec)
			b = protowire.AppendTag(b, fieldMsgQueryTimeNsec, protowire.Fixed32Type)
			b = protowire.AppendFixed32(b, nsec)
		}
		if wire != nil {
			b = protowire.AppendTag(b, fieldMsgQueryMessage, protowire.BytesType)
			b = protowire.AppendBytes(b, wire)
		}
		return b
	}
	v4 := []byte{10, 0, 0, 1}
	for _, tc := range []struct {
		name, reason string
		frame        []byte
	}{
		{"valid", "", envelope(1, msg(5, v4, 1745836200, 5, query))},
		{"envelope without type", "field_missing", envelope(-1, msg(5, v4, 1745836200, 5, query))},
		{"other envelope type", "", envelope(2, nil)},
		{"MESSAGE without message", "field_missing", envelope(1, nil)},
		{"message without type", "field_missing", envelope(1, msg(5, v4, 1745836200, 5, query)[2:])},
		{"no time", "time", envelope(1, msg(5, v4, 0, 0, query))},
		{"nanoseconds out of range", "time", envelope(1, msg(5, v4, 1745836200, 1e9, query))},
		{"address of 5 bytes", "address", envelope(1, msg(5, []byte{1, 2, 3, 4, 5}, 1745836200, 0, query))},
		{"no address", "address", envelope(1, msg(5, nil, 1745836200, 0, query))},
		{"short DNS header", "dns", envelope(1, msg(5, v4, 1745836200, 0, query[:11]))},
		{"resolver query", "", envelope(1, msg(3, v4, 1745836200, 0, query))},
		{"bad varint", "protobuf", []byte{0x78, 0xff}},
	} {
		d := NewDnstapDecoder(testMap(), Config{})
		var got obs.Slice
		err := d.Decode(tc.frame, &got)
		if ingest.Reason(err) != tc.reason && !(err == nil && tc.reason == "") {
			t.Errorf("%s: error %v, want reason %q", tc.name, err, tc.reason)
		}
		if tc.name == "valid" && (len(got) != 4 || got[0].Time != 1745836200e9+5) {
			t.Errorf("valid frame gave %v", got)
		}
		if (tc.name == "other envelope type" || tc.name == "resolver query") && (len(got) != 0 || d.Stats().Ignored != 1) {
			t.Errorf("%s: not ignored: %v %v", tc.name, got, d.Stats())
		}
	}
}

func TestReadFrameStreamEnds(t *testing.T) {
	b, err := readTestFile("testdata/dnsdist.dnstap.fstrm")
	if err != nil {
		t.Fatal(err)
	}
	count := func(data []byte) (int, error) {
		n := 0
		err := ReadFrameStream(bytes.NewReader(data), func(ingest.Record) error { n++; return nil })
		return n, err
	}
	// Without its STOP frame (12 bytes): a capture cut between frames.
	if n, err := count(b[:len(b)-12]); n != 2 || err != nil {
		t.Errorf("cut before STOP: %d records, %v", n, err)
	}
	// Cut inside the second data frame.
	var torn *ingest.TornError
	if n, err := count(b[:len(b)-40]); n != 1 || !errors.As(err, &torn) || torn.Record != 1 || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("cut inside a frame: %d records, %v", n, err)
	}
	// Another content type.
	var buf bytes.Buffer
	w, _ := framestream.NewWriter(&buf, &framestream.WriterOptions{ContentTypes: [][]byte{[]byte("protobuf:other")}})
	w.WriteFrame([]byte("x"))
	w.Close()
	if _, err := count(buf.Bytes()); err == nil || !strings.Contains(err.Error(), "content type") {
		t.Errorf("other content type: %v", err)
	}
	// An error from fn stops the reading.
	stop := errors.New("stop")
	if err := ReadFrameStream(bytes.NewReader(b), func(ingest.Record) error { return stop }); err != stop {
		t.Errorf("fn error: %v", err)
	}
}
