package detectors

import "testing"

// A stand-in is remembered for a window and no longer: the bucket a
// window later has the same bit, and its own reading clears it. A mask
// restored for a window of another length starts afresh rather than
// alias.
func TestHeldMask(t *testing.T) {
	const w = int64(300e9)
	day := Duration(24 * 3600e9)
	var h heldMask
	h.mark(10*w, w, day, false)
	if h.Bits != nil {
		t.Fatal("a series with no stand-in carries a mask")
	}
	h.mark(10*w, w, day, true)
	if len(h.Bits) != 5 || !h.has(10*w, w) || h.has(11*w, w) || h.has(9*w, w) {
		t.Fatalf("after one stand-in: %v", h.Bits)
	}
	later := 10*w + 320*w // the same bit, 320 buckets on (the mask holds 5 × 64)
	if !h.has(later, w) {
		t.Fatal("the bucket 320 on reads another bit")
	}
	h.mark(later, w, day, false)
	if h.has(later, w) || h.has(10*w, w) {
		t.Fatal("a reading did not clear its bucket's bit")
	}
	h.mark(12*w, w, day, true)
	h.mark(13*w, w, 2*day, false)
	if len(h.Bits) != 9 || h.has(12*w, w) {
		t.Fatalf("a mask for a window twice as long: %d words, bucket 12 held %v", len(h.Bits), h.has(12*w, w))
	}
	var nilMask *heldMask
	if nilMask.has(0, w) {
		t.Fatal("a nil mask holds a stand-in")
	}
}
