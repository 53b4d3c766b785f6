package bgp

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	gobgp "github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"github.com/osrg/gobgp/v3/pkg/packet/bmp"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/gztest"
)

func writeFile(t *testing.T, name string, data []byte, gz bool) string {
	t.Helper()
	if gz {
		data = gztest.Gzip(data)
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
	// Cut short, plain or gzipped (an update file still being written or
	// fetched): the whole records come first, then the cut, as an
	// *ingest.TornError naming the record it fell in. Plain and five bytes
	// short, that is the eleventh; gzipped and cut in its last block,
	// whatever the decompressor had whole before it found the cut.
	z := gztest.Gzip(data)
	for _, c := range []struct {
		name string
		cut  []byte
		want int
	}{
		{"cut.mrt", data[:len(data)-5], 10},
		{"cut.mrt.gz", z[:len(z)*3/4], -1},
	} {
		n := 0
		err := ReadMRTFile(writeFile(t, c.name, c.cut, false), func(ingest.Record) error { n++; return nil })
		var torn *ingest.TornError
		if !errors.As(err, &torn) || torn.Record != int64(n) || n > 10 || (c.want >= 0 && n != c.want) {
			t.Fatalf("%s: %d records, then %v: want the whole ones, then the one cut torn", c.name, n, err)
		}
	}
	// An error that is no end of file is no torn record.
	var te *ingest.TornError
	if err := torn(7, "body", errors.New("disk")); errors.As(err, &te) || err.Error() != "record 7 body: disk" {
		t.Fatalf("a read error came back as %v", err)
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
