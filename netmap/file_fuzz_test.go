package netmap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadFile feeds mapping files, written or mangled: loading never
// panics, and what loads writes and loads back the same.
func FuzzLoadFile(f *testing.F) {
	var b bytes.Buffer
	_ = Write(&b, sampleMap(), "seed")
	f.Add(b.Bytes())
	f.Add([]byte(fileMagic + "\nasns:\n  1: {name: \"a, b\", country: us}\nprefixes:\n  - {prefix: \"10.0.0.0/8\", region: \"x\"}\n"))
	f.Add([]byte("asns:\n  5089: {country: GB, name: Virgin Media}\nprefixes:\n  - {prefix: 62.252.0.0/14, origin: 5089, region: GB-ENG}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		dir := t.TempDir()
		file := filepath.Join(dir, "m.yaml")
		if err := os.WriteFile(file, in, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := LoadFile(nil, file)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Write(&out, m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := LoadFile(nil, file)
		if err != nil {
			t.Fatalf("written map does not load: %v\n%s", err, out.Bytes())
		}
		same(t, "round trip", m, back)
	})
}
