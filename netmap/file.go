package netmap

import (
	"fmt"
	"net/netip"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// mapFile is the YAML form of a mapping file:
//
//	asns:
//	  5089: {country: GB, name: Virgin Media}
//	prefixes:
//	  - {prefix: 62.252.0.0/14, origin: 5089, region: GB-ENG}
type mapFile struct {
	ASNs map[uint32]struct {
		Country string `yaml:"country"`
		Name    string `yaml:"name"`
	} `yaml:"asns"`
	Prefixes []struct {
		Prefix string `yaml:"prefix"`
		Origin uint32 `yaml:"origin"`
		Region string `yaml:"region"`
	} `yaml:"prefixes"`
}

// LoadFile reads a mapping file into m (which it returns, new if nil).
// Errors name the file and the entry.
func LoadFile(m *Map, file string) (*Map, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	var f mapFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("mapping %s: %w", file, err)
	}
	if m == nil {
		m = New()
	}
	for asn, a := range f.ASNs {
		if len(a.Country) != 2 && a.Country != "" {
			return nil, fmt.Errorf("mapping %s: AS%d: country %q is not a two-letter code", file, asn, a.Country)
		}
		m.Countries[asn] = strings.ToUpper(a.Country)
		m.Names[asn] = a.Name
	}
	for i, p := range f.Prefixes {
		pfx, err := netip.ParsePrefix(p.Prefix)
		if err != nil {
			return nil, fmt.Errorf("mapping %s: prefixes[%d]: %w", file, i, err)
		}
		if p.Origin != 0 {
			m.Origins.Insert(pfx, p.Origin)
		}
		if p.Region != "" {
			m.Regions.Insert(pfx, strings.ToUpper(p.Region))
		}
	}
	return m, nil
}
