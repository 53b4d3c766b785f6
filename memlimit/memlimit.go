// Package memlimit sets the Go runtime's soft memory limit from an
// operator's setting ("6GiB", "75%"), so that what outagewatch must be
// provisioned for is the limit, not twice the live heap.
//
// Go's collector lets the heap grow to twice what it kept after the last
// collection (GOGC=100) before it collects again: a process whose series
// hold 4 GiB peaks near 8 GiB. Under a limit the collector runs earlier
// instead, as the total nears the limit, so the peak stays at the limit
// for the price of more collections. A limit under the live heap cannot
// be kept: the runtime then spends up to half the processor on collecting
// and the process grows past the limit anyway, so size the limit from the
// per-series figure (README, "Performance") with some room above it.
package memlimit

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"

	automemlimit "github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/dustin/go-humanize"
)

// Limit is a parsed setting: Bytes, or Percent of the memory the process
// may use (its cgroup's limit, else the machine's); zero for none.
type Limit struct {
	Bytes   uint64
	Percent float64
}

// Parse reads a setting: a size ("6GiB", "6 GB", "6442450944"), a share
// of the memory available ("75%"), or "" / "off" for none.
func Parse(s string) (Limit, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "off" {
		return Limit{}, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v > 0 && v <= 100) {
			return Limit{}, fmt.Errorf("memory limit %q: a share must be over 0 %% and at most 100 %%", s)
		}
		return Limit{Percent: v}, nil
	}
	b, err := humanize.ParseBytes(s)
	if err != nil {
		return Limit{}, fmt.Errorf("memory limit %q: want a size such as 6GiB, or a share such as 75%%", s)
	}
	if b == 0 || b > math.MaxInt64 {
		return Limit{}, fmt.Errorf("memory limit %q: out of range (\"off\" sets none)", s)
	}
	return Limit{Bytes: b}, nil
}

// IsZero reports whether the setting asks for no limit.
func (l Limit) IsZero() bool { return l.Bytes == 0 && l.Percent == 0 }

// Resolve returns the limit in bytes; a share is taken of available, the
// memory the process may use.
func (l Limit) Resolve(available uint64) int64 {
	if l.Percent > 0 {
		return int64(float64(available) * l.Percent / 100)
	}
	return int64(l.Bytes)
}

// Apply sets the runtime's soft memory limit and returns it; a zero Limit
// leaves the runtime's own (GOMEMLIMIT, or none) alone and returns it.
func Apply(l Limit) (int64, error) {
	if l.IsZero() {
		return debug.SetMemoryLimit(-1), nil
	}
	var avail uint64
	if l.Percent > 0 {
		var err error
		if avail, err = Available(); err != nil {
			return 0, fmt.Errorf("memory limit %g%%: %w", l.Percent, err)
		}
	}
	n := l.Resolve(avail)
	debug.SetMemoryLimit(n)
	return n, nil
}

// Available is the memory this process may use: its cgroup's limit
// (v1 or v2, found through /proc/self/cgroup, as a container runtime sets
// it) when one is set, else the machine's memory.
func Available() (uint64, error) {
	n, err := automemlimit.ApplyFallback(automemlimit.FromCgroup, automemlimit.FromSystem)()
	if err != nil {
		return 0, fmt.Errorf("neither a cgroup limit nor the machine's memory could be read: %w", err)
	}
	return n, nil
}
