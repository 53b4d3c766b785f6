package main

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/netmap"
)

const metaDir = "../../ingest/mapdata/testdata/"

// netmap build from the real samples, checked against lines of the
// sources themselves.
func TestNetmapBuildFromRealSamples(t *testing.T) {
	args := []string{
		"delegated:" + metaDir + "delegated-afrinic-extended-20240105.gz",
		"delegated:" + metaDir + "delegated-ripencc-20140630.head1500.txt",
		"asnames:" + metaDir + "potaroo-asn.txt.head4000",
		"ip2asn:" + metaDir + "ip2asn-v4.tsv",
		"pfx2as:" + metaDir + "ipasn_20140513.head8000.dat",
		"pfx2as:" + metaDir + "ipasn6_20151101.v6part.dat",
		"mmdb:" + metaDir + "GeoIP2-City-Test.mmdb",
	}
	m, err := buildMap(args)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "map.yaml")
	if err := writeMap(file, m, args); err != nil {
		t.Fatal(err)
	}
	back, err := netmap.LoadFile(nil, file)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := lookup(&out, back, []string{"1.0.0.1", "2001:200::1", "41.210.130.1", "81.2.69.160", "1.1.1.1", "asn:3", "asn:1916", "asn:20294", "country:ES"}); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		// pyasn 2014: 1.0.0.0/24 15169; ip2asn: 8.8.8.0 8.8.8.255 15169 US
		// GOOGLE - Google LLC. No country for the prefix: APNIC's file is
		// not among the sources.
		"1.0.0.1\torigin Google LLC (AS15169) [US]",
		// pyasn v6: 2001:200::/32 2500; potaroo: 2500 WIDE-BB WIDE Project,JP
		// (no " - ", so the whole description).
		"2001:200::1\torigin WIDE-BB WIDE Project (AS2500) [JP]",
		// AFRINIC: afrinic|UG|ipv4|41.210.128.0|32768|...|allocated.
		"41.210.130.1\torigin unknown\tcountry UG (Uganda)",
		// MaxMind City test data: 81.2.69.160/27 GB, subdivision ENG.
		"81.2.69.160\torigin unknown\tcountry GB (United Kingdom)\tregion GB-ENG",
		// ip2asn: 1.1.1.1 1.1.1.1 7497 CN.
		"1.1.1.1\torigin CSTNET-AS-AP Computer Network Information Center (AS7497) [CN]\tcountry CN (China)",
		"asn:3\tMassachusetts Institute of Technology (AS3)",
		"asn:1916\tAssociação Rede Nacional de Ensino e Pesquisa (AS1916)",
		// AFRINIC gives AS20294 a country but none of the samples a name.
		"asn:20294\tAS20294",
		"country:ES\tSpain",
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("lookup:\n%s\nwant:\n%s", out.String(), want)
	}
	if back.Countries[20294] != "UG" || back.Origins.Len() != m.Origins.Len() || back.PrefixCountries.Len() != m.PrefixCountries.Len() {
		t.Errorf("round trip: AS20294 %q, origins %d/%d, countries %d/%d", back.Countries[20294],
			back.Origins.Len(), m.Origins.Len(), back.PrefixCountries.Len(), m.PrefixCountries.Len())
	}
	if _, ok := back.Origins.Get(netip.MustParsePrefix("2001::/32")); !ok {
		t.Error("2001::/32 (pyasn v6, AS6939) lost in the file")
	}
}

func TestNetmapBuildBadArguments(t *testing.T) {
	for arg, want := range map[string]string{
		"asn.txt":          `"asn.txt": want FORMAT:PATH`,
		"geo:x.mmdb":       `unknown format "geo"`,
		"asnames:/no/such": "/no/such: open /no/such: no such file or directory",
		"pfx2as:" + metaDir + "potaroo-asn.txt.head4000": "none of its 4000 lines is pfx2as",
	} {
		_, err := buildMap([]string{arg})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to say %q", arg, err, want)
		}
	}
}

// The Uganda replay, asked for by bare name, names MTN as people do.
func TestUgandaAlertsNameNetworks(t *testing.T) {
	out, _, err := run(t, "replay", "uganda-2021-01-13")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Kind, Entity, Status, Summary string
			Labels                        map[string]string
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Kind != "alert" {
			continue // outage events are named by their title
		}
		switch ev.Entity {
		case "asn:20294":
			if ev.Labels["display"] != "MTN Uganda (AS20294)" || ev.Labels["name"] != "MTN Uganda" ||
				!strings.Contains(ev.Summary, "MTN Uganda (AS20294)") || strings.Contains(ev.Summary, "asn:20294") {
				t.Errorf("MTN alert: labels %v, summary %q", ev.Labels, ev.Summary)
			}
			seen[ev.Entity]++
		case "country:UG":
			if ev.Labels["display"] != "Uganda" {
				t.Errorf("UG alert: labels %v", ev.Labels)
			}
			seen[ev.Entity]++
		}
	}
	if seen["asn:20294"] < 2 || seen["country:UG"] < 2 {
		t.Fatalf("alerts seen %v: want MTN's and Uganda's, firing and resolved", seen)
	}
}
