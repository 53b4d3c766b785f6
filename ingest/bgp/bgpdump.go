package bgp

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/linefile"
	"github.com/outagewatch/outagewatch/obs"
)

// FormatBgpdump is the one-line-per-route text that `bgpdump -m` (and
// `bgpdump -M`) prints of MRT archives, which many collectors' users keep
// instead of the archives:
//
//	BGP4MP|1470931200|A|37.49.236.123|198290|192.140.252.0/22|198290 6661 2914|IGP|...
//	BGP4MP|1470931201|W|37.49.236.123|198290|10.0.0.0/8
//	BGP4MP|1470931201|STATE|37.49.232.25|60427|6|1
//	TABLE_DUMP2|1470931200|B|37.49.236.123|198290|192.140.252.0/22|198290 6661|IGP|...
//
// A line is one prefix; the routing table sums what an MRT update of many
// prefixes gives at once, so a bucket holds the same counts from either.
const FormatBgpdump = "bgpdump-m"

// Bgpdump decodes `bgpdump -m` lines, one line per call, into the routing
// table, as MRT decodes the records they were printed from.
type Bgpdump struct {
	Table *rib.Table
	// Collector is part of every peer's key, as for MRT.
	Collector string

	u      rib.Update
	one    [1]netip.Prefix
	fields [8]string
}

// NewBgpdump returns a decoder of `bgpdump -m` lines feeding t.
func NewBgpdump(t *rib.Table, collector string) *Bgpdump {
	return &Bgpdump{Table: t, Collector: collector}
}

// BgpdumpTime is the event time (Unix ns) of a `bgpdump -m` line: its
// second field, seconds with a fraction for the _ET records.
func BgpdumpTime(line []byte) (int64, error) {
	_, rest, ok := bytes.Cut(line, []byte{'|'})
	if !ok {
		return 0, ingest.Errorf("time", "no fields")
	}
	ts, _, _ := bytes.Cut(rest, []byte{'|'})
	return bgpdumpTime(string(ts))
}

// bgpdumpTime reads a `bgpdump -m` time field: Unix seconds, with a
// fraction for the _ET records.
func bgpdumpTime(ts string) (int64, error) {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || s < 0 || s >= 1<<33 {
		return 0, ingest.Errorf("time", "time %q: want Unix seconds", ts)
	}
	ns := s * 1e9
	if frac != "" {
		f, err := strconv.ParseUint((frac + "000000000")[:9], 10, 64)
		if err != nil {
			return 0, ingest.Errorf("time", "time %q: want Unix seconds", ts)
		}
		ns += int64(f)
	}
	return ns, nil
}

// Decode applies one line.
func (d *Bgpdump) Decode(value []byte, sink obs.Sink) error {
	line := strings.TrimRight(string(value), "\r\n")
	f := d.fields[:0]
	for len(f) < cap(f) {
		field, rest, ok := strings.Cut(line, "|")
		f = append(f, field)
		if !ok {
			break
		}
		line = rest
	}
	if len(f) < 6 {
		return ingest.Errorf("fields", "%d fields, want at least 6 (bgpdump -m)", len(f))
	}
	switch f[0] {
	case "BGP4MP", "BGP4MP_ET", "TABLE_DUMP2", "TABLE_DUMP":
	default:
		return ingest.Errorf("unsupported", "record type %q", f[0])
	}
	at, err := bgpdumpTime(f[1])
	if err != nil {
		return err
	}
	addr, err := netip.ParseAddr(f[3])
	if err != nil {
		return ingest.Errorf("peer", "peer address %q", f[3])
	}
	as, err := strconv.ParseUint(f[4], 10, 32)
	if err != nil {
		return ingest.Errorf("peer", "peer AS %q", f[4])
	}
	peer := d.Table.Peer(rib.PeerKey{Collector: d.Collector, Addr: addr.Unmap(), AS: uint32(as)})
	switch f[2] {
	case "STATE":
		from, err1 := strconv.Atoi(f[5])
		to, err2 := strconv.Atoi(f[len(f)-1])
		if len(f) != 7 || err1 != nil || err2 != nil {
			return ingest.Errorf("state", "want old|new states")
		}
		// As MRT's state changes: 6 is Established.
		if to == 6 {
			d.Table.PeerUp(peer, at)
			return nil
		}
		if from == 6 {
			d.Table.PeerUp(peer, at)
		}
		d.Table.PeerDown(peer, at)
		return nil
	case "A", "B":
		if len(f) < 7 {
			return ingest.Errorf("fields", "an announcement without its AS path")
		}
		pfx, err := netip.ParsePrefix(f[5])
		if err != nil {
			return ingest.Errorf("prefix", "prefix %q", f[5])
		}
		if f[2] == "B" {
			// A RIB dump's peer is up: MRT's peer index table says so.
			d.Table.PeerUp(peer, at)
		}
		d.u = rib.Update{Peer: peer, Time: at, Path: d.u.Path[:0]}
		if d.u.Path, d.u.Origin, err = parsePath(d.u.Path, f[6]); err != nil {
			return err
		}
		d.one[0] = pfx.Masked()
		d.u.Announced = d.one[:]
	case "W":
		pfx, err := netip.ParsePrefix(f[5])
		if err != nil {
			return ingest.Errorf("prefix", "prefix %q", f[5])
		}
		d.u = rib.Update{Peer: peer, Time: at, Path: d.u.Path[:0]}
		d.one[0] = pfx.Masked()
		d.u.Withdrawn = d.one[:]
	default:
		return ingest.Errorf("unsupported", "line kind %q", f[2])
	}
	d.Table.Apply(&d.u, sink)
	return nil
}

