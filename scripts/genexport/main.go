// Command genexport writes the observation export that
// scripts/replay-memory.sh replays: time,entity,signal,value every five
// minutes for a number of networks and days, in time order, the same
// values as BenchmarkScale (replay/scale_test.go) generates in memory. A
// name ending in .gz is compressed as it is written (fastest level), so
// that two weeks of 100,000 series (403 million lines, 18 GB as text) take
// about a tenth of that on disk.
//
//	go run ./scripts/genexport -series 100000 -days 14 -o /tmp/long.csv.gz
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
)

func main() {
	series := flag.Int("series", 1000, "networks (asn:64512 onwards)")
	days := flag.Int("days", 1, "days of five-minute buckets")
	signal := flag.String("signal", "scale_traffic_bytes", "signal name (declared in replay/testdata/scale-traffic.yaml)")
	out := flag.String("o", "-", "output file; .gz compresses")
	flag.Parse()
	if err := write(*out, *series, *days, *signal); err != nil {
		fmt.Fprintln(os.Stderr, "genexport:", err)
		os.Exit(1)
	}
}

func write(path string, series, days int, signal string) (err error) {
	var w io.Writer = os.Stdout
	if path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		w = f
	}
	if strings.HasSuffix(path, ".gz") {
		zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := zw.Close(); err == nil {
				err = cerr
			}
		}()
		w = zw
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString("time,entity,signal,value\n")
	const t0 = 1700006400 // a midnight, as in BenchmarkScale
	line := make([]byte, 0, 64)
	for d := range days {
		for b := range 288 {
			t := int64(t0 + d*86400 + b*300)
			for s := range series {
				line = strconv.AppendInt(line[:0], t, 10)
				line = append(line, ",asn:"...)
				line = strconv.AppendInt(line, int64(64512+s), 10)
				line = append(append(append(line, ','), signal...), ',')
				line = strconv.AppendInt(line, int64(1000+(b*7+s)%13), 10)
				line = append(line, '\n')
				if _, err := bw.Write(line); err != nil {
					return err
				}
			}
		}
	}
	return bw.Flush()
}
