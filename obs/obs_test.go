package obs

import (
	"strings"
	"testing"
)

func TestEntityNames(t *testing.T) {
	cases := map[string]string{
		ASN(5089):                "asn:5089",
		Country("pt"):            "country:PT",
		Region("pt-11"):          "region:PT-11",
		Zone("VirginMedia.com."): "zone:virginmedia.com",
		Transit(1299, "lis01"):   "transit:1299@lis01",
		Transit(1299, ""):        "transit:1299",
		DC("lis01"):              "dc:lis01",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	k, id, err := SplitEntity("asn:5089")
	if err != nil || k != "asn" || id != "5089" {
		t.Fatalf("SplitEntity = %q %q %v", k, id, err)
	}
	if _, _, err := SplitEntity("asn5089"); err == nil {
		t.Fatal("SplitEntity accepted a name without kind")
	}
}

func TestSignalRegistry(t *testing.T) {
	s, ok := Lookup("traffic_bytes")
	if !ok || s != TrafficBytes || s.String() != "traffic_bytes" || s.Def().Agg != Sum {
		t.Fatalf("Lookup(traffic_bytes) = %v %v", s, ok)
	}
	if _, ok := Lookup("nope"); ok {
		t.Fatal("Lookup found an unregistered signal")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a duplicate did not panic")
		}
	}()
	Register(SignalDef{Name: "traffic_bytes", Feed: FeedFlows, Agg: Sum})
}

func TestASNCacheAllocations(t *testing.T) {
	c := ASNCache{}
	c.Entity(5089)
	if n := testing.AllocsPerRun(100, func() { _ = c.Entity(5089) }); n != 0 {
		t.Fatalf("cached lookup allocates %v times", n)
	}
}

func TestDeclareIsIdempotentAndRefusesConflicts(t *testing.T) {
	d := SignalDef{Name: "test_declared_gauge", Unit: "/24s", Kind: KindGauge, Feed: "test-ext", Agg: Last, Cadence: 600e9}
	s1, err := Declare(d)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Declare(d)
	if err != nil || s2 != s1 {
		t.Fatalf("re-declaring the same definition: %v, %v (want %v)", s2, err, s1)
	}
	if got := s1.Def(); !got.Declared || got.Cadence != 600e9 || got.Feed != "test-ext" {
		t.Fatalf("definition read back as %+v", got)
	}
	if s, ok := Lookup("test_declared_gauge"); !ok || s != s1 {
		t.Fatalf("Lookup = %v %v", s, ok)
	}
	d.Cadence = 300e9
	if _, err := Declare(d); err == nil || !strings.Contains(err.Error(), "already declared differently") {
		t.Fatalf("a conflicting re-declaration: err %v", err)
	}
	if _, err := Declare(SignalDef{Name: "traffic_bytes", Unit: "bytes", Feed: FeedFlows, Agg: Sum}); err == nil ||
		!strings.Contains(err.Error(), "built in") {
		t.Fatalf("declaring a built-in name: err %v", err)
	}
	if _, err := Declare(SignalDef{Name: "x_no_feed", Agg: Sum}); err == nil {
		t.Fatal("a declaration without a feed was accepted")
	}
}

func TestParseAggregation(t *testing.T) {
	for _, a := range []Aggregation{Sum, Mean, Max, Last} {
		got, err := ParseAggregation(a.String())
		if err != nil || got != a {
			t.Errorf("ParseAggregation(%q) = %v, %v", a.String(), got, err)
		}
	}
	if _, err := ParseAggregation("custom"); err == nil {
		t.Error("custom accepted")
	}
}

// BenchmarkLookup finds a signal by name from every core at once, as
// stage-two tasks do for each partial entry.
func BenchmarkLookup(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := Lookup("traffic_bytes"); !ok {
				b.Fatal("traffic_bytes not found")
			}
		}
	})
}