// parsePath appends the ASes of a bgpdump AS path to path, sets
// ("{64500,64501}", a confederation's "[64512,64513]") and a
// confederation's sequence ("(64512 64513)") flattened in place as MRT's
// segments are, and returns the origin: the last AS, 0 when the path is
// empty or ends in a set of several, as for MRT.
func parsePath(path []uint32, s string) ([]uint32, uint32, error) {
	lastSet := 0
	for tok := range strings.FieldsSeq(s) {
		set := strings.HasPrefix(tok, "{") || strings.HasPrefix(tok, "[")
		tok = strings.Trim(tok, "{}[]()")
		n := 0
		for a := range strings.SplitSeq(tok, ",") {
			v, err := strconv.ParseUint(a, 10, 32)
			if err != nil {
				return path, 0, ingest.Errorf("as_path", "AS path %q", s)
			}
			path = append(path, uint32(v))
			n++
		}
		lastSet = 0
		if set {
			lastSet = n
		}
	}
	if len(path) == 0 || lastSet > 1 {
		return path, 0, nil
	}
	return path, path[len(path)-1], nil
}

// bgpdumpPrefixes are how a `bgpdump -m` file begins, told from MRT by
// its first bytes (MRT begins with a binary timestamp).
var bgpdumpPrefixes = []string{"BGP4MP|", "BGP4MP_ET|", "TABLE_DUMP2|", "TABLE_DUMP|"}

// isBgpdump reports whether a file beginning with b is `bgpdump -m` text.
func isBgpdump(b []byte) bool {
	for _, p := range bgpdumpPrefixes {
		if bytes.HasPrefix(b, []byte(p)) {
			return true
		}
	}
	return false
}

// ReadBGPFile reads a file of BGP updates, plain, gzip or bzip2: MRT, or
// the `bgpdump -m` text printed of MRT, told apart by the first bytes,
// whatever the file's name. See ReadMRTFile and readBgpdump.
func ReadBGPFile(path string, fn func(ingest.Record) error) error {
	r, c, err := openMaybeCompressed(path)
	if err != nil {
		return err
	}
	defer c.Close()
	if head, _ := r.Peek(16); isBgpdump(head) {
		return readBgpdump(path, r, fn)
	}
	return readMRT(path, r, fn)
}

// readBgpdump splits the `bgpdump -m` file at path, opened as r, into
// records of one line each, with Time from the line, and calls fn for
// each in file order. A compressed file cut short is read to its last
// whole line and returns an *ingest.TornError (see linefile.WholeLines).
func readBgpdump(path string, r io.Reader, fn func(ingest.Record) error) error {
	wl := linefile.NewWholeLines(r)
	var n, last int64
	err := linefile.Scan(wl, 1<<20, func(_ int64, line []byte) error {
		if len(line) == 0 {
			return nil
		}
		// A line without a readable time keeps the time of the line
		// before it, so that a merge by time is not disturbed; the
		// decoder refuses it.
		if t, err := BgpdumpTime(line); err == nil {
			last = t
		}
		at := last
		v := append([]byte(nil), line...)
		rec := ingest.Record{Stream: Stream, Format: FormatBgpdump, Offset: n, Time: at, Value: v}
		n++
		return fn(rec)
	})
	if err == nil {
		err = wl.Torn()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
