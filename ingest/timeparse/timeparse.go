// Package timeparse reads the event times of the JSON feeds (RFC 3339 text
// and decimal Unix seconds) without allocating: time.Parse needs a string,
// and the decoders promise zero allocations per record. Each feed accepts a
// different set of spellings and its own range of years, so these functions
// return seconds and nanoseconds apart and leave range checks to the caller.
package timeparse

// Syntax names the RFC 3339 spellings a feed accepts beyond the strict
// "YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)" with one to nine fraction
// digits, which time.Parse also reads.
type Syntax uint8

const (
	// LowerCase accepts 't' between date and time and 'z' for UTC, as
	// RFC 3339 allows.
	LowerCase Syntax = 1 << iota
	// Space accepts a space between date and time (RFC 3339, section 5.6 note).
	Space
	// Comma accepts ',' before the fraction (ISO 8601).
	Comma
	// LongFraction accepts more than nine fraction digits; those past
	// nanoseconds are dropped.
	LongFraction
)

// RFC3339 parses b as an RFC 3339 timestamp in the spellings syn allows and
// returns its Unix time as whole seconds and nanoseconds (0 to 999999999).
// Any four-digit year is read, so sec*1e9+nsec overflows past 2262; the
// caller checks sec against its own range.
func RFC3339(b []byte, syn Syntax) (sec, nsec int64, ok bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[13] != ':' || b[16] != ':' ||
		b[10] != 'T' && !(b[10] == 't' && syn&LowerCase != 0 || b[10] == ' ' && syn&Space != 0) {
		return 0, 0, false
	}
	hi, ok1 := two(b[0], b[1])
	lo, ok2 := two(b[2], b[3])
	year := hi*100 + lo
	month, ok3 := two(b[5], b[6])
	day, ok4 := two(b[8], b[9])
	hour, ok5 := two(b[11], b[12])
	minute, ok6 := two(b[14], b[15])
	second, ok7 := two(b[17], b[18])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
		return 0, 0, false
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 59 {
		return 0, 0, false
	}
	i := 19
	if b[i] == '.' || b[i] == ',' && syn&Comma != 0 {
		start := i + 1
		nsec, i = fraction(b, start)
		if i == start || i-start > 9 && syn&LongFraction == 0 {
			return 0, 0, false
		}
	}
	var offset int64
	switch {
	case i == len(b)-1 && (b[i] == 'Z' || b[i] == 'z' && syn&LowerCase != 0):
	case i == len(b)-6 && (b[i] == '+' || b[i] == '-') && b[i+3] == ':':
		oh, ok1 := two(b[i+1], b[i+2])
		om, ok2 := two(b[i+4], b[i+5])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, 0, false
		}
		offset = int64(oh*3600 + om*60)
		if b[i] == '-' {
			offset = -offset
		}
	default:
		return 0, 0, false
	}
	sec = daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+second) - offset
	return sec, nsec, true
}

// UnixSeconds parses decimal Unix seconds with an optional fraction
// ("1714291200", "1714291200.25") exactly: a float64 would round the
// fraction (1714291200.25 to ...249999872 ns). Up to eleven integer digits
// (year 5138) are read and fraction digits past nanoseconds are dropped.
// Signs, exponents and an empty fraction are refused: no feed writes them,
// and they hide mistakes such as milliseconds sent as seconds.
func UnixSeconds(b []byte) (sec, nsec int64, ok bool) {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if i >= 11 {
			return 0, 0, false
		}
		sec = sec*10 + int64(b[i]-'0')
		i++
	}
	if i == 0 {
		return 0, 0, false
	}
	if i < len(b) && b[i] == '.' {
		start := i + 1
		if nsec, i = fraction(b, start); i == start {
			return 0, 0, false
		}
	}
	if i != len(b) {
		return 0, 0, false
	}
	return sec, nsec, true
}

// fraction reads the digits of a decimal fraction from b[i] on as
// nanoseconds, dropping those past the ninth, and returns where they end.
func fraction(b []byte, i int) (nsec int64, end int) {
	start := i
	scale := int64(1e8)
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if i-start < 9 {
			nsec += int64(b[i]-'0') * scale
			scale /= 10
		}
		i++
	}
	return nsec, i
}

// two reads two decimal digits; fixed fields read this way, without a loop,
// make the parse faster than the per-package parsers it replaced.
func two(c1, c2 byte) (int, bool) {
	d1, d2 := c1-'0', c2-'0'
	return int(d1)*10 + int(d2), d1 <= 9 && d2 <= 9
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm): plain arithmetic, where time.Date
// would normalise and look up the location. y is a four-digit year, so
// y-1 >= -400 and shifting it by one era keeps the division non-negative.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := (y+400)/400 - 1
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
