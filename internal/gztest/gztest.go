// Package gztest compresses test data as gzip writes it, for the tests of
// readers that must take a gzipped file whole or cut short.
package gztest

import (
	"bytes"
	"compress/gzip"
)

// Gzip is b compressed by compress/gzip at its default level.
func Gzip(b []byte) []byte {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	return z.Bytes()
}
