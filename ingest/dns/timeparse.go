package dnsin

import "github.com/outagewatch/outagewatch/ingest/timeparse"

// querylogSyntax is what resolvers write in their query logs: RFC 3339
// with 'T', 't' or a space between date and time, ',' or '.' before a
// fraction of up to nine digits, and 'Z', 'z' or a numeric offset.
const querylogSyntax = timeparse.LowerCase | timeparse.Space | timeparse.Comma

// parseRFC3339 parses a query-log timestamp into Unix nanoseconds without
// allocating, which time.Parse does for numeric offsets.
func parseRFC3339(s []byte) (int64, bool) {
	sec, nsec, ok := timeparse.RFC3339(s, querylogSyntax)
	return sec*1e9 + nsec, ok
}

// parseUnixSeconds parses decimal Unix seconds with an optional fraction
// ("1714291200", "1714291200.25") exactly into nanoseconds.
func parseUnixSeconds(s []byte) (int64, bool) {
	sec, nsec, ok := timeparse.UnixSeconds(s)
	return sec*1e9 + nsec, ok
}

// parseTimeText reads a time written as a JSON string: RFC 3339, or Unix
// seconds that a writer quoted.
func parseTimeText(s []byte) (int64, bool) {
	if t, ok := parseRFC3339(s); ok {
		return t, true
	}
	return parseUnixSeconds(s)
}
