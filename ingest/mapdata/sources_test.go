package mapdata

import (
	"bufio"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/internal/gztest"
	"github.com/outagewatch/outagewatch/netmap"
)

func read(t *testing.T, rd Reader, file string) (*netmap.Map, Stats) {
	t.Helper()
	f, err := Open(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := netmap.New()
	st, err := rd(f, m)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m, st
}

func TestASNamesPotaroo(t *testing.T) {
	m, st := read(t, ReadASNames, "potaroo-asn.txt.head4000")
	if st.Lines != 4000 || st.Skipped != 0 {
		t.Fatalf("lines %d skipped %d (%v), want 4000 and 0", st.Lines, st.Skipped, st.Errors)
	}
	for asn, want := range map[uint32][2]string{
		1:    {"Level 3 Communications, Inc.", "US"},
		3:    {"Massachusetts Institute of Technology", "US"},
		3352: {"TELEFONICA_DE_ESPANA TELEFONICA DE ESPANA", "ES"},
		// ISO-8859-1 in the original: 0xC7 0xC3 are Ç and Ã.
		1251: {"FUNDAÇÃO DE AMPARO À PESQUISA DO ESTADO SÃO PAULO", "BR"},
		1292: {"Instituto Tecnológico y de Estudios Superiores de Monterrey", "MX"},
		1916: {"Associação Rede Nacional de Ensino e Pesquisa", "BR"},
	} {
		if m.Names[asn] != want[0] || m.Countries[asn] != want[1] {
			t.Errorf("AS%d: %q %q, want %q %q", asn, m.Names[asn], m.Countries[asn], want[0], want[1])
		}
	}
	// AS0 is "-Reserved AS-,ZZ": a name, no country.
	if _, ok := m.Countries[0]; ok {
		t.Errorf("AS0 has country %q; ZZ means none", m.Countries[0])
	}
	if got := m.Name("asn:3352"); got != "TELEFONICA_DE_ESPANA TELEFONICA DE ESPANA (AS3352)" {
		t.Errorf("Name(asn:3352) = %q", got)
	}
}

func TestAS2Org(t *testing.T) {
	m, st := read(t, ReadAS2Org, "as2org-sample.txt")
	if st.Lines != 8 || st.Skipped != 2 {
		t.Fatalf("lines %d skipped %d (%v), want 8 and 2", st.Lines, st.Skipped, st.Errors)
	}
	if !strings.HasPrefix(st.Errors[0], "line 11: aut \"not-a-number\"") || !strings.HasPrefix(st.Errors[1], "line 12: 3 fields") {
		t.Errorf("errors %q", st.Errors)
	}
	for asn, want := range map[uint32][2]string{
		64496: {"Example Networks, Inc.", "US"},
		64497: {"Example Networks, Inc.", "US"},
		64498: {"Documentation Transit B.V.", "NL"},
		64499: {"ORPHAN-AS", ""},
	} {
		if m.Names[asn] != want[0] || m.Countries[asn] != want[1] {
			t.Errorf("AS%d: %q %q, want %q %q", asn, m.Names[asn], m.Countries[asn], want[0], want[1])
		}
	}
}

// oracleLines returns the data lines of a pyasn file split on whitespace,
// read here independently of the reader under test.
func oracleLines(t *testing.T, file string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && l[0] != ';' {
			out = append(out, strings.Fields(l))
		}
	}
	return out
}

