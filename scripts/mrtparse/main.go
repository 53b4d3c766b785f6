// Command mrtparse is the yardstick of scripts/replay-memory.sh: gobgp's
// own MRT parse of a file, record by record, with nothing kept and one
// buffer reused: the least a Go program that reads MRT with gobgp takes.
// What a replay of the same file needs beyond this is outagewatch's.
//
//	go run ./scripts/mrtparse FILE.gz
package main

import (
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/osrg/gobgp/v3/pkg/packet/mrt"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mrtparse FILE[.gz|.bz2]")
		os.Exit(2)
	}
	n, err := parse(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mrtparse:", err)
		os.Exit(1)
	}
	fmt.Println(n, "records")
}

func parse(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 1<<16)
	switch {
	case strings.HasSuffix(path, ".gz"):
		if r, err = gzip.NewReader(r); err != nil {
			return 0, err
		}
	case strings.HasSuffix(path, ".bz2"):
		r = bzip2.NewReader(r)
	}
	r = bufio.NewReaderSize(r, 1<<16)
	hdr := make([]byte, mrt.MRT_COMMON_HEADER_LEN)
	var body []byte // reused: nothing is kept of a record once parsed
	n := 0
	for ; ; n++ {
		if _, err := io.ReadFull(r, hdr); err == io.EOF {
			return n, nil
		} else if err != nil {
			return n, fmt.Errorf("record %d: %w", n, err)
		}
		h := &mrt.MRTHeader{}
		if err := h.DecodeFromBytes(hdr); err != nil {
			return n, fmt.Errorf("record %d: %w", n, err)
		}
		if cap(body) < int(h.Len) {
			body = make([]byte, h.Len)
		}
		body = body[:h.Len]
		if _, err := io.ReadFull(r, body); err != nil {
			return n, fmt.Errorf("record %d: %w", n, err)
		}
		if _, err := mrt.ParseMRTBody(h, body); err != nil {
			return n, fmt.Errorf("record %d: %w", n, err)
		}
	}
}
