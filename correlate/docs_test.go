package correlate_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/ from what the tests see")

// The examples in the README and docs/events.md are what the code prints:
// each test that produces one checks the documents against it.
var docFiles = []string{"../README.md", "../docs/events.md"}

// docJSON returns the fenced JSON block that follows the line containing
// marker in file.
func docJSON(t *testing.T, file, marker string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(b, []byte(marker))
	if !ok {
		t.Fatalf("%s: no %q", file, marker)
	}
	_, rest, ok = bytes.Cut(rest, []byte("```json\n"))
	block, _, ok2 := bytes.Cut(rest, []byte("```"))
	if !ok || !ok2 {
		t.Fatalf("%s: no json block after %q", file, marker)
	}
	return block
}

// subset says where doc differs from got: each key doc has must hold the
// same value in got; an array must have got's length, unless its last
// element is "…", which stands for the rest.
func subset(path string, doc, got any) error {
	switch d := doc.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: an object in the document, %v in the output", path, got)
		}
		for k, v := range d {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s.%s: not in the output", path, k)
			}
			if err := subset(path+"."+k, v, gv); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: an array in the document, %v in the output", path, got)
		}
		n := len(d)
		if n > 0 && d[n-1] == "…" {
			n--
			if len(g) < n {
				return fmt.Errorf("%s: %d elements in the document, %d in the output", path, n, len(g))
			}
		} else if len(g) != n {
			return fmt.Errorf("%s: %d elements in the document, %d in the output", path, n, len(g))
		}
		for i := range n {
			if err := subset(fmt.Sprintf("%s[%d]", path, i), d[i], g[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if !reflect.DeepEqual(doc, got) {
		return fmt.Errorf("%s: %v in the document, %v in the output", path, doc, got)
	}
	return nil
}

// checkDocJSON checks the block after marker in each file against line.
func checkDocJSON(t *testing.T, marker string, line []byte) {
	t.Helper()
	var got any
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	for _, f := range docFiles {
		var doc any
		if err := json.Unmarshal(docJSON(t, f, marker), &doc); err != nil {
			t.Errorf("%s: example after %q: %v", f, marker, err)
			continue
		}
		if err := subset("", doc, got); err != nil {
			t.Errorf("%s: example after %q differs from the output: %v\noutput: %s", f, marker, err, line)
		}
	}
}

var (
	mrkdwnBold = regexp.MustCompile(`\*([^*\n]+)\*`)
	mrkdwnLink = regexp.MustCompile(`<([^|>]+)\|([^>]+)>`)
)

// slackQuote renders Block Kit JSON as the Markdown quote the documents
// show: mrkdwn bold and links in Markdown, a section's fields on one line.
func slackQuote(blocks []byte) (string, error) {
	var bl []struct {
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
		Fields []struct {
			Text string `json:"text"`
		} `json:"fields"`
		Elements []struct {
			Text string `json:"text"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(blocks, &bl); err != nil {
		return "", err
	}
	md := func(s string) string {
		return mrkdwnLink.ReplaceAllString(mrkdwnBold.ReplaceAllString(s, "**$1**"), "[$2]($1)")
	}
	var paras []string
	for _, b := range bl {
		var p []string
		if b.Text != nil {
			p = append(p, md(b.Text.Text))
		}
		var fields []string
		for _, f := range b.Fields {
			fields = append(fields, strings.Replace(md(f.Text), "\n", " ", 1))
		}
		if len(fields) > 0 {
			p = append(p, strings.Join(fields, " · "))
		}
		for _, e := range b.Elements {
			p = append(p, md(e.Text))
		}
		paras = append(paras, strings.Join(p, "\n"))
	}
	var out strings.Builder
	for i, line := range strings.Split(strings.Join(paras, "\n\n"), "\n") {
		if i > 0 {
			out.WriteString("\n")
		}
		out.WriteString(strings.TrimRight("> "+line, " "))
	}
	return out.String() + "\n", nil
}

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	f := "testdata/" + name
	if *update {
		if err := os.WriteFile(f, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./correlate -run %s -update rewrites it):\n got %s\nwant %s", f, t.Name(), got, want)
	}
}

// checkDocSlack checks that each document quotes the message as Slack got
// it.
func checkDocSlack(t *testing.T, blocks []byte) {
	t.Helper()
	var ind bytes.Buffer
	if err := json.Indent(&ind, blocks, "", "  "); err != nil {
		t.Fatal(err)
	}
	ind.WriteString("\n")
	checkGolden(t, "slack-resolved.json", ind.Bytes())
	q, err := slackQuote(blocks)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range docFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(q)) {
			t.Errorf("%s does not quote the Slack message as sent; it reads:\n%s", f, q)
		}
	}
}
