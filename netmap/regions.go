package netmap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"strings"
	"sync"
)

// regions.tsv.gz is the ISO 3166-2 subdivision list ("PT-11<TAB>Lisboa"),
// 5,127 codes, from Debian iso-codes 4.15.0
// (/usr/share/iso-codes/json/iso_3166-2.json, LGPL-2.1+), gzipped: read
// once, the first time an alert names a region.
//
//go:embed regions.tsv.gz
var regionsGz []byte

var (
	regionsOnce sync.Once
	regionNames map[string]string
)

// RegionName returns the name of an ISO 3166-2 code ("PT-11" → "Lisboa"),
// or "" when the table does not know it.
func RegionName(code string) string {
	regionsOnce.Do(func() {
		regionNames = map[string]string{}
		zr, err := gzip.NewReader(bytes.NewReader(regionsGz))
		if err != nil {
			return
		}
		sc := bufio.NewScanner(zr)
		for sc.Scan() {
			if c, n, ok := strings.Cut(sc.Text(), "\t"); ok {
				regionNames[c] = n
			}
		}
	})
	return regionNames[strings.ToUpper(code)]
}
