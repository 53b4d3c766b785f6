package flows

import "time"

// parseRFC3339 reads the timestamps goflow2's datetime renderers write
// ("2023-04-15T18:28:15.157626Z") without allocating, and falls back to
// time.Parse for any other RFC 3339 spelling. ok is false if neither reads it.
func parseRFC3339(b []byte) (ns int64, ok bool) {
	if ns, ok := fastRFC3339(b); ok {
		return ns, true
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

// fastRFC3339 handles "YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)".
func fastRFC3339(b []byte) (int64, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	hour, ok4 := digits(b[11:13])
	minute, ok5 := digits(b[14:16])
	sec, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, false
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	i := 19
	var frac int64
	if b[i] == '.' {
		i++
		start := i
		scale := int64(100000000)
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if i-start < 9 {
				frac += int64(b[i]-'0') * scale
				scale /= 10
			}
			i++
		}
		if i == start || i-start > 9 {
			return 0, false
		}
	}
	var offset int64
	switch {
	case i == len(b)-1 && b[i] == 'Z':
	case i == len(b)-6 && (b[i] == '+' || b[i] == '-') && b[i+3] == ':':
		oh, ok1 := digits(b[i+1 : i+3])
		om, ok2 := digits(b[i+4 : i+6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, false
		}
		offset = int64(oh*3600 + om*60)
		if b[i] == '-' {
			offset = -offset
		}
	default:
		return 0, false
	}
	secs := daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+sec) - offset
	// Stay well inside the int64 nanosecond range (1678 to 2262); the
	// fallback decides the edges.
	if secs < -9e9 || secs > 9e9 {
		return 0, false
	}
	return secs*1e9 + frac, true
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
// date (Howard Hinnant's algorithm).
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
