package dcload

import (
	"math"
	"strings"
	"testing"
)

// edge_error_share is read as a ratio, is a measurement on its own, and a
// percentage or a negative value is refused.
func TestEdgeErrorShare(t *testing.T) {
	d := NewDecoder()
	l, err := d.Parse([]byte(`{"time": 1745834100, "dc": "AKL", "edge_error_share": 0.25}`))
	if err != nil || l.ErrShare != 0.25 || !math.IsNaN(l.CPUms) {
		t.Fatalf("%+v %v", l, err)
	}
	l, err = d.Parse([]byte(`{"time": 1745834100, "dc": "AKL", "cpu_util": 0.5}`))
	if err != nil || !math.IsNaN(l.ErrShare) {
		t.Fatalf("absent: %+v %v", l, err)
	}
	for _, bad := range []string{`{"time": 1, "dc": "AKL", "edge_error_share": 5}`, `{"time": 1, "dc": "AKL", "edge_error_share": -0.1}`} {
		if _, err := d.Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "edge_error_share") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
