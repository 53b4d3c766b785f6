package service

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/netmap"
)

func TestMapWatcherReloads(t *testing.T) {
	file := filepath.Join(t.TempDir(), "map.yaml")
	write := func(body string, mtime time.Time) {
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(file, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write("asns:\n  20294: {country: UG, name: MTN}\n", t0)
	m, err := netmap.LoadFile(nil, file)
	if err != nil {
		t.Fatal(err)
	}
	w := newMapWatcher(file, quietLog())
	if w.check(false) {
		t.Fatal("reloaded an unchanged file")
	}
	write("asns:\n  20294: {country: UG, name: MTN Uganda}\nprefixes:\n  - {prefix: \"41.210.128.0/17\", origin: 20294}\n", t0.Add(time.Minute))
	if !w.check(false) {
		t.Fatal("a changed file was not loaded")
	}
	if m.Names[20294] != "MTN" {
		t.Fatal("the map changed before apply")
	}
	w.apply(m)
	if m.Name("asn:20294") != "MTN Uganda (AS20294)" || m.Origins.Len() != 1 {
		t.Fatalf("after apply: %q, %d origins", m.Name("asn:20294"), m.Origins.Len())
	}
	// A broken file is refused and the map kept.
	write("asns:\n  20294: {country: Uganda}\n", t0.Add(2*time.Minute))
	if w.check(false) {
		t.Fatal("a broken file was accepted")
	}
	w.apply(m)
	if m.Name("asn:20294") != "MTN Uganda (AS20294)" {
		t.Fatalf("the broken file replaced the map: %q", m.Name("asn:20294"))
	}
	// SIGHUP forces a reload of an unchanged (now fixed) file.
	write("asns:\n  20294: {country: UG, name: MTN Uganda Ltd}\n", t0.Add(2*time.Minute))
	if !w.check(true) {
		t.Fatal("forced reload refused")
	}
	w.apply(m)
	if m.Names[20294] != "MTN Uganda Ltd" || m.Origins.Len() != 0 {
		t.Fatalf("after forced reload: %q, %d origins", m.Names[20294], m.Origins.Len())
	}
}
