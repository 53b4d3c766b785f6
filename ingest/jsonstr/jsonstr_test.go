package jsonstr

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// cases are string contents, as they stand between quotes.
var cases = []struct {
	in, want string
	ok       bool
}{
	{`plain`, "plain", true},
	{``, "", true},
	{`a\"b\\c\/d`, `a"b\c/d`, true},
	{`\b\f\n\r\t`, "\b\f\n\r\t", true},
	{`\u0031.2.3.4`, "1.2.3.4", true},
	{`dst\u005fas`, "dst_as", true},
	{`\u00e9t\u00C9`, "étÉ", true},
	{`\ud83d\ude00!`, "😀!", true},           // a surrogate pair is one rune
	{`\ud83d!`, "\uFFFD!", true},            // a lone high half
	{`\ude00x`, "\uFFFDx", true},            // a lone low half
	{`\ud83d\u0041`, "\uFFFDA", true},       // a high half and no low one
	{`\ud83d\ud83d\ude00`, "\uFFFD😀", true}, // two highs, then a low
	{`\ud83d\uzzzz`, "", false},             // the next escape is bad
	{`\x41`, "", false},
	{`\u12`, "", false},
	{`\u12g4`, "", false},
	{`ends in \`, "", false},
}

func TestUnescape(t *testing.T) {
	for _, c := range cases {
		got, ok := Unescape([]byte("keep:"), []byte(c.in))
		if ok != c.ok || (ok && string(got) != "keep:"+c.want) {
			t.Errorf("Unescape(%q) = %q, %v; want %q, %v", c.in, got, ok, "keep:"+c.want, c.ok)
		}
	}
}

// FuzzUnescape holds Unescape to encoding/json: for any UTF-8 content
// that makes a valid JSON string, the same text; where encoding/json
// fails on an escape, not ok.
func FuzzUnescape(f *testing.F) {
	for _, c := range cases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !utf8.ValidString(in) {
			return // encoding/json replaces bad bytes; the scanners say so themselves
		}
		got, ok := Unescape(nil, []byte(in))
		quoted := []byte(`"` + in + `"`)
		var want string
		err := json.Unmarshal(quoted, &want)
		switch {
		case err == nil:
			if !ok || string(got) != want {
				t.Fatalf("Unescape(%q) = %q, %v; encoding/json reads %q", in, got, ok, want)
			}
		case ok && !strings.ContainsFunc(in, func(r rune) bool { return r == '"' || r < 0x20 }):
			// No bare quote or control character: an escape is at fault.
			t.Fatalf("Unescape(%q) ok where encoding/json fails: %v", in, err)
		}
	})
}
