package flows

import (
	"time"

	"github.com/outagewatch/outagewatch/ingest/timeparse"
)

// parseRFC3339 reads the timestamps goflow2's datetime renderers write
// ("2023-04-15T18:28:15.157626Z") without allocating, and falls back to
// time.Parse for any other RFC 3339 spelling. ok is false if neither reads it.
func parseRFC3339(b []byte) (ns int64, ok bool) {
	// The fast path stays well inside the int64 nanosecond range (1678 to
	// 2262); the fallback decides the edges.
	if sec, nsec, ok := timeparse.RFC3339(b, 0); ok && sec >= -9e9 && sec <= 9e9 {
		return sec*1e9 + nsec, true
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return 0, false
	}
	return unixNano(t)
}

// unixNano returns t in Unix nanoseconds if it fits in an int64.
func unixNano(t time.Time) (int64, bool) {
	const minSec, maxSec = -9223372036, 9223372035
	if s := t.Unix(); s < minSec || s > maxSec {
		return 0, false
	}
	return t.UnixNano(), true
}
