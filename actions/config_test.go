package actions

import (
	"os"
	"strings"
	"testing"
	"time"

	gobgpconfig "github.com/osrg/gobgp/v3/pkg/config"
)

func TestParseConfigExample(t *testing.T) {
	c, err := LoadConfig("../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeDryRun || c.MaxDownPerSite != 1 || c.Cooldown != 30*time.Minute || c.Hold != 30*time.Minute || c.GoBGP != "gobgp:50051" {
		t.Fatalf("%+v", c)
	}
	if tr := c.transit("ams01", 1299); tr == nil || tr.Name != "Telia" || strings.Join(tr.Sessions, ",") != "192.0.2.11,2001:db8::11" {
		t.Fatalf("ams01 AS1299: %+v", tr)
	}
	if c.Sites["ams01"].GoBGP != "gobgp:50051" {
		t.Fatalf("site gobgp %q", c.Sites["ams01"].GoBGP)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"mode: yes\nsites: {}\n", "x.yaml:1: mode \"yes\": want off, dry-run or enforce"},
		{"mode: enforce\n", "x.yaml:1: sites: want a mapping of site name to its transits"},
		{"mode: enforce\ncolldown: 5m\n", "x.yaml:2: unknown key \"colldown\""},
		{"cooldown: soon\n", "x.yaml:1: cooldown \"soon\": want a duration such as 30m"},
		{"max_down_per_site: 0\n", "x.yaml:1: max_down_per_site \"0\": want a whole number >= 1"},
		{"sites:\n  ams01:\n    transits:\n      - {asn: 1299, sessions: [10.0.0.300]}\n", "x.yaml:4: site ams01: session \"10.0.0.300\": not an IP address"},
		{"sites:\n  ams01:\n    transits:\n      - {asn: telia, sessions: [10.0.0.1]}\n", "x.yaml:4: site ams01: asn \"telia\": want a number such as 1299"},
		{"sites:\n  ams01:\n    transits:\n      - {asn: 1299, sessions: [10.0.0.1]}\n      - {asn: AS1299, sessions: [10.0.0.2]}\n", "x.yaml:5: site ams01: AS1299 listed twice"},
		{"sites:\n  ams01:\n    transits:\n      - {asn: 1299, sessions: [10.0.0.1]}\n  fra01:\n    transits:\n      - {asn: 3356, sessions: [10.0.0.1]}\n", "x.yaml:7: site fra01: session 10.0.0.1 already belongs to ams01 AS1299"},
		{"sites:\n  ams01:\n    transits:\n      - {asn: 1299}\n", "x.yaml:4: site ams01: AS1299: no sessions"},
		{"sites:\n  ams01:\n    routers: []\n", "x.yaml:3: site ams01: unknown key \"routers\""},
		{"sites: [\n", "x.yaml:1: did not find expected node content"},
	} {
		_, err := ParseConfig("x.yaml", []byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want prefix %q", c.doc, err, c.want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	b, err := os.ReadFile("../deploy/actions.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("sites:\n  a:\n    transits:\n      - {asn: 1, sessions: [::1]}\n"))
	f.Add([]byte("mode: [\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig("f.yaml", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml:") {
				t.Fatalf("error without file:line: %v", err)
			}
			return
		}
		for _, s := range c.Sites {
			if len(s.Transits) == 0 {
				t.Fatalf("site %s without transits accepted", s.Name)
			}
			for _, tr := range s.Transits {
				if tr.ASN == 0 || len(tr.Sessions) == 0 {
					t.Fatalf("bad transit accepted: %+v", tr)
				}
			}
		}
	})
}

func TestAuditSkipsMalformed(t *testing.T) {
	path := t.TempDir() + "/audit.jsonl"
	good := `{"seq":1,"id":"abc","time":"2019-06-20T12:15:00Z","who":"outagewatch","op":"shutdown","mode":"enforce","site":"ams01","asn":1299,"why":"loss"}`
	if err := os.WriteFile(path, []byte(good+"\n{\"op\":\"explode\"}\nnot json\n"+strings.Replace(good, "abc", "def", 1)+"\n{\"seq\":5"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := OpenAudit(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := a.Records()
	if len(recs) != 2 || recs[0].ID != "abc" || recs[1].ID != "def" || a.Skipped != 2 {
		t.Fatalf("records %+v skipped %d", recs, a.Skipped)
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(`{"seq":1,"id":"abc","time":"2019-06-20T12:15:00Z","who":"outagewatch","op":"shutdown","mode":"enforce","site":"ams01","asn":1299,"sessions":["192.0.2.1"],"why":"loss"}`))
	f.Add([]byte(`{"op":"restore"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRecord(b)
		if err == nil && (r.ID == "" || r.Site == "" || r.ASN == 0) {
			t.Fatalf("incomplete record accepted: %+v", r)
		}
	})
}

// The compose file's gobgpd knows every session deploy/actions.yaml would
// shut, with the transit's AS: the two files describe one deployment.
func TestGoBGPDConfigMatches(t *testing.T) {
	c, err := LoadConfig("../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := gobgpconfig.ReadConfigFile("../deploy/gobgpd.toml", "toml")
	if err != nil {
		t.Fatal(err)
	}
	peers := map[string]uint32{}
	for _, n := range set.Neighbors {
		peers[n.Config.NeighborAddress] = n.Config.PeerAs
	}
	for _, site := range c.SiteNames() {
		for _, tr := range c.Sites[site].Transits {
			for _, s := range tr.Sessions {
				if peers[s] != tr.ASN {
					t.Errorf("%s AS%d session %s: gobgpd.toml has it with AS %d", site, tr.ASN, s, peers[s])
				}
			}
		}
	}
}
