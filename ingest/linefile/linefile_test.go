package linefile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	var got []string
	var nums []int64
	err := Scan(strings.NewReader(" a \n\n\tb\r\nc"), 1<<10, func(n int64, line []byte) error {
		nums = append(nums, n)
		got = append(got, string(line))
		return nil
	})
	if err != nil || strings.Join(got, "|") != "a||b|c" || len(nums) != 4 || nums[3] != 4 {
		t.Fatalf("Scan: %q %v %v", got, nums, err)
	}
	stop := errors.New("stop")
	calls := 0
	if err := Scan(strings.NewReader("a\nb\n"), 1<<10, func(int64, []byte) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("error from fn: %v after %d calls", err, calls)
	}
	err = Scan(strings.NewReader("a\n"+strings.Repeat("x", 1<<17+1)+"\n"), 1<<17, func(int64, []byte) error { return nil })
	if err == nil || err.Error() != "line 2: bufio.Scanner: token too long" {
		t.Errorf("long line: %v", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(plain, []byte("x\ny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte("x\ny\n"))
	zw.Close()
	zipped := filepath.Join(dir, "a.jsonl.gz")
	if err := os.WriteFile(zipped, zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	readAll := func(r io.Reader) (string, error) {
		b, err := io.ReadAll(r)
		return string(b), err
	}
	for _, c := range []struct {
		path string
		gz   bool
	}{{plain, false}, {zipped, true}} {
		if s, err := ReadFile("test", c.path, c.gz, readAll); err != nil || s != "x\ny\n" {
			t.Errorf("%s: %q, %v", c.path, s, err)
		}
	}
	if _, err := ReadFile("test", plain, true, readAll); err == nil || !strings.HasPrefix(err.Error(), "test: "+plain+": ") {
		t.Errorf("plain file read as gzip: %v", err)
	}
	_, err := ReadFile("test", filepath.Join(dir, "none"), false, readAll)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "test: open ") {
		t.Errorf("missing file: %v", err)
	}
	boom := errors.New("boom")
	_, err = ReadFile("test", plain, false, func(io.Reader) (int, error) { return 0, boom })
	if !errors.Is(err, boom) || err.Error() != "test: "+plain+": boom" {
		t.Errorf("error from read: %v", err)
	}
}
