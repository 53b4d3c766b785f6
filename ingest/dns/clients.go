package dnsin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/axiomhq/hyperloglog"
	metro "github.com/dgryski/go-metro"

	"github.com/outagewatch/outagewatch/obs"
)

// ClientHash is the hash of a client address that Observation.Hash carries.
// IPv4 and IPv4-mapped IPv6 forms of one address hash alike, and the zone is
// ignored, so one client is one item however the resolver wrote it.
func ClientHash(a netip.Addr, seed uint64) uint64 {
	if seed == 0 {
		seed = DefaultClientHashSeed
	}
	b := a.Unmap().WithZone("").As16()
	return metro.Hash64(b[:], seed)
}

// ClientsAccumulator estimates the distinct clients of one open bucket with
// a HyperLogLog sketch (precision 14: 0.8 % standard error). The sketch
// exists only while the bucket is open: once the aggregator has read
// Result, Reset drops it, so a closed bucket keeps only its estimate.
//
// It sees only hashes of client addresses, never the addresses.
type ClientsAccumulator struct {
	sk *hyperloglog.Sketch
	n  int64
}

// NewClientsAccumulator returns an empty accumulator.
func NewClientsAccumulator() *ClientsAccumulator { return &ClientsAccumulator{} }

// Add inserts the client hash of o.
func (a *ClientsAccumulator) Add(o *obs.Observation) {
	if a.sk == nil {
		a.sk = hyperloglog.New14()
	}
	a.sk.InsertHash(o.Hash)
	a.n++
}

// Result returns the estimated number of distinct clients and the number of
// observations added.
func (a *ClientsAccumulator) Result() (float64, int64) {
	if a.sk == nil {
		return 0, a.n
	}
	return float64(a.sk.Estimate()), a.n
}

// Reset empties the accumulator for the next bucket and lets the sketch go:
// a busy entity's sketch is dense (16 KiB), and a pooled accumulator must
// not keep that for a bucket that is closed.
func (a *ClientsAccumulator) Reset() {
	a.n = 0
	a.sk = nil
}

var _ obs.Mergeable = (*ClientsAccumulator)(nil)

// Merge adds the sketch and count of other, a *ClientsAccumulator holding a
// partial bucket of the same signal and entity from another partition or
// instance. Both must come from decoders with the same ClientHashSeed.
func (a *ClientsAccumulator) Merge(other obs.Accumulator) error {
	o, ok := other.(*ClientsAccumulator)
	if !ok {
		return fmt.Errorf("dns_clients: merge %T into a clients accumulator", other)
	}
	return a.merge(o)
}

func (a *ClientsAccumulator) merge(other *ClientsAccumulator) error {
	if other == nil || other.sk == nil {
		if other != nil {
			a.n += other.n
		}
		return nil
	}
	if a.sk == nil {
		a.sk = hyperloglog.New14()
	}
	if err := a.sk.Merge(other.sk); err != nil {
		return fmt.Errorf("dns_clients: merge sketch: %w", err)
	}
	a.n += other.n
	return nil
}

// clientsVersion is the first byte of the marshalled form.
const clientsVersion = 1

// MarshalBinary encodes the accumulator for a checkpoint or a partial bucket
// sent to another instance: a version byte, the observation count (uvarint)
// and the sketch in hyperloglog's own binary form.
func (a *ClientsAccumulator) MarshalBinary() ([]byte, error) {
	return a.AppendBinary(nil)
}

// AppendBinary appends the MarshalBinary form to b.
func (a *ClientsAccumulator) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, clientsVersion)
	b = binary.AppendUvarint(b, uint64(a.n))
	if a.sk == nil {
		return b, nil
	}
	b, err := a.sk.AppendBinary(b)
	if err != nil {
		return nil, fmt.Errorf("dns_clients: marshal sketch: %w", err)
	}
	return b, nil
}

// UnmarshalBinary replaces the accumulator with a MarshalBinary form.
func (a *ClientsAccumulator) UnmarshalBinary(b []byte) error {
	if len(b) == 0 {
		return errors.New("dns_clients: empty accumulator")
	}
	if b[0] != clientsVersion {
		return fmt.Errorf("dns_clients: accumulator version %d, want %d", b[0], clientsVersion)
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || n > 1<<62 {
		return errors.New("dns_clients: bad observation count")
	}
	rest := b[1+k:]
	if len(rest) == 0 {
		a.sk, a.n = nil, int64(n)
		return nil
	}
	sk := hyperloglog.New14()
	if err := sk.UnmarshalBinary(rest); err != nil {
		return fmt.Errorf("dns_clients: unmarshal sketch: %w", err)
	}
	a.sk, a.n = sk, int64(n)
	return nil
}
