package examples

import (
	"os"
	"testing"
)

// A bundled file is the file on disk, found by any path that ends in
// examples/<dir>/<file>.yaml; other paths are not bundled.
func TestRead(t *testing.T) {
	disk, err := os.ReadFile("ioda/ioda.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"examples/ioda/ioda.yaml", "../examples/ioda/ioda.yaml", "/opt/src/examples/ioda/./ioda.yaml"} {
		b, ok := Read(p)
		if !ok || string(b) != string(disk) {
			t.Errorf("%s: %d bytes, %v; want the %d of ioda/ioda.yaml", p, len(b), ok, len(disk))
		}
	}
	for _, p := range []string{"ioda/ioda.yaml", "examples/ioda/uganda-2021-01-13.csv.gz", "examples/ioda/nope.yaml", "myexamples/ioda/ioda.yaml"} {
		if _, ok := Read(p); ok {
			t.Errorf("%s: bundled, want not", p)
		}
	}
}
