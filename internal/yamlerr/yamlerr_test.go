package yamlerr

import (
	"bytes"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

type section struct {
	X int `yaml:"x"`
}

// textDuration is a duration read by its own parser, as the rules' and
// labels' durations are: the decoder passes its error on with no line.
type textDuration time.Duration

func (d *textDuration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = textDuration(v)
	return err
}

type file struct {
	D    time.Duration  `yaml:"d"`
	PD   *time.Duration `yaml:"pd"`
	N    int            `yaml:"n"`
	U    uint32         `yaml:"u"`
	F    float64        `yaml:"f"`
	B    bool           `yaml:"b"`
	S    string         `yaml:"s"`
	L    []string       `yaml:"l"`
	M    map[string]int `yaml:"m"`
	Sub  section        `yaml:"sub"`
	Subs []section      `yaml:"subs"`
	T    time.Time      `yaml:"t"`
	TD   textDuration   `yaml:"td"`
}

// TestDecode decodes real mistakes with the real decoder, as the config,
// labels and Traffic Manager loaders do, and holds each to its words.
func TestDecode(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"d: 7", "f.yaml:1: want a duration such as 30s, 5m or 168h, not 7"},
		{"n: 1\npd: 5 minutes", "f.yaml:2: want a duration such as 30s, 5m or 168h, not 5 minutes"},
		{"n: abc", "f.yaml:1: want a whole number, not abc"},
		{"u: -1", "f.yaml:1: want a whole number from 0 to 4294967295, not -1"},
		{"f: x", "f.yaml:1: want a number, not x"},
		{"b: maybe", "f.yaml:1: want true or false, not maybe"},
		{"s: [a]", "f.yaml:1: want a single value, not a list"},
		{"l: {a: 1}", "f.yaml:1: want a list, not a mapping"},
		{"m: [1]", "f.yaml:1: want a mapping of keys to values, not a list"},
		{"sub: 3", "f.yaml:1: want a mapping of keys, not 3"},
		{"subs:\n  - x: 1\n  - 2", "f.yaml:3: want a mapping of keys, not 2"},
		{"sub:\n  y: 1", `f.yaml:2: unknown key "y" (known: x)`},
		{"subs:\n  - x: 1\n  - xx: 2", `f.yaml:3: unknown key "xx" (known: x)`},
		{"zz: 1", `f.yaml:1: unknown key "zz" (known: d, pd, n, u, f, b, s, l, m, sub, subs, t, td)`},
		{"pdd: 5m", `f.yaml:1: unknown key "pdd": did you mean "pd"?`},
		{"\n\nsubz: []", `f.yaml:3: unknown key "subz": did you mean "sub"?`},
		{"n: x\nb: q\nf: z", "f.yaml:1: want a whole number, not x (and 2 more errors)"},
		{"n: 1\nt: 2025-04-28 10:30", "f.yaml:2: want a time such as 2025-04-28T10:30:00Z, not 2025-04-28 10:30"},
		{"n: 1\n\nsubs: [{x: 1}]\ntd: 10 minutes", "f.yaml:4: want a duration such as 30s, 5m or 168h, not 10 minutes"},
		{"td: 7", "f.yaml:1: want a duration such as 30s, 5m or 168h, not 7"},
		{"n: 1\nn: 2", `f.yaml:2: mapping key "n" already defined at line 1`},
		{"a: [", "f.yaml:1: did not find expected node content"},
	} {
		var v file
		err := Decode("f.yaml", []byte(c.in), &v)
		if err == nil {
			t.Errorf("%q: decoded", c.in)
			continue
		}
		if got := err.Error(); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

func TestDecodeEmpty(t *testing.T) {
	v := file{N: 7}
	if err := Decode("f.yaml", []byte("# nothing yet\n"), &v); err != nil || v.N != 7 {
		t.Errorf("Decode of an empty document = %v, %+v", err, v)
	}
}

// TestWrapWithoutType words an unknown key with no keys to offer, as the
// rules loader's node decoding gives it.
func TestWrapWithoutType(t *testing.T) {
	var v file
	dec := yaml.NewDecoder(bytes.NewReader([]byte("n: 1\nzz: 2")))
	dec.KnownFields(true)
	if got := Wrap("f.yaml", dec.Decode(&v)).Error(); got != `f.yaml:2: unknown key "zz"` {
		t.Errorf("Wrap = %q", got)
	}
}

func TestSplitWithoutLine(t *testing.T) {
	var v file
	err := yaml.Unmarshal([]byte("\tn: 1"), &v)
	if err == nil {
		t.Fatal("a tab decoded")
	}
	line, msg := Split(err)
	if line != 0 || msg != "found character that cannot start any token" {
		t.Errorf("Split = %d, %q", line, msg)
	}
	if got := Wrap("f.yaml", err).Error(); got != "f.yaml: found character that cannot start any token" {
		t.Errorf("Wrap = %q", got)
	}
}