func TestPfx2ASPyasn(t *testing.T) {
	for _, tc := range []struct {
		file  string
		lines int
	}{{"ipasn_20140513.head8000.dat", 8000 - 5}, {"ipasn6_20151101.v6part.dat", 4000}} {
		m, st := read(t, ReadPfx2AS, tc.file)
		if st.Lines != tc.lines || st.Skipped != 0 || st.Origins != tc.lines {
			t.Fatalf("%s: lines %d skipped %d origins %d (%v), want %d", tc.file, st.Lines, st.Skipped, st.Origins, st.Errors, tc.lines)
		}
		for _, l := range oracleLines(t, tc.file) {
			p := netip.MustParsePrefix(l[0])
			want, _ := strconv.ParseUint(l[1], 10, 32)
			if got, ok := m.Origins.Get(p); !ok || got != uint32(want) {
				t.Fatalf("%s: %s origin %d, want %d", tc.file, p, got, want)
			}
		}
	}
	m, _ := read(t, ReadPfx2AS, "ipasn_20140513.head8000.dat")
	// 1.0.0.0/24 is Google's (AS15169) in the 2014 table; an address inside
	// 1.0.20.0/23 goes to AS2519.
	if as, _ := m.OriginAS(netip.MustParseAddr("1.0.0.1")); as != 15169 {
		t.Errorf("1.0.0.1 origin %d, want 15169", as)
	}
	if as, _ := m.OriginAS(netip.MustParseAddr("1.0.21.200")); as != 2519 {
		t.Errorf("1.0.21.200 origin %d, want 2519", as)
	}
	m6, _ := read(t, ReadPfx2AS, "ipasn6_20151101.v6part.dat")
	if as, _ := m6.OriginAS(netip.MustParseAddr("2001:200::1")); as != 2500 {
		t.Errorf("2001:200::1 origin %d, want 2500", as)
	}
}

func TestPfx2ASRouteViewsForm(t *testing.T) {
	m := netmap.New()
	st, err := ReadPfx2AS(strings.NewReader("1.0.0.0\t24\t13335\n1.0.4.0\t22\t38803_56203\n1.0.8.0\t21\t64496,64497\n1.0.16.0\t24\tx\n"), m)
	if err != nil {
		t.Fatal(err)
	}
	if st.Origins != 3 || st.Skipped != 1 || st.Errors[0] != `line 4: origin "x": not an AS number` {
		t.Fatalf("%+v", st)
	}
	for p, want := range map[string]uint32{"1.0.0.0/24": 13335, "1.0.4.0/22": 38803, "1.0.8.0/21": 64496} {
		if got, _ := m.Origins.Get(netip.MustParsePrefix(p)); got != want {
			t.Errorf("%s: %d, want %d", p, got, want)
		}
	}
}

func TestIP2ASN(t *testing.T) {
	m, st := read(t, ReadIP2ASN, "ip2asn-v4.tsv")
	if st.Lines != 1427 || st.Skipped != 0 {
		t.Fatalf("lines %d skipped %d (%v)", st.Lines, st.Skipped, st.Errors)
	}
	// Rows of the file: 1.1.1.0-1.1.1.0 13335 US, 1.1.1.1-1.1.1.1 7497 CN,
	// 1.1.1.2-1.1.1.255 13335 US.
	for a, want := range map[string]uint32{"1.1.1.0": 13335, "1.1.1.1": 7497, "1.1.1.2": 13335, "1.1.1.255": 13335} {
		if got, _ := m.OriginAS(netip.MustParseAddr(a)); got != want {
			t.Errorf("%s: origin %d, want %d", a, got, want)
		}
	}
	if m.CountryOf(netip.MustParseAddr("1.1.1.1")) != "CN" || m.CountryOf(netip.MustParseAddr("1.1.1.7")) != "US" {
		t.Errorf("countries %q %q", m.CountryOf(netip.MustParseAddr("1.1.1.1")), m.CountryOf(netip.MustParseAddr("1.1.1.7")))
	}
	if m.Names[13335] != "Cloudflare, Inc." || m.Countries[13335] != "US" {
		t.Errorf("AS13335 %q %q", m.Names[13335], m.Countries[13335])
	}
	// Every row's start and end address maps to the row's AS, unless the
	// row is unrouted (AS 0): checked against the file itself.
	f, _ := os.ReadFile("testdata/ip2asn-v4.tsv")
	rows := 0
	for _, l := range strings.Split(strings.TrimSpace(string(f)), "\n") {
		c := strings.Split(l, "\t")
		want, _ := strconv.ParseUint(c[2], 10, 32)
		for _, a := range c[:2] {
			got, ok := m.OriginAS(netip.MustParseAddr(a))
			if want == 0 && ok {
				t.Fatalf("%s: unrouted row has origin %d", a, got)
			}
			if want != 0 && got != uint32(want) {
				t.Fatalf("%s: origin %d, want %d (row %q)", a, got, want, l)
			}
		}
		rows++
	}
	if rows != 1427 {
		t.Fatalf("%d rows", rows)
	}
}

