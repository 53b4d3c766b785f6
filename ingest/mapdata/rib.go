package mapdata

import (
	"fmt"
	"net/netip"

	gobgp "github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"github.com/osrg/gobgp/v3/pkg/packet/mrt"

	"github.com/outagewatch/outagewatch/ingest"
	ingestbgp "github.com/outagewatch/outagewatch/ingest/bgp"
	"github.com/outagewatch/outagewatch/netmap"
)

// ReadRIB reads an MRT TABLE_DUMP_V2 RIB dump (RouteViews' rib.*.bz2, RIPE
// RIS bview.*.gz) through the replayer's MRT file reader and gobgp's MRT
// parser. A prefix's origin is the one most of the peers that carry it see
// (ties go to the lower AS number, so a rebuild gives the same file); a path
// ending in an AS_SET gives no origin. Records that are not RIB entries
// (the peer index, BGP4MP updates) are passed over.
func ReadRIB(path string, m *netmap.Map) (Stats, error) {
	st := Stats{Format: "rib"}
	err := ingestbgp.ReadMRTFile(path, func(rec ingest.Record) error {
		readRIBRecord(rec.Value, m, &st)
		return nil
	})
	if st.Lines == 0 && err == nil {
		st.Notes = append(st.Notes, "no TABLE_DUMP_V2 RIB records: is this an update file?")
	}
	return st, err
}

func readRIBRecord(b []byte, m *netmap.Map, st *Stats) {
	var h mrt.MRTHeader
	if err := h.DecodeFromBytes(b); err != nil || len(b) < mrt.MRT_COMMON_HEADER_LEN {
		st.Lines++
		st.skip(st.Lines, "MRT header: %v", err)
		return
	}
	if h.Type != mrt.TABLE_DUMPv2 {
		return
	}
	switch mrt.MRTSubTypeTableDumpv2(h.SubType) {
	case mrt.RIB_IPV4_UNICAST, mrt.RIB_IPV6_UNICAST:
	default:
		return
	}
	st.Lines++
	msg, err := parseMRTBody(&h, b[mrt.MRT_COMMON_HEADER_LEN:])
	if err != nil {
		st.skip(st.Lines, "RIB record: %v", err)
		return
	}
	r, ok := msg.Body.(*mrt.Rib)
	if !ok || r.Prefix == nil {
		st.skip(st.Lines, "RIB record without a prefix")
		return
	}
	p, err := netip.ParsePrefix(r.Prefix.String())
	if err != nil {
		st.skip(st.Lines, "prefix %q: %v", r.Prefix.String(), err)
		return
	}
	votes := map[uint32]int{}
	for _, e := range r.Entries {
		if o, ok := pathOrigin(e.PathAttributes); ok {
			votes[o]++
		}
	}
	best, n := uint32(0), 0
	for o, c := range votes {
		if c > n || c == n && o < best {
			best, n = o, c
		}
	}
	if n == 0 {
		return
	}
	m.Origins.Insert(p.Masked(), best)
	st.Origins++
}

// parseMRTBody is gobgp's parser made safe: it panics on some truncated
// records (a RIB entry count larger than the data), which must cost one
// skipped record, not the build.
func parseMRTBody(h *mrt.MRTHeader, b []byte) (msg *mrt.MRTMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, err = nil, fmt.Errorf("malformed record: %v", r)
		}
	}()
	return mrt.ParseMRTBody(h, b)
}

// pathOrigin returns the last AS of the AS_PATH when it ends in a sequence.
func pathOrigin(attrs []gobgp.PathAttributeInterface) (uint32, bool) {
	for _, a := range attrs {
		ap, ok := a.(*gobgp.PathAttributeAsPath)
		if !ok || len(ap.Value) == 0 {
			continue
		}
		last := ap.Value[len(ap.Value)-1]
		if last.GetType() != gobgp.BGP_ASPATH_ATTR_TYPE_SEQ {
			return 0, false
		}
		as := last.GetAS()
		if len(as) == 0 {
			return 0, false
		}
		return as[len(as)-1], true
	}
	return 0, false
}

// ReadRIBBytes is ReadRIB on records already split, for tests and fuzzing.
func ReadRIBBytes(recs [][]byte, m *netmap.Map) Stats {
	st := Stats{Format: "rib"}
	for _, b := range recs {
		readRIBRecord(b, m, &st)
	}
	return st
}
