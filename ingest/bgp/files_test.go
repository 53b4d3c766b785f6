package bgp

import (
	"bytes"
	"compress/gzip"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	gobgp "github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"github.com/osrg/gobgp/v3/pkg/packet/bmp"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
)

func writeFile(t *testing.T, name string, data []byte, gz bool) string {
	t.Helper()
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
		data = b.Bytes()
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadMRTFilePlainAndTruncated(t *testing.T) {
	recs := syntheticRIB(t, 2, 10)
	data := bytes.Join(recs, nil)
	var got []ingest.Record
	if err := ReadMRTFile(writeFile(t, "rib.mrt", data, false), func(r ingest.Record) error {
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 11 {
		t.Fatalf("%d records, want 11", len(got))
	}
	for i, r := range got {
		if !bytes.Equal(r.Value, recs[i]) || r.Time != 1700000000e9 || r.Offset != int64(i) || r.Stream != "bgp" || r.Format != "mrt" {
			t.Fatalf("record %d = %+v", i, r)
		}
	}
	if err := ReadMRTFile(writeFile(t, "cut.mrt", data[:len(data)-5], false), func(ingest.Record) error { return nil }); err == nil {
		t.Fatal("a truncated file read without error")
	}
}

func TestReadBMPFile(t *testing.T) {
	ph := bmp.NewBMPPeerHeader(bmp.BMP_PEER_TYPE_GLOBAL, 0, 0, "192.0.2.1", 64496, "192.0.2.1", 1700000000)
	init := bmpBytes(t, bmp.NewBMPInitiation(nil))
	open := gobgp.NewBGPOpenMessage(64496, 90, "192.0.2.1", nil)
	up := bmpBytes(t, bmp.NewBMPPeerUpNotification(*ph, "192.0.2.254", 179, 40000, open, open))
	upd := bmpUpdate(t, 1700000002.25, "192.0.2.1", 64496, &UpdateSpec{Peer: netip.MustParseAddr("192.0.2.1"), Path: []uint32{64496, 64500}, Announced: prefixes("198.51.100.0/24")})
	data := bytes.Join([][]byte{init, up, upd}, nil)
	tab := rib.New(rib.Config{})
	d := NewBMP(tab, "edge1")
	var times []int64
	if err := ReadBMPFile(writeFile(t, "bmp.gz", data, true), func(r ingest.Record) error {
		times = append(times, r.Time)
		return d.Decode(r.Value, nil)
	}); err != nil {
		t.Fatal(err)
	}
	// The initiation has no peer header, so no time yet.
	if len(times) != 3 || times[0] != 0 || times[1] != 1700000000e9 || times[2] != 1700000002_250000000 {
		t.Fatalf("times %v", times)
	}
	if st := tab.Stats(); st.Routes != 1 {
		t.Fatalf("stats %+v", st)
	}
	if err := ReadBMPFile(writeFile(t, "junk", []byte("not a BMP stream at all"), false), func(ingest.Record) error { return nil }); err == nil {
		t.Fatal("junk read as BMP")
	}
}