func TestDelegatedExtended(t *testing.T) {
	m, st := read(t, ReadDelegated, "delegated-afrinic-extended-20240105.gz")
	if st.Skipped != 0 {
		t.Fatalf("skipped %d: %v", st.Skipped, st.Errors)
	}
	if st.Lines != 3326+5302+7186 {
		t.Errorf("lines %d, want the %d records the summary lines count", st.Lines, 3326+5302+7186)
	}
	if len(st.Notes) != 1 || st.Notes[0] != "registry afrinic, serial 20240105 (2024-01-05)" {
		t.Errorf("notes %q", st.Notes)
	}
	if m.Countries[1228] != "ZA" {
		t.Errorf("AS1228 %q, want ZA", m.Countries[1228])
	}
	// MTN Uganda's AS and block, from the file:
	// afrinic|UG|asn|20294|1|20020117|allocated|...,
	// afrinic|UG|ipv4|41.210.128.0|32768|20080206|allocated|...
	if m.Countries[20294] != "UG" {
		t.Errorf("AS20294 %q, want UG", m.Countries[20294])
	}
	if c := m.CountryOf(netip.MustParseAddr("41.210.130.1")); c != "UG" {
		t.Errorf("41.210.130.1 in %q, want UG", c)
	}
}

func TestDelegatedPlainAndRIPESerial(t *testing.T) {
	m, st := read(t, ReadDelegated, "delegated-apnic-20140701.gz")
	if st.Skipped != 0 || st.Lines != 5746+24065+3496 {
		t.Fatalf("lines %d skipped %d %v", st.Lines, st.Skipped, st.Errors)
	}
	if m.Countries[173] != "JP" || m.Countries[681] != "NZ" {
		t.Errorf("AS173 %q AS681 %q", m.Countries[173], m.Countries[681])
	}
	m, st = read(t, ReadDelegated, "delegated-ripencc-20140630.head1500.txt")
	if st.Skipped != 0 {
		t.Fatalf("skipped %v", st.Errors)
	}
	if st.Notes[0] != "registry ripencc, serial 1404165599 (2014-06-30)" {
		t.Errorf("note %q", st.Notes[0])
	}
	if len(st.Notes) != 4 || !strings.Contains(st.Notes[1], "a partial copy") {
		t.Errorf("notes %q: want the summary mismatch of a partial file", st.Notes)
	}
	// ripencc|FR|ipv4|2.0.0.0|1048576 is 2.0.0.0/12.
	if c, _ := m.PrefixCountries.Get(netip.MustParsePrefix("2.0.0.0/12")); c != "FR" {
		t.Errorf("2.0.0.0/12 %q, want FR", c)
	}
}

func TestDelegatedOddCounts(t *testing.T) {
	m := netmap.New()
	in := "2|test|20240101|3|0|0|+0000\n" +
		"test|GB|ipv4|192.0.2.0|96|20240101|allocated\n" +
		"test|GB|ipv4|255.255.255.0|512|20240101|allocated\n" +
		"test|DE|asn|64496|3|20240101|assigned\n" +
		"test||ipv4|198.51.100.0|256|20240101|available\n"
	st, err := ReadDelegated(strings.NewReader(in), m)
	if err != nil {
		t.Fatal(err)
	}
	// 96 addresses from 192.0.2.0: a /26 and a /27.
	for p, want := range map[string]string{"192.0.2.0/26": "GB", "192.0.2.64/27": "GB"} {
		if c, _ := m.PrefixCountries.Get(netip.MustParsePrefix(p)); c != want {
			t.Errorf("%s %q", p, c)
		}
	}
	if m.PrefixCountries.Len() != 2 || st.Skipped != 1 || !strings.Contains(st.Errors[0], "runs past the end") {
		t.Errorf("%d prefixes, stats %+v", m.PrefixCountries.Len(), st)
	}
	if m.Countries[64496] != "DE" || m.Countries[64498] != "DE" || m.Countries[64499] != "" {
		t.Errorf("asn range: %v", m.Countries)
	}
}

