package linefile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/gztest"
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
	zipped := filepath.Join(dir, "a.jsonl.gz")
	if err := os.WriteFile(zipped, gztest.Gzip([]byte("x\ny\n")), 0o644); err != nil {
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

// A gzipped file cut short is read to its last whole line: the part of
// the line the cut fell in is never handed on (a CSV row cut inside its
// last number would parse as another number), and the error names that
// line as an *ingest.TornError with the stats read returned. A whole
// file whose last line has no newline keeps that line.
func TestReadFileCutShort(t *testing.T) {
	var text strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&text, "1698336000,region:1226,active_probing_slash24,%d\n", 1000+i)
	}
	z := gztest.Gzip([]byte(text.String()))
	dir := t.TempDir()
	path := filepath.Join(dir, "cut.csv.gz")
	if err := os.WriteFile(path, z[:len(z)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	var lines []string
	n, err := ReadFile("test", path, true, func(r io.Reader) (int, error) {
		err := Scan(r, 1<<10, func(_ int64, l []byte) error { lines = append(lines, string(l)); return nil })
		return len(lines), err
	})
	var torn *ingest.TornError
	if !errors.As(err, &torn) || n != len(lines) || torn.Record != int64(len(lines)) || len(lines) < 100 || len(lines) >= 5000 ||
		!strings.Contains(err.Error(), fmt.Sprintf("the compressed file ends inside line %d", len(lines)+1)) {
		t.Fatalf("%d lines, stats %d, err %v: want the whole lines, then the cut named", len(lines), n, err)
	}
	if want := strings.Split(text.String(), "\n")[:len(lines)]; !slices.Equal(lines, want) {
		t.Fatalf("the lines read are not the file's first %d", len(lines))
	}

	// A file of one line cut short has no whole line: the reader's
	// error says the cut is why.
	one := filepath.Join(dir, "one.json.gz")
	z = gztest.Gzip([]byte(strings.Repeat(`{"values":[560,560]}`, 2000)))
	os.WriteFile(one, z[:len(z)/2], 0o644)
	_, err = ReadFile("test", one, true, func(r io.Reader) (int, error) {
		b, err := io.ReadAll(r)
		if err == nil && len(b) == 0 {
			err = io.EOF
		}
		return 0, err
	})
	if err == nil || !strings.HasSuffix(err.Error(), "one.json.gz: EOF; cut short: the compressed file ends inside line 1: unexpected EOF") {
		t.Fatalf("one line cut short: %v", err)
	}

	whole := filepath.Join(dir, "whole.gz")
	os.WriteFile(whole, gztest.Gzip([]byte("a\nb")), 0o644)
	s, err := ReadFile("test", whole, true, func(r io.Reader) (string, error) {
		b, err := io.ReadAll(r)
		return string(b), err
	})
	if err != nil || s != "a\nb" {
		t.Fatalf("whole file without a last newline: %q, %v", s, err)
	}
}

// FuzzWholeLines: whatever the text and wherever its compressed stream
// is cut, what comes through is a prefix of the text made of whole lines;
// and all of it when the stream is whole.
func FuzzWholeLines(f *testing.F) {
	f.Add([]byte("a,1\nb,22\nc,333\n"), uint16(20))
	f.Add([]byte("no newline at all"), uint16(10))
	f.Add([]byte("x\n"), uint16(0xffff))
	f.Fuzz(func(t *testing.T, text []byte, cut uint16) {
		z := gztest.Gzip(text)
		whole := int(cut) >= len(z)
		if !whole {
			z = z[:cut]
		}
		zr, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			return // cut inside the gzip header
		}
		tr := NewWholeLines(zr)
		tr.buf = make([]byte, 7)
		got, err := io.ReadAll(tr)
		if err != nil {
			if whole {
				t.Fatalf("whole stream: %v", err)
			}
			return // a damaged stream, not a cut one
		}
		switch {
		case !bytes.HasPrefix(text, got):
			t.Fatalf("read %q, not a prefix of %q", got, text)
		case whole && (!bytes.Equal(got, text) || tr.torn):
			t.Fatalf("whole stream: read %q of %q, torn %v", got, text, tr.torn)
		case tr.torn && len(got) > 0 && got[len(got)-1] != '\n':
			t.Fatalf("cut stream: read %q, which ends inside a line", got)
		case tr.lines != int64(bytes.Count(got, []byte{'\n'})):
			t.Fatalf("counted %d lines in %q", tr.lines, got)
		}
	})
}

// A leading byte order mark (a spreadsheet's "CSV UTF-8") is not part of
// the text, plain or gzipped; one anywhere else is left alone.
func TestReadFileSkipsAByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	text := "\ufefftimestamp,bgp\n1698336000,560\n\ufeff\n"
	plain, zipped := filepath.Join(dir, "a.csv"), filepath.Join(dir, "a.csv.gz")
	os.WriteFile(plain, []byte(text), 0o644)
	os.WriteFile(zipped, gztest.Gzip([]byte(text)), 0o644)
	for _, c := range []struct {
		path string
		gz   bool
	}{{plain, false}, {zipped, true}} {
		s, err := ReadFile("test", c.path, c.gz, func(r io.Reader) (string, error) {
			b, err := io.ReadAll(r)
			return string(b), err
		})
		if err != nil || s != text[3:] {
			t.Errorf("%s: %q, %v", c.path, s, err)
		}
	}
	b, _ := io.ReadAll(SkipBOM(strings.NewReader("ab")))
	if string(b) != "ab" {
		t.Errorf("two bytes without a mark: %q", b)
	}
}

// BenchmarkWholeLines reads text a whole line at a time, through a
// buffer the size bufio.Scanner asks with, against the same text read
// as it is (BenchmarkPlainRead): what keeping to whole lines costs.
func BenchmarkWholeLines(b *testing.B) {
	benchRead(b, func(r io.Reader) io.Reader { return NewWholeLines(r) })
}

func BenchmarkPlainRead(b *testing.B) { benchRead(b, func(r io.Reader) io.Reader { return r }) }

func benchRead(b *testing.B, wrap func(io.Reader) io.Reader) {
	var text bytes.Buffer
	for i := 0; text.Len() < 8<<20; i++ {
		fmt.Fprintf(&text, "%d,region:1226,active_probing_slash24,%d\n", 1698336000+300*i, 1000+i%97)
	}
	p := make([]byte, 4096)
	b.SetBytes(int64(text.Len()))
	b.ReportAllocs()
	for b.Loop() {
		r := wrap(bytes.NewReader(text.Bytes()))
		for {
			if _, err := r.Read(p); err != nil {
				break
			}
		}
	}
}
