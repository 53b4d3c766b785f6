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
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[13] != ':' || b[16] != ':' {
		return 0, 0, false
	}
	switch b[10] {
	case 'T':
	case 't':
		if syn&LowerCase == 0 {
			return 0, 0, false
		}
	case ' ':
		if syn&Space == 0 {
			return 0, 0, false
		}
	default:
		return 0, 0, false
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	hour, ok4 := digits(b[11:13])
	minute, ok5 := digits(b[14:16])
	second, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, 0, false
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 59 {
		return 0, 0, false
	}
	i := 19
	if b[i] == '.' || b[i] == ',' && syn&Comma != 0 {
		i++
		start := i
		scale := int64(1e8)
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if i-start < 9 {
				nsec += int64(b[i]-'0') * scale
				scale /= 10
			}
			i++
		}
		if i == start || i-start > 9 && syn&LongFraction == 0 {
			return 0, 0, false
		}
	}
	var offset int64
	switch {
	case i == len(b)-1 && (b[i] == 'Z' || b[i] == 'z' && syn&LowerCase != 0):
	case i == len(b)-6 && (b[i] == '+' || b[i] == '-') && b[i+3] == ':':
		oh, ok1 := digits(b[i+1 : i+3])
		om, ok2 := digits(b[i+4 : i+6])
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
		i++
		start := i
		scale := int64(1e8)
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if i-start < 9 {
				nsec += int64(b[i]-'0') * scale
				scale /= 10
			}
			i++
		}
		if i == start {
			return 0, 0, false
		}
	}
	if i != len(b) {
		return 0, 0, false
	}
	return sec, nsec, true
}

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
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
// would normalise and look up the location.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
