package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// --every keeps the rows of an IODA export on its grid, and only those:
// a row every 30 minutes from 22:00, or from 22:15 with an offset.
func TestScoreboardEveryKeepsTheRowsOnItsGrid(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "export.csv")
	var b strings.Builder
	b.WriteString("timestamp,bgp,LABEL\n")
	for i := range 12 { // 2023-11-14 22:00 to 22:55, every 5 minutes
		b.WriteString(strconv.Itoa(1_699_999_200+300*i) + "," + strconv.Itoa(500+i) + ",0\n")
	}
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for every, want := range map[string][]string{
		"":        {"22:00,500", "22:05,501", "22:10,502", "22:15,503", "22:20,504", "22:25,505", "22:30,506", "22:35,507", "22:40,508", "22:45,509", "22:50,510", "22:55,511"},
		"30m":     {"22:00,500", "22:30,506"},
		"30m@15m": {"22:15,503", "22:45,509"},
		"20m@5m":  {"22:05,501", "22:25,505", "22:45,509"},
	} {
		grid, err := parseEvery(every)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "obs.csv")
		if err := writeIODAObservations(src, dst, "country:XX", map[string]string{"bgp": "bgp_visible_slash24"}, grid); err != nil {
			t.Fatal(err)
		}
		out, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n")[1:] {
			// 2023-11-14T22:05:00Z,country:XX,bgp_visible_slash24,501
			f := strings.Split(l, ",")
			got = append(got, f[0][11:16]+","+f[3])
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("--every %q kept %v, want %v", every, got, want)
		}
	}
	for _, bad := range []string{"0s", "-1h", "1h@1h", "1h@-5m", "hourly", "1h@x"} {
		if _, err := parseEvery(bad); err == nil {
			t.Errorf("--every %q accepted", bad)
		}
	}
}
