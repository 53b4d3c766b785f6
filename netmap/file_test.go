package netmap

import (
	"bytes"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sampleMap() *Map {
	m := New()
	m.Names[20294] = "MTN Uganda"
	m.Countries[20294] = "UG"
	m.Names[1251] = "FUNDAÇÃO \"FAPESP\", São Paulo: x\u0080\\"
	m.Names[64500] = "NO"
	m.Countries[3352] = "ES"
	m.Origins.Insert(netip.MustParsePrefix("41.210.128.0/17"), 20294)
	m.Origins.Insert(netip.MustParsePrefix("::/0"), 64500)
	m.PrefixCountries.Insert(netip.MustParsePrefix("41.210.128.0/17"), "UG")
	m.PrefixCountries.Insert(netip.MustParsePrefix("2001:db8::/32"), "NL")
	m.Regions.Insert(netip.MustParsePrefix("81.2.69.160/27"), "GB-ENG")
	return m
}

func same(t *testing.T, what string, a, b *Map) {
	t.Helper()
	if !maps.Equal(a.Names, b.Names) || !maps.Equal(a.Countries, b.Countries) {
		t.Fatalf("%s: names %v / %v, countries %v / %v", what, a.Names, b.Names, a.Countries, b.Countries)
	}
	dump := func(m *Map) string {
		var s strings.Builder
		m.Origins.Walk(func(p netip.Prefix, v uint32) bool { s.WriteString(p.String() + "=" + asnString(v) + " "); return true })
		m.PrefixCountries.Walk(func(p netip.Prefix, v string) bool { s.WriteString(p.String() + "=" + v + " "); return true })
		m.Regions.Walk(func(p netip.Prefix, v string) bool { s.WriteString(p.String() + "=" + v + " "); return true })
		return s.String()
	}
	if dump(a) != dump(b) {
		t.Fatalf("%s: prefixes\n%s\n%s", what, dump(a), dump(b))
	}
}

// The fast line reader and the YAML decoder read a written map the same.
func TestWriteLoadBothReaders(t *testing.T) {
	m := sampleMap()
	var b bytes.Buffer
	if err := Write(&b, m, "test map"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fast := filepath.Join(dir, "fast.yaml")
	slow := filepath.Join(dir, "slow.yaml")
	os.WriteFile(fast, b.Bytes(), 0o644)
	// Without the first line the file is plain YAML to LoadFile.
	_, rest, _ := bytes.Cut(b.Bytes(), []byte("\n"))
	os.WriteFile(slow, rest, 0o644)
	mf, err := LoadFile(nil, fast)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := LoadFile(nil, slow)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "fast", m, mf)
	same(t, "yaml", m, ms)
	// A hand edit the line reader does not expect still loads, by YAML.
	edited := append(bytes.Clone(b.Bytes()), []byte("  - prefix: 192.0.2.0/24\n    origin: 64496\n")...)
	os.WriteFile(fast, edited, 0o644)
	me, err := LoadFile(nil, fast)
	if err != nil {
		t.Fatal(err)
	}
	if as, _ := me.Origins.Get(netip.MustParsePrefix("192.0.2.0/24")); as != 64496 {
		t.Fatalf("hand-added prefix: origin %d", as)
	}
	// A bad country fails with the line, on either path.
	bad := bytes.Replace(b.Bytes(), []byte("country: UG}"), []byte("country: UGA}"), 1)
	os.WriteFile(fast, bad, 0o644)
	if _, err := LoadFile(nil, fast); err == nil || !strings.Contains(err.Error(), `line `) || !strings.Contains(err.Error(), `"UGA" is not a two-letter code`) {
		t.Fatalf("bad country: %v", err)
	}
}

// asnString is for test output.
func asnString(v uint32) string { return New().ASName(v) }
