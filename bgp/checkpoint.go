package rib

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// The checkpoint keeps prefix and path IDs as they are, so that restoring a
// checkpoint and writing it again gives the same bytes, and routes are
// written sorted by prefix ID: the same table always gives the same bytes.
// Visibility and per-origin space are not stored; they are recomputed from
// the routes on load, which also means a checkpoint cannot disagree with the
// routes it holds.

const checkpointMagic = "OWRIB\x01"

// MarshalBinary encodes the table's state.
func (t *Table) MarshalBinary() ([]byte, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	b := []byte(checkpointMagic)
	b = binary.AppendUvarint(b, uint64(len(t.paths)))
	for i := range t.paths {
		pe := &t.paths[i]
		if pe.refs == 0 {
			b = append(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(pe.key))+1)
		b = append(b, pe.key...)
	}
	b = binary.AppendUvarint(b, uint64(len(t.prefixes)))
	for i := range t.prefixes {
		st := &t.prefixes[i]
		switch {
		case st.refs == 0:
			b = append(b, 0)
		case st.key.v6:
			b = append(b, 2, st.key.bits)
			b = binary.BigEndian.AppendUint64(b, st.key.hi)
			b = binary.BigEndian.AppendUint64(b, st.key.lo)
		default:
			b = append(b, 1, st.key.bits)
			b = binary.BigEndian.AppendUint32(b, uint32(st.key.hi>>32))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(t.peers)))
	var pids []uint32
	for _, p := range t.peers {
		b = appendString(b, p.key.Collector)
		a, _ := p.key.Addr.MarshalBinary()
		b = appendString(b, string(a))
		b = binary.AppendUvarint(b, uint64(p.key.AS))
		var flags byte
		if p.up {
			flags |= 1
		}
		if p.full {
			flags |= 2
		}
		b = append(b, flags)
		b = binary.AppendVarint(b, p.last)
		b = binary.AppendUvarint(b, uint64(p.resets))
		pids = pids[:0]
		for pid := range p.routes {
			pids = append(pids, pid)
		}
		slices.Sort(pids)
		b = binary.AppendUvarint(b, uint64(len(pids)))
		prev := uint32(0)
		for _, pid := range pids {
			b = binary.AppendUvarint(b, uint64(pid-prev))
			b = binary.AppendUvarint(b, uint64(p.routes[pid]))
			prev = pid
		}
	}
	// What was last emitted decides whether the next EmitSpace sends a zero.
	asns := make([]uint32, 0, len(t.origins))
	for a, s := range t.origins {
		if s.emitted4 || s.emitted6 {
			asns = append(asns, a)
		}
	}
	slices.Sort(asns)
	b = binary.AppendUvarint(b, uint64(len(asns)))
	for _, a := range asns {
		b = binary.AppendUvarint(b, uint64(a))
		b = append(b, emittedFlags(t.origins[a]))
	}
	ccs := make([]string, 0, len(t.countries))
	for cc := range t.countries {
		ccs = append(ccs, cc)
	}
	slices.Sort(ccs)
	b = binary.AppendUvarint(b, uint64(len(ccs)))
	for _, cc := range ccs {
		b = appendString(b, cc)
		b = append(b, emittedFlags(t.countries[cc]))
	}
	return b, nil
}

func emittedFlags(s *space) byte {
	var f byte
	if s.emitted4 {
		f |= 1
	}
	if s.emitted6 {
		f |= 2
	}
	return f
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("truncated")

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) byte1() byte {
	if b := r.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) count(max int) int {
	n := r.uvarint()
	if n > uint64(max) {
		r.err = fmt.Errorf("count %d exceeds the remaining %d bytes", n, max)
		return 0
	}
	return int(n)
}

func (r *reader) string() string { return string(r.bytes(r.count(len(r.b)))) }

