// Package gztest compresses and reads back gzipped test data, for the
// tests of readers that must take a gzipped file whole or cut short, and
// of those that read a gzipped sample.
package gztest

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"
)

// Gzip is b compressed by compress/gzip at its default level.
func Gzip(b []byte) []byte {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	return z.Bytes()
}

// ReadFile is the gzipped file at path, decompressed whole; any fault
// fails the test.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}