// mmdbSource reads a *.source.json.gz: a list of {prefix: record} objects.
func mmdbSource(t *testing.T, file string) map[string]map[string]any {
	t.Helper()
	var list []map[string]map[string]any
	if err := json.Unmarshal(gztest.ReadFile(t, filepath.Join("testdata", file)), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, e := range list {
		for k, v := range e {
			out[k] = v
		}
	}
	return out
}

// sourcePrefix reads a source prefix; "::5102:45c0/124" is how the MMDB
// sources write IPv4 81.2.69.192/28 (the IPv4 subtree of an IPv6 database).
func sourcePrefix(s string) netip.Prefix {
	p := netip.MustParsePrefix(s)
	if a := p.Addr(); a.Is6() && p.Bits() >= 96 && netip.MustParsePrefix("::/96").Contains(a) {
		b := a.As16()
		return netip.PrefixFrom(netip.AddrFrom4([4]byte(b[12:])), p.Bits()-96)
	}
	return p
}

func isoCode(rec map[string]any, key string) string {
	if c, ok := rec[key].(map[string]any); ok {
		s, _ := c["iso_code"].(string)
		return s
	}
	return ""
}

func TestMMDBAgainstSource(t *testing.T) {
	m := netmap.New()
	st, err := ReadMMDB("testdata/GeoLite2-ASN-Test.mmdb", m)
	if err != nil || st.Skipped != 0 {
		t.Fatal(err, st.Errors)
	}
	// The test data gives some ASes different organisations on different
	// networks; the name must be one of them.
	orgs := map[uint32][]string{}
	n := 0
	for ps, rec := range mmdbSource(t, "GeoLite2-ASN-Test.source.json.gz") {
		p := sourcePrefix(ps)
		want := uint32(rec["autonomous_system_number"].(float64))
		if got, _ := m.OriginAS(p.Addr()); got != want {
			t.Errorf("%s: origin %d, want %d", p, got, want)
		}
		if org, ok := rec["autonomous_system_organization"].(string); ok {
			orgs[want] = append(orgs[want], org)
		}
		n++
	}
	for asn, names := range orgs {
		if !slices.Contains(names, m.Names[asn]) {
			t.Errorf("AS%d: name %q, want one of %q", asn, m.Names[asn], names)
		}
	}
	if n < 100 || len(orgs) < 10 {
		t.Fatalf("%d source networks, %d named ASes", n, len(orgs))
	}

	for _, db := range []string{"GeoIP2-Country-Test", "GeoIP2-City-Test"} {
		m := netmap.New()
		st, err := ReadMMDB("testdata/"+db+".mmdb", m)
		if err != nil || st.Skipped != 0 {
			t.Fatal(err, st.Errors)
		}
		checked, regions := 0, 0
		for ps, rec := range mmdbSource(t, db+".source.json.gz") {
			p := sourcePrefix(ps)
			want := isoCode(rec, "country")
			if want == "" {
				want = isoCode(rec, "registered_country")
			}
			if want == "" {
				continue
			}
			if got := m.CountryOf(p.Addr()); got != want {
				t.Errorf("%s %s: country %q, want %q", db, p, got, want)
			}
			if subs, ok := rec["subdivisions"].([]any); ok && len(subs) > 0 {
				code, _ := subs[0].(map[string]any)["iso_code"].(string)
				if got := m.Region(p.Addr()); got != want+"-"+code {
					t.Errorf("%s %s: region %q, want %q", db, p, got, want+"-"+code)
				}
				regions++
			}
			checked++
		}
		if checked < 10 || db == "GeoIP2-City-Test" && regions < 5 {
			t.Fatalf("%s: only %d networks (%d with regions) checked", db, checked, regions)
		}
		t.Logf("%s: %d networks, %d regions checked against the source JSON", db, checked, regions)
	}
}

func TestBadLinesCountedAndSkipped(t *testing.T) {
	m := netmap.New()
	st, err := ReadASNames(strings.NewReader("64496\tGOOD - Good Net,GB\nbroken\n64497 SPACE - Spaced Net,FR\nx\ty\n"), m)
	if err != nil {
		t.Fatal(err)
	}
	if st.Lines != 4 || st.Skipped != 2 || m.Names[64496] != "Good Net" || m.Names[64497] != "Spaced Net" || m.Countries[64497] != "FR" {
		t.Fatalf("%+v %v %v", st, m.Names, m.Countries)
	}
	if st.Errors[0] != "line 2: want ASN<TAB>name" || st.Errors[1] != `line 4: AS number "x": not a number` {
		t.Errorf("%q", st.Errors)
	}
}
