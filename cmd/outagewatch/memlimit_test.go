package main

import (
	"runtime/debug"
	"testing"
)

func TestApplyMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	err := applyMemoryLimit("--memory-limit", "lots")
	if want := `--memory-limit: memory limit "lots": want a size such as 6GiB, or a share such as 75%`; err == nil || err.Error() != want {
		t.Fatalf("err %v, want %q", err, want)
	}
	if err := applyMemoryLimit("c.yaml: memory_limit", "2GiB"); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 2<<30 {
		t.Fatalf("runtime limit %d, want %d", got, 2<<30)
	}
}
