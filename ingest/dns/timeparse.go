package dnsin

// parseRFC3339 parses an RFC 3339 timestamp (with 'T' or 't' or a space
// between date and time, a fraction of up to nine digits, and 'Z' or a
// numeric offset) into Unix nanoseconds without allocating, which
// time.Parse does for numeric offsets.
func parseRFC3339(s []byte) (int64, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':' {
		return 0, false
	}
	if s[10] != 'T' && s[10] != 't' && s[10] != ' ' {
		return 0, false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	min, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, false
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || min > 59 || sec > 59 {
		return 0, false
	}
	i := 19
	var nsec int64
	if s[i] == '.' || s[i] == ',' {
		i++
		start := i
		scale := int64(1e8)
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if i-start < 9 {
				nsec += int64(s[i]-'0') * scale
				scale /= 10
			}
			i++
		}
		if i == start || i-start > 9 || i >= len(s) {
			return 0, false
		}
	}
	var offset int64
	switch s[i] {
	case 'Z', 'z':
		i++
	case '+', '-':
		if len(s)-i != 6 || s[i+3] != ':' {
			return 0, false
		}
		oh, ok1 := digits(s[i+1 : i+3])
		om, ok2 := digits(s[i+4 : i+6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, false
		}
		offset = int64(oh*3600 + om*60)
		if s[i] == '-' {
			offset = -offset
		}
		i += 6
	default:
		return 0, false
	}
	if i != len(s) {
		return 0, false
	}
	days := daysFromCivil(year, month, day)
	secs := days*86400 + int64(hour*3600+min*60+sec) - offset
	return secs*1e9 + nsec, true
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

func daysIn(month, year int) int {
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

// parseUnixSeconds parses decimal Unix seconds with an optional fraction
// ("1714291200", "1714291200.25") exactly into nanoseconds. Exponents and
// signs are refused: no resolver writes them, and they hide mistakes.
func parseUnixSeconds(s []byte) (int64, bool) {
	i := 0
	var sec int64
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		if i >= 11 { // past year 5138
			return 0, false
		}
		sec = sec*10 + int64(s[i]-'0')
		i++
	}
	if i == 0 {
		return 0, false
	}
	var nsec int64
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		scale := int64(1e8)
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if i-start < 9 {
				nsec += int64(s[i]-'0') * scale
				scale /= 10
			}
			i++
		}
		if i == start {
			return 0, false
		}
	}
	if i != len(s) {
		return 0, false
	}
	return sec*1e9 + nsec, true
}
