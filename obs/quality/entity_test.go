package quality

import (
	"testing"

	"github.com/outagewatch/outagewatch/obs"
)

func TestPathEntity(t *testing.T) {
	cases := []struct {
		asn        uint32
		site, dest string
		want       string
	}{
		{1299, "lis01", "198.51.100.7", "path:1299@lis01>198.51.100.0/24"},
		{1299, "lis01", "198.51.100.0/28", "path:1299@lis01>198.51.100.0/24"},
		{1299, "lis01", "198.51.0.0/16", "path:1299@lis01>198.51.0.0/16"},
		{1299, "lis01", "::ffff:198.51.100.7", "path:1299@lis01>198.51.100.0/24"},
		{1299, "lis01", "2001:db8:7:1::9", "path:1299@lis01>2001:db8:7::/48"},
		{1299, "lis01", "fe80::1%eth0", "path:1299@lis01>fe80::/48"},
		{1299, "", "AS15169", "path:1299>as15169"},
		{3356, "mad02", "dns.example", "path:3356@mad02>dns.example"},
	}
	for _, c := range cases {
		got := PathEntity(c.asn, c.site, c.dest)
		if got != c.want {
			t.Errorf("PathEntity(%d, %q, %q) = %q, want %q", c.asn, c.site, c.dest, got, c.want)
		}
		tr, dest, ok := ParsePathEntity(got)
		if !ok || tr != obs.Transit(c.asn, c.site) || "path:"+tr[len("transit:"):]+">"+dest != got {
			t.Errorf("ParsePathEntity(%q) = %q %q %v", got, tr, dest, ok)
		}
		if k, _, err := obs.SplitEntity(got); err != nil || k != KindPath {
			t.Errorf("SplitEntity(%q) kind %q, %v", got, k, err)
		}
	}
	for _, bad := range []string{"transit:1299@lis01", "path:1299@lis01", "path:>x", "path:12x@a>b", "path:1299@lis01>", "path:1299@l:s>b"} {
		if tr, dest, ok := ParsePathEntity(bad); ok {
			t.Errorf("ParsePathEntity(%q) = %q %q, want not ok", bad, tr, dest)
		}
	}
}
