package netmap

import (
	"strconv"
	"strings"
)

// CountryName returns the English name of an ISO 3166-1 alpha-2 code, or
// the code itself when the table does not know it: a reader should see
// "Spain", but an unknown code must still say something.
func CountryName(cc string) string {
	cc = strings.ToUpper(cc)
	if n, ok := countryNames[cc]; ok {
		return n
	}
	return cc
}

// ASName returns "MTN Uganda (AS20294)", or "AS20294" when the map has no
// name: the number stays in the text because operators search for it.
func (m *Map) ASName(asn uint32) string {
	num := "AS" + strconv.FormatUint(uint64(asn), 10)
	if m == nil {
		return num
	}
	if n := m.Names[asn]; n != "" {
		return n + " (" + num + ")"
	}
	return num
}

// Name returns what a person reading an alert calls an entity:
//
//	asn:20294            MTN Uganda (AS20294)
//	country:ES           Spain
//	region:PT-11         Lisboa, Portugal (PT-11)
//	region:1226          Gaza Strip (region 1226), as its input named it
//	transit:1299@ams01   Arelion (AS1299) at ams01
//	zone:example.com     example.com
//
// Entities it cannot read come back unchanged.
func (m *Map) Name(entity string) string {
	kind, id, ok := strings.Cut(entity, ":")
	if !ok || id == "" {
		return entity
	}
	var given string
	if m != nil {
		given = m.Given[entity]
	}
	switch kind {
	case "asn":
		if n, err := strconv.ParseUint(id, 10, 32); err == nil {
			if given != "" && m.Names[uint32(n)] == "" {
				return given + " (AS" + id + ")"
			}
			return m.ASName(uint32(n))
		}
	case "country":
		return CountryName(id)
	case "region":
		code := strings.ToUpper(id)
		if len(code) > 3 && code[2] == '-' {
			if n, ok := countryNames[code[:2]]; ok {
				if r := RegionName(code); r != "" {
					return r + ", " + n + " (" + code + ")"
				}
				return code + ", " + n
			}
		}
		// A code of no ISO table (IODA numbers its regions): "region
		// 1226" says what the number is.
		if given != "" {
			return given + " (region " + id + ")"
		}
		return "region " + id
	case "transit":
		as, site, _ := strings.Cut(id, "@")
		if n, err := strconv.ParseUint(as, 10, 32); err == nil {
			if site != "" {
				return m.ASName(uint32(n)) + " at " + site
			}
			return m.ASName(uint32(n))
		}
	case "zone", "dc", "site":
		return id
	case "feed":
		return "the " + id + " feed"
	}
	return entity
}

// Annotate returns an alert's labels with "display" set to the entity's
// Name, and its summary with the raw entity replaced by that name, so a
// notification reads "MTN Uganda (AS20294)" rather than "asn:20294". The
// labels map is copied, never changed: the caller may share it.
func (m *Map) Annotate(entity, summary string, labels map[string]string) (string, map[string]string) {
	name := m.Name(entity)
	if name == entity {
		return summary, labels
	}
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	if _, ok := out["display"]; !ok {
		out["display"] = name
	}
	return replaceEntity(summary, entity, name), out
}

// replaceEntity replaces whole occurrences of entity in s: "asn:2029" must
// not match inside "asn:20294".
func replaceEntity(s, entity, name string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, entity)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(entity)
		b.WriteString(s[:i])
		if end < len(s) && isEntityByte(s[end]) {
			b.WriteString(entity)
		} else {
			b.WriteString(name)
		}
		s = s[end:]
	}
}

func isEntityByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_'
}
