// Package replay drives the pipeline from files and rendered fixtures
// instead of Kafka. Every input becomes a time-ordered source of records;
// a k-way merge interleaves them by event time, as BGP, flows and DNS
// interleaved when they were live, and the event time of the merged stream
// drives the watermark, so three weeks replay in seconds and always give
// the same alerts.
package replay

import (
	"container/heap"
	"fmt"
	"strings"

	"github.com/outagewatch/outagewatch/ingest"
)

// Source yields records in event-time order; Next returns nil at the end.
type Source interface {
	Next() (*ingest.Record, error)
	Name() string
}

// SliceSource is a source over records already in memory, sorted by time.
type SliceSource struct {
	name string
	recs []*ingest.Record
	i    int
}

// NewSliceSource returns a source over recs, which must be time-ordered.
// The source owns recs: it clears each entry as it hands the record out, so
// that a long replay does not keep what it has done in memory.
func NewSliceSource(name string, recs []*ingest.Record) *SliceSource {
	return &SliceSource{name: name, recs: recs}
}

// Next returns the next record.
func (s *SliceSource) Next() (*ingest.Record, error) {
	if s.i >= len(s.recs) {
		return nil, nil
	}
	r := s.recs[s.i]
	s.recs[s.i] = nil // let the GC take what has been replayed
	s.i++
	return r, nil
}

// Name names the source in messages.
func (s *SliceSource) Name() string { return s.name }

// Len is the number of records in the source.
func (s *SliceSource) Len() int { return len(s.recs) }

// Merge is a k-way merge of sources by record time. Ties go to the source
// listed first, so the merge is deterministic.
type Merge struct {
	h mergeHeap
}

type mergeItem struct {
	rec *ingest.Record
	src Source
	idx int
}

type mergeHeap []mergeItem

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if h[i].rec.Time != h[j].rec.Time {
		return h[i].rec.Time < h[j].rec.Time
	}
	return h[i].idx < h[j].idx
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(mergeItem)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// NewMerge primes a merge over srcs.
func NewMerge(srcs ...Source) (*Merge, error) {
	m := &Merge{}
	for i, s := range srcs {
		r, err := s.Next()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name(), err)
		}
		if r != nil {
			m.h = append(m.h, mergeItem{r, s, i})
		}
	}
	heap.Init(&m.h)
	return m, nil
}

// Next returns the earliest pending record, nil at the end.
func (m *Merge) Next() (*ingest.Record, error) {
	r, _, err := m.next()
	return r, err
}

// next is Next that also says which source the record came from.
func (m *Merge) next() (*ingest.Record, Source, error) {
	if len(m.h) == 0 {
		return nil, nil, nil
	}
	top := &m.h[0]
	out, src := top.rec, top.src
	r, err := top.src.Next()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", top.src.Name(), err)
	}
	if r == nil {
		heap.Pop(&m.h)
	} else {
		top.rec = r
		heap.Fix(&m.h, 0)
	}
	return out, src, nil
}

// Name names the merge.
func (m *Merge) Name() string {
	var names []string
	for _, it := range m.h {
		names = append(names, it.src.Name())
	}
	return "merge(" + strings.Join(names, ",") + ")"
}

// Collect merges srcs by event time and returns every record, in order:
// for tests and tools that want a rendered fixture as one slice.
func Collect(srcs ...Source) ([]*ingest.Record, error) {
	m, err := NewMerge(srcs...)
	if err != nil {
		return nil, err
	}
	var recs []*ingest.Record
	for {
		r, err := m.Next()
		if err != nil || r == nil {
			return recs, err
		}
		recs = append(recs, r)
	}
}
