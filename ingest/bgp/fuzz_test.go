package bgp

import (
	"bufio"
	stdjson "encoding/json"
	"net/netip"
	"os"
	"reflect"
	"testing"

	"github.com/segmentio/encoding/json"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

// checkErr fails on errors that are not ingest errors: the pipeline labels
// dead letters by reason, and "other" hides a decoder bug.
func checkErr(t *testing.T, err error) {
	if err != nil && ingest.Reason(err) == "other" {
		t.Fatalf("error without a reason: %v", err)
	}
}

func FuzzRISLive(f *testing.F) {
	fh, err := os.Open("testdata/ris-live-stream.json")
	if err != nil {
		f.Fatal(err)
	}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		f.Add(append([]byte(nil), sc.Bytes()...))
	}
	fh.Close()
	b, _ := EncodeRISLive(&UpdateSpec{Time: 1e18, Collector: "rrc00", Peer: netip.MustParseAddr("2001:db8::1"), PeerAS: 1, Path: []uint32{1, 2}, Announced: prefixes("2001:db8::/32"), Withdrawn: prefixes("10.0.0.0/8")})
	f.Add(b)
	f.Add([]byte(`{"timestamp":1.5,"peer":"192.0.2.1","peer_asn":1,"host":"h","type":"UPDATE","path":[1,[2,3]],"announcements":[{"prefixes":["0.0.0.0/0"]}]}`))
	tab := rib.New(rib.Config{})
	d := NewRISLive(tab)
	f.Fuzz(func(t *testing.T, in []byte) {
		var s obs.Slice
		checkErr(t, d.Decode(in, &s))
		tab.EmitSpace(1, &s)
	})
}

func FuzzMRT(f *testing.F) {
	n := 0
	_ = ReadMRTFile("testdata/ris-updates.long_withdrawal.gz", func(r ingest.Record) error {
		if n < 5 {
			f.Add(r.Value)
		}
		n++
		return nil
	})
	n = 0
	_ = ReadMRTFile("testdata/routeviews-jinx-updates.1427846400.bz2", func(r ingest.Record) error {
		if n%300 == 0 {
			f.Add(r.Value)
		}
		n++
		return nil
	})
	for _, r := range syntheticRIB(f, 2, 3) {
		f.Add(r)
	}
	rec, _ := EncodeMRTUpdate(&UpdateSpec{Time: 1e18, Peer: netip.MustParseAddr("192.0.2.1"), PeerAS: 1, Path: []uint32{1, 2}, Announced: prefixes("2001:db8::/32", "10.0.0.0/8")})
	f.Add(rec)
	tab := rib.New(rib.Config{})
	d := NewMRT(tab, "fuzz")
	// Decode the dump's index first so that RIB records get past it.
	_ = d.Decode(syntheticRIB(f, 2, 1)[0], nil)
	f.Fuzz(func(t *testing.T, in []byte) {
		var s obs.Slice
		checkErr(t, d.Decode(in, &s))
		tab.EmitSpace(1, &s)
	})
}

func FuzzBMP(f *testing.F) {
	spec := &UpdateSpec{Peer: netip.MustParseAddr("192.0.2.1"), Path: []uint32{64496, 64500}, Announced: prefixes("198.51.100.0/24", "2001:db8::/32"), Withdrawn: prefixes("10.0.0.0/8")}
	f.Add(bmpUpdate(f, 1700000001.5, "192.0.2.1", 64496, spec))
	f.Add(bmpUpdate(f, 0, "2001:db8::1", 64496, spec))
	f.Add([]byte("\x03\x00\x00\x00\x06\x04"))
	tab := rib.New(rib.Config{})
	d := NewBMP(tab, "fuzz")
	f.Fuzz(func(t *testing.T, in []byte) {
		var s obs.Slice
		checkErr(t, d.Decode(in, &s))
		tab.EmitSpace(1, &s)
	})
}

// FuzzRISLiveParse holds the RIS Live decoder's JSON library (segmentio's,
// four times the standard library's speed on RIS Live's messages) to the
// standard library's reading: the same inputs accepted, the same fields.
func FuzzRISLiveParse(f *testing.F) {
	f.Add([]byte(`{"timestamp":1.5,"peer":"192.0.2.1","peer_asn":1,"host":"h","type":"UPDATE","path":[1,[2,3]],"announcements":[{"prefixes":["0.0.0.0/0"]}]}`))
	f.Add([]byte(`{"timestamp":1553625081.88,"peer":"195.66.224.59","peer_asn":"24931","host":"rrc01","type":"UPDATE","path":[24931,[1,2]],"withdrawals":["10.0.0.0/8"],"PEER":"x"}`))
	f.Add([]byte(`{"timestamp":1e400,"peer":"\ud800","peer_asn":null,"state":"down","type":"RIS_PEER_STATE"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var std, got risMessage
		stdErr, err := stdjson.Unmarshal(in, &std), json.Unmarshal(in, &got)
		if (stdErr == nil) != (err == nil) {
			t.Fatalf("%q: the standard library says %v, the decoder's library %v", in, stdErr, err)
		}
		if err == nil && !reflect.DeepEqual(std, got) {
			t.Fatalf("%q read differently:\nstandard library %#v\ndecoder's library %#v", in, std, got)
		}
	})
}
