package mapdata

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/netmap"
)

// seedLines adds the first lines of a testdata file as one seed.
func seedLines(f *testing.F, file string, n int) {
	r, err := Open("testdata/" + file)
	if err != nil {
		f.Fatal(err)
	}
	defer r.Close()
	var b bytes.Buffer
	_ = lines(r, func(i int, l string) {
		if i <= n {
			b.WriteString(l + "\n")
		}
	})
	f.Add(b.String())
}

// checkMap fails if a reader left something in m that the mapping file
// could not hold: every country a two-letter upper-case code.
func checkMap(t *testing.T, m *netmap.Map, st Stats) {
	t.Helper()
	if st.Skipped > st.Lines || len(st.Errors) > maxErrors {
		t.Fatalf("stats %+v", st)
	}
	for asn, cc := range m.Countries {
		if _, ok := countryCode(cc); !ok || cc != strings.ToUpper(cc) {
			t.Fatalf("AS%d country %q", asn, cc)
		}
	}
	var buf bytes.Buffer
	if err := netmap.Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/m.yaml", buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := netmap.LoadFile(nil, dir+"/m.yaml")
	if err != nil {
		t.Fatalf("written map does not load: %v\n%s", err, buf.Bytes())
	}
	for asn, n := range m.Names {
		if back.Names[asn] != n {
			t.Fatalf("AS%d name %q came back %q", asn, n, back.Names[asn])
		}
	}
	if back.Origins.Len() != m.Origins.Len() || back.PrefixCountries.Len() != m.PrefixCountries.Len() {
		t.Fatalf("prefixes %d/%d came back %d/%d", m.Origins.Len(), m.PrefixCountries.Len(), back.Origins.Len(), back.PrefixCountries.Len())
	}
}

func fuzzReader(f *testing.F, rd Reader) {
	f.Fuzz(func(t *testing.T, in string) {
		m := netmap.New()
		st, err := rd(strings.NewReader(in), m)
		if err != nil {
			return // only an overlong line
		}
		checkMap(t, m, st)
	})
}

func FuzzASNames(f *testing.F) {
	seedLines(f, "potaroo-asn.txt.head4000", 40)
	seedLines(f, "as2org-sample.txt", 20)
	f.Add("1251\tFUNDA\xc7\xc3O - X,BR\n0\t-Reserved AS-,ZZ\n4294967295\tNAME - \"quoted\" \\ org,gb\n")
	fuzzReader(f, ReadASNames)
}

func FuzzAS2Org(f *testing.F) {
	seedLines(f, "as2org-sample.txt", 20)
	f.Add("# format:aut|changed|aut_name|org_id|opaque_id|source\n1|2|N|O|x|ARIN\n# format:org_id|changed|name|country|source\nO|1|Org \xe9|de|RIPE\n")
	fuzzReader(f, ReadAS2Org)
}

func FuzzPfx2AS(f *testing.F) {
	seedLines(f, "ipasn_20140513.head8000.dat", 30)
	seedLines(f, "ipasn6_20151101.v6part.dat", 30)
	f.Add("1.0.0.0\t24\t13335\n1.0.4.0\t22\t38803_56203\n1.0.8.0\t21\t{64496,64497}\n::/0\t1\n")
	fuzzReader(f, ReadPfx2AS)
}

func FuzzIP2ASN(f *testing.F) {
	seedLines(f, "ip2asn-v4.tsv", 30)
	f.Add("2001:db8::\t2001:db8::ffff\t64496\tNone\tNot routed\n1.0.0.0\t0.0.0.1\t1\tUS\tx\n0.0.0.0\t255.255.255.255\t5\tgb\n")
	fuzzReader(f, ReadIP2ASN)
}

func FuzzDelegated(f *testing.F) {
	seedLines(f, "delegated-afrinic-extended-20240105.gz", 30)
	seedLines(f, "delegated-apnic-20140701.gz", 60)
	seedLines(f, "delegated-ripencc-20140630.head1500.txt", 30)
	f.Add("2|t|1404165599|1|0|0|+0\nt|GB|ipv4|255.255.255.0|512|0|allocated\nt|DE|asn|4294967290|100|0|assigned\nt|FR|ipv6|2001:db8::|129|0|allocated\n")
	fuzzReader(f, ReadDelegated)
}

func FuzzMMDB(f *testing.F) {
	for _, db := range []string{"GeoLite2-ASN-Test.mmdb", "GeoIP2-Country-Test.mmdb"} {
		b, err := os.ReadFile("testdata/" + db)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m := netmap.New()
		st, err := ReadMMDBBytes(b, m)
		if err != nil {
			return
		}
		checkMap(t, m, st)
	})
}

func FuzzRIB(f *testing.F) {
	for _, r := range ribRecords(f) {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m := netmap.New()
		st := ReadRIBBytes([][]byte{b}, m)
		checkMap(t, m, st)
	})
}
