// Package mapdata reads the network metadata operators already have (AS
// name lists, prefix-to-AS tables, RIR delegation statistics, MaxMind-format
// databases, MRT RIB dumps) into a netmap.Map, which `outagewatch netmap
// build` writes as the mapping file the pipeline loads.
//
// Every reader takes the whole file and keeps going past a bad line: the
// line is counted, the first few reasons are kept with their line numbers,
// and everything else in the file still counts. Only I/O errors stop a
// read. When several sources give the same key, the one read last wins, so
// the order on the command line says which to trust.
package mapdata

import (
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"unicode/utf8"

	"go4.org/netipx"

	"github.com/outagewatch/outagewatch/netmap"
)

// Stats says what one source gave.
type Stats struct {
	Format string
	// Lines is the number of data lines (or records) read; Skipped of them
	// did not parse.
	Lines, Skipped int
	// What the source set: AS names, AS countries, prefix origins, prefix
	// countries and prefix regions.
	Names, Countries, Origins, PrefixCountries, Regions int
	// Errors holds the first reasons lines were skipped, "line N: reason".
	Errors []string
	// Notes are facts about the file worth logging (its date, a summary
	// count that does not match).
	Notes []string
}

const maxErrors = 5

func (s *Stats) skip(line int, format string, args ...any) {
	s.Skipped++
	if len(s.Errors) < maxErrors {
		s.Errors = append(s.Errors, fmt.Sprintf("line %d: ", line)+fmt.Sprintf(format, args...))
	}
}

// Reader reads one source format into m.
type Reader func(r io.Reader, m *netmap.Map) (Stats, error)

// Formats are the readers by the name `netmap build` uses for them.
var Formats = map[string]Reader{
	"asnames":   ReadASNames,
	"as2org":    ReadAS2Org,
	"pfx2as":    ReadPfx2AS,
	"ip2asn":    ReadIP2ASN,
	"delegated": ReadDelegated,
}

// Open opens a file, decompressing gzip or bzip2 by their magic bytes.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	magic, _ := br.Peek(3)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return readCloser{zr, f}, nil
	case len(magic) == 3 && string(magic) == "BZh":
		return readCloser{bzip2.NewReader(br), f}, nil
	}
	return readCloser{br, f}, nil
}

type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// lines calls fn for each line without its end, numbered from 1; a UTF-8
// byte-order mark is dropped from the first. Lines longer than 1 MiB are
// an error: no metadata line is that long.
func lines(r io.Reader, fn func(n int, line string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if n == 1 {
			line = trimBOM(line)
		}
		fn(n, line)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", n+1, err)
	}
	return nil
}

// latin1 returns s as UTF-8. Valid UTF-8 stays as it is; anything else is
// read as ISO-8859-1, the encoding of older whois-derived name lists, in
// which every byte is the code point of the same value.
func latin1(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(rune(s[i]))
	}
	return b.String()
}

// countryCode returns cc upper-cased if it is a two-letter code that names
// a country; "ZZ", "--", "None" and empty say "unknown".
func countryCode(cc string) (string, bool) {
	if len(cc) != 2 {
		return "", false
	}
	cc = strings.ToUpper(cc)
	if cc[0] < 'A' || cc[0] > 'Z' || cc[1] < 'A' || cc[1] > 'Z' || cc == "ZZ" {
		return "", false
	}
	return cc, true
}

// orgName returns the organisation part of a whois-style AS description,
// "Level 3 Communications, Inc." of "LVLT-1 - Level 3 Communications, Inc.",
// or the whole description when it has no handle.
func orgName(desc string) string {
	desc = strings.TrimSpace(desc)
	if h, org, ok := strings.Cut(desc, " - "); ok && !strings.Contains(h, " ") && strings.TrimSpace(org) != "" {
		return strings.TrimSpace(org)
	}
	return desc
}

// rangePrefixes returns the prefixes that exactly cover first..last.
func rangePrefixes(first, last netip.Addr) []netip.Prefix {
	r := netipx.IPRangeFrom(first, last)
	if !r.IsValid() {
		return nil
	}
	return r.Prefixes()
}

// splitTab splits s on tabs into at most n fields.
func splitTab(s string, n int) []string { return strings.SplitN(s, "\t", n) }

// trimBOM drops a UTF-8 byte-order mark from the first line.
func trimBOM(s string) string { return strings.TrimPrefix(s, "\ufeff") }
