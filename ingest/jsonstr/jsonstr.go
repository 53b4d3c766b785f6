// Package jsonstr resolves the escapes of a JSON string, for the hand
// written JSON scanners of the flow, DNS query log and measurement
// decoders. Each scans its own lines fast and without reflection; what a
// string's escapes mean is the same for all three, and is here once, as
// encoding/json reads it.
package jsonstr

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Unescape appends to dst the content s of a JSON string (the bytes
// between its quotes) with its escapes resolved, and reports whether
// every escape was one JSON has. As in encoding/json, a surrogate pair
// of \u escapes is one rune, and a lone surrogate is U+FFFD. Bytes that
// are not escapes are copied as they are: whether s holds control
// characters or invalid UTF-8 is the scanner's to say.
func Unescape(dst, s []byte) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		if i >= len(s) {
			return dst, false
		}
		switch s[i] {
		case '"', '\\', '/':
			dst = append(dst, s[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(s[i+1:])
			if !ok {
				return dst, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				// The low half must follow at once; anything else leaves
				// the high half alone, and it reads U+FFFD.
				d := utf8.RuneError
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if r2, ok := hex4(s[i+3:]); ok {
						if d = utf16.DecodeRune(r, r2); d != utf8.RuneError {
							i += 6
						}
					}
				}
				r = d
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, false
		}
	}
	return dst, true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
