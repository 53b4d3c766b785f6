package main

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestPrintVersion(t *testing.T) {
	var b bytes.Buffer
	printVersion(&b, &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "48661a8c"}, {Key: "vcs.time", Value: "2026-11-30T15:00:00Z"}, {Key: "vcs.modified", Value: "true"}}})
	want := "outagewatch v0.3.0\ncommit 48661a8c (modified)\ncommitted 2026-11-30T15:00:00Z\nbuilt with " +
		runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	printVersion(&b, nil)
	if got := b.String(); got[:len("outagewatch (devel)\nbuilt with")] != "outagewatch (devel)\nbuilt with" {
		t.Fatalf("no build info: %q", got)
	}
}
