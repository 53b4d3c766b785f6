package pipeline

import (
	"container/heap"

	"github.com/outagewatch/outagewatch/ingest"
)

// held is the queue of records of ordered streams (see
// ingest.RegisterOrdered), by event time, then by arrival, waiting for the
// bucket they belong to to close.
type held struct {
	recs []heldRecord
	seq  uint64
}

// heldRecord points to its record: the queue's array, which grows by
// copying, then moves 16 bytes a record rather than the whole record (a
// five-minute RIS update file is some 17,000 of them).
type heldRecord struct {
	Rec *ingest.Record
	Seq uint64
}

func (h *held) Len() int { return len(h.recs) }
func (h *held) Less(i, j int) bool {
	a, b := &h.recs[i], &h.recs[j]
	if a.Rec.Time != b.Rec.Time {
		return a.Rec.Time < b.Rec.Time
	}
	return a.Seq < b.Seq
}
func (h *held) Swap(i, j int) { h.recs[i], h.recs[j] = h.recs[j], h.recs[i] }
func (h *held) Push(x any)    { h.recs = append(h.recs, x.(heldRecord)) }
func (h *held) Pop() any {
	n := len(h.recs) - 1
	x := h.recs[n]
	h.recs[n] = heldRecord{}
	h.recs = h.recs[:n]
	return x
}

// hold keeps a copy of rec, headers included (a dead letter keeps them):
// a live source may reuse its buffers.
func (h *held) hold(rec *ingest.Record) {
	r := new(ingest.Record)
	*r = *rec
	r.Value = append([]byte(nil), rec.Value...)
	r.Key = append([]byte(nil), rec.Key...)
	r.Headers = nil
	for _, hd := range rec.Headers {
		r.Headers = append(r.Headers, ingest.Header{Key: hd.Key, Value: append([]byte(nil), hd.Value...)})
	}
	h.seq++
	heap.Push(h, heldRecord{Rec: r, Seq: h.seq})
}

// earliest is the event time of the first held record.
func (h *held) earliest() (int64, bool) {
	if len(h.recs) == 0 {
		return 0, false
	}
	return h.recs[0].Rec.Time, true
}

// release calls fn for every held record before end, in order.
func (h *held) release(end int64, fn func(*ingest.Record)) {
	for len(h.recs) > 0 && h.recs[0].Rec.Time < end {
		r := heap.Pop(h).(heldRecord)
		fn(r.Rec)
	}
}
