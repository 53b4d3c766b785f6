package obs

import "testing"

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
