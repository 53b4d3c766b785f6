package service

import (
	"slices"
	"testing"

	"github.com/segmentio/kafka-go"
)

// The queue gives the records of its batches in order, across batch
// boundaries and empty batches, and lets each batch go once emptied.
func TestMsgQueue(t *testing.T) {
	batch := func(offs ...int64) []kafka.Message {
		var b []kafka.Message
		for _, o := range offs {
			b = append(b, kafka.Message{Offset: o})
		}
		return b
	}
	var q msgQueue
	if q.front() != nil || q.len() != 0 {
		t.Fatal("an empty queue has a front")
	}
	q.push(batch(1, 2))
	q.push(nil)
	q.push(batch(3))
	q.push(batch(4, 5, 6))
	var got []int64
	for m := q.front(); m != nil; m = q.front() {
		got = append(got, m.Offset)
		q.pop()
		if len(got) == 2 && (q.len() != 4 || len(q.batches) != 2) {
			t.Fatalf("after the first batch: %d records in %d batches, want 4 in 2", q.len(), len(q.batches))
		}
		if len(got) == 4 {
			q.push(batch(7))
		}
	}
	if want := []int64{1, 2, 3, 4, 5, 6, 7}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if q.len() != 0 || q.batches != nil {
		t.Fatalf("drained queue holds %d records, %d batches", q.len(), len(q.batches))
	}
}
