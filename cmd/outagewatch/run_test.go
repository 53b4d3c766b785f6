package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --stage takes 1, 2 or both; anything else is refused before Kafka is
// touched.
func TestRunStageFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "outagewatch.yaml")
	os.WriteFile(cfg, []byte("kafka:\n  brokers: [127.0.0.1:1]\n  topics:\n    - {name: flows, stream: flows, format: goflow2-pb}\ndata_dir: "+dir+"\n"), 0o644)
	c := runCmd()
	c.SetArgs([]string{"--config", cfg, "--stage", "3"})
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.Execute()
	if err == nil || !strings.Contains(err.Error(), `--stage "3": want 1, 2 or both`) {
		t.Fatalf("err %v", err)
	}
}

// The demo's flags and its fixture argument belong to --demo: without it
// they are refused, not ignored.
func TestRunDemoFlagsNeedDemo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"uganda-2021-01-13"}, `unexpected argument "uganda-2021-01-13"`},
		{[]string{"--speed", "100"}, "--speed is a flag of run --demo"},
		{[]string{"--listen", "127.0.0.1:0"}, "--listen is a flag of run --demo"},
		{[]string{"--demo", "a", "b"}, "accepts at most 1 arg"},
		{[]string{"--demo", "--speed", "-1"}, "--speed -1: want 0"},
		{[]string{"--demo", "no-such-fixture.yaml"}, "no-such-fixture.yaml"},
	} {
		c := runCmd()
		c.SetArgs(tc.args)
		c.SilenceUsage, c.SilenceErrors = true, true
		err := c.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

// run --check loads a config and all it names, says what it holds, and
// exits without a broker (the one named is a closed port); each part it
// cannot load fails it with the file and the reason.
func TestRunCheck(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "map.yaml"), []byte("asns:\n  20294: {country: UG, name: MTN Uganda}\nprefixes:\n  - {prefix: 41.210.128.0/17, origin: 20294}\n"), 0o644)
	base := "kafka:\n  brokers: [127.0.0.1:1]\n  topics:\n    - {name: flows, stream: flows, format: goflow2-pb}\n    - {name: dns, stream: dns, format: dnstap}\n" +
		"data_dir: " + filepath.Join(dir, "state") + "\nmap: map.yaml\n"
	check := func(doc string, env ...string) (string, error) {
		t.Helper()
		for i := 0; i+1 < len(env); i += 2 {
			t.Setenv(env[i], env[i+1])
		}
		cfg := filepath.Join(dir, "outagewatch.yaml")
		os.WriteFile(cfg, []byte(doc), 0o644)
		var out strings.Builder
		c := runCmd()
		c.SetArgs([]string{"--config", cfg, "--check"})
		c.SetOut(&out)
		c.SilenceUsage, c.SilenceErrors = true, true
		err := c.Execute()
		return strings.ReplaceAll(out.String(), cfg, "C"), err
	}
	sinks := "sinks:\n  - {name: hook, type: webhook, url: \"http://127.0.0.1:9/\", secret_env: OW_TEST_CHECK_SECRET, action_rules: [transit-packet-loss]}\n"
	out, err := check(base+sinks, "OW_TEST_CHECK_SECRET", "s")
	want := "C: kafka: brokers 127.0.0.1:1; topics flows (flows, goflow2-pb), dns (dns, dnstap)\n" +
		"C: data_dir: " + filepath.Join(dir, "state") + " (run makes it, in " + dir + ", writable)\n" +
		"C: http: listen 127.0.0.1:9310\n" +
		"C: rules: rules/default: 19 rules\n" +
		"C: map: " + filepath.Join(dir, "map.yaml") + ": 1 AS names, 1 AS countries, 1 prefix origins, 0 prefix regions\n" +
		"C: judging: buckets of 5 min, lateness 0 min, history 4032 buckets (14 d), group wait 10 min, 0 silences in the config\n" +
		"C: sink hook: webhook, the actions feed of transit-packet-loss\n" +
		"C: OK (checked without contacting a broker)\n"
	if err != nil || out != want {
		t.Fatalf("check: %v\n got %q\nwant %q", err, out, want)
	}
	// What the config sets of the judging, as run and replay -c take it.
	out, err = check(base + "bucket_width: 10m\nlateness: 90s\nhistory_buckets: 144\ncorrelation:\n  group_wait: 0s\n" +
		"silences:\n  - {entity: \"asn:20294\", start: 2021-01-13T00:00:00Z, end: 2021-01-14T00:00:00Z, author: noc, comment: maintenance}\n")
	if want := "C: judging: buckets of 10 min, lateness 1m30s, history 144 buckets (1 d), no group wait (pages at once), 1 silences in the config\n"; err != nil || !strings.Contains(out, want) {
		t.Fatalf("check with judging settings: %v\n got %q\nwant a line %q", err, out, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); !os.IsNotExist(err) {
		t.Errorf("--check made the data directory: %v", err)
	}
	for _, tc := range []struct{ doc, want string }{
		{base + sinks, "sink hook: environment variable OW_TEST_CHECK_SECRET is empty"},
		{base + "rules: nope.yaml\n", "nope.yaml: no such file"},
		{strings.Replace(base, "map: map.yaml", "map: gone.yaml", 1), "gone.yaml"},
		{base + "sinks:\n  - {name: hook, type: jsonl, path: a.jsonl, action_rules: [no-such-rule]}\n", `sink hook: action_rules: no rule named "no-such-rule"`},
		{base + "kafak: 1\n", `:8: unknown key "kafak": did you mean "kafka"?`},
		{strings.Replace(base, "data_dir: "+filepath.Join(dir, "state"), "data_dir: "+filepath.Join(dir, "map.yaml", "state"), 1),
			"map.yaml is not a directory"},
		{base + "http:\n  listen: 9310\n", `http.listen "9310": address 9310: missing port in address`},
	} {
		if _, err := check(tc.doc, "OW_TEST_CHECK_SECRET", ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.doc, err, tc.want)
		}
	}
}