// UnmarshalBinary replaces the table's state with a checkpoint, keeping its
// configuration.
func (t *Table) UnmarshalBinary(data []byte) error {
	if len(data) < len(checkpointMagic) || string(data[:len(checkpointMagic)]) != checkpointMagic {
		return errors.New("rib checkpoint: bad magic or version")
	}
	n := New(t.cfg)
	r := &reader{b: data[len(checkpointMagic):]}
	np := r.count(len(r.b))
	n.paths = make([]pathEntry, np)
	for i := 0; i < np && r.err == nil; i++ {
		l := r.uvarint()
		if l == 0 {
			continue
		}
		k := string(r.bytes(int(l - 1)))
		if len(k) < 4 || len(k)%4 != 0 {
			return fmt.Errorf("rib checkpoint: path %d: bad length %d", i, len(k))
		}
		n.paths[i] = pathEntry{key: k, origin: binary.BigEndian.Uint32([]byte(k[len(k)-4:]))}
		n.pathIDs[k] = uint32(i)
	}
	nx := r.count(len(r.b))
	n.prefixes = make([]prefixState, nx)
	for i := 0; i < nx && r.err == nil; i++ {
		var k pfxKey
		switch fam := r.byte1(); {
		case r.err != nil:
		case fam == 0:
			continue
		case fam == 1:
			k.bits = r.byte1()
			if a := r.bytes(4); a != nil {
				k.hi = uint64(binary.BigEndian.Uint32(a)) << 32
			}
			if k.bits > 32 {
				return fmt.Errorf("rib checkpoint: prefix %d: /%d", i, k.bits)
			}
		case fam == 2:
			k.v6 = true
			k.bits = r.byte1()
			if a := r.bytes(16); a != nil {
				k.hi, k.lo = binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
			}
			if k.bits > 128 {
				return fmt.Errorf("rib checkpoint: prefix %d: /%d", i, k.bits)
			}
		default:
			return fmt.Errorf("rib checkpoint: prefix %d: family %d", i, fam)
		}
		if r.err != nil {
			break
		}
		n.prefixes[i].key = k
		n.pfxIDs[k] = uint32(i)
	}
	npeers := r.count(len(r.b))
	for i := 0; i < npeers && r.err == nil; i++ {
		var key PeerKey
		key.Collector = r.string()
		if err := key.Addr.UnmarshalBinary([]byte(r.string())); err != nil && r.err == nil {
			return fmt.Errorf("rib checkpoint: peer %d address: %w", i, err)
		}
		key.AS = uint32(r.uvarint())
		p := &peer{key: key}
		flags := r.bytes(1)
		if r.err != nil {
			break
		}
		p.up, p.full = flags[0]&1 != 0, flags[0]&2 != 0
		p.last = r.varint()
		p.resets = int(r.uvarint())
		nr := r.count(len(r.b))
		p.routes = make(map[uint32]uint32, nr)
		pid := uint64(0)
		for j := 0; j < nr && r.err == nil; j++ {
			pid += r.uvarint()
			path := r.uvarint()
			if pid >= uint64(len(n.prefixes)) || path >= uint64(len(n.paths)) || n.prefixes[pid].key.bits == 0 && !n.prefixKnown(uint32(pid)) || n.paths[path].key == "" {
				return fmt.Errorf("rib checkpoint: peer %d: route to unknown prefix %d or path %d", i, pid, path)
			}
			p.routes[uint32(pid)] = uint32(path)
			n.prefixes[pid].refs++
			n.paths[path].refs++
		}
		n.peerIDs[key] = PeerID(len(n.peers))
		n.peers = append(n.peers, p)
	}
	no := r.count(len(r.b))
	for i := 0; i < no && r.err == nil; i++ {
		a := uint32(r.uvarint())
		f := r.bytes(1)
		if r.err == nil {
			n.origins[a] = &space{emitted4: f[0]&1 != 0, emitted6: f[0]&2 != 0}
		}
	}
	nc := r.count(len(r.b))
	for i := 0; i < nc && r.err == nil; i++ {
		cc := r.string()
		f := r.bytes(1)
		if r.err == nil {
			n.countries[cc] = &space{emitted4: f[0]&1 != 0, emitted6: f[0]&2 != 0}
		}
	}
	if r.err != nil {
		return fmt.Errorf("rib checkpoint: %w", r.err)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("rib checkpoint: %d trailing bytes", len(r.b))
	}
	// Unused slots become free lists, smallest ID reused first.
	for i := len(n.paths) - 1; i >= 0; i-- {
		if n.paths[i].refs == 0 {
			if n.paths[i].key != "" {
				delete(n.pathIDs, n.paths[i].key)
				n.paths[i] = pathEntry{}
			}
			n.freePaths = append(n.freePaths, uint32(i))
		}
	}
	for i := len(n.prefixes) - 1; i >= 0; i-- {
		if n.prefixes[i].refs == 0 {
			if id, ok := n.pfxIDs[n.prefixes[i].key]; ok && id == uint32(i) {
				delete(n.pfxIDs, n.prefixes[i].key)
			}
			n.prefixes[i] = prefixState{}
			n.freePfx = append(n.freePfx, uint32(i))
		}
	}
	for _, p := range n.peers {
		if p.full && !p.up {
			p.full = false
		}
		if !p.full {
			continue
		}
		n.nFull++
		for pid, path := range p.routes {
			n.addCount(pid, n.paths[path].origin, 1)
		}
	}
	for pid := range n.prefixes {
		if n.prefixes[pid].refs > 0 {
			n.recompute(uint32(pid))
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tableState = n.tableState
	return nil
}

// prefixKnown tells a decoded 0.0.0.0/0 from an empty slot.
func (t *Table) prefixKnown(pid uint32) bool {
	id, ok := t.pfxIDs[t.prefixes[pid].key]
	return ok && id == pid
}
