package dcload

import (
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

func TestFormatRegistered(t *testing.T) {
	d, err := ingest.NewDecoder(Stream, Format, &ingest.Env{})
	if err != nil {
		t.Fatal(err)
	}
	var got obs.Slice
	if err := d.Decode([]byte(`{"time":"2025-04-28T10:35:00Z","dc":"lis01","cpu_util":0.9}`), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Signal != CPUUtil || got[0].Value != 0.9 {
		t.Fatalf("%+v", got)
	}
}
