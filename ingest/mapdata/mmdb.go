package mapdata

import (
	"fmt"
	"strings"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/outagewatch/outagewatch/netmap"
)

// mmdbRecord holds the fields outagewatch reads from the MaxMind-format
// databases (GeoIP2/GeoLite2 Country, City and ASN, and the free DB-IP and
// IPinfo files that share their layout).
type mmdbRecord struct {
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	RegisteredCountry struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"registered_country"`
	Subdivisions []struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"subdivisions"`
	ASN   uint32 `maxminddb:"autonomous_system_number"`
	ASOrg string `maxminddb:"autonomous_system_organization"`
}

// ReadMMDB walks every network of a MaxMind DB file: country databases give
// each prefix a country (its located country, else its registered one), city
// databases also a region (country and first subdivision, "GB-ENG"), ASN
// databases an origin and the AS's name. IPv4 networks reached through the
// IPv6 tree's aliases (::ffff:0:0/96, 2002::/16) are read once, as IPv4.
func ReadMMDB(path string, m *netmap.Map) (Stats, error) {
	db, err := maxminddb.Open(path)
	if err != nil {
		return Stats{Format: "mmdb"}, fmt.Errorf("open: %w", err)
	}
	defer db.Close()
	return readMMDB(db, m)
}

// ReadMMDBBytes is ReadMMDB on a database already in memory.
func ReadMMDBBytes(b []byte, m *netmap.Map) (Stats, error) {
	db, err := maxminddb.OpenBytes(b)
	if err != nil {
		return Stats{Format: "mmdb"}, fmt.Errorf("open: %w", err)
	}
	return readMMDB(db, m)
}

func readMMDB(db *maxminddb.Reader, m *netmap.Map) (Stats, error) {
	st := Stats{Format: "mmdb"}
	st.Notes = append(st.Notes, fmt.Sprintf("database %s, built %s", db.Metadata.DatabaseType, db.Metadata.BuildTime().UTC().Format("2006-01-02")))
	for res := range db.Networks() {
		st.Lines++
		if err := res.Err(); err != nil {
			// A broken tree cannot be walked further.
			return st, fmt.Errorf("network %d: %w", st.Lines, err)
		}
		p := res.Prefix()
		var rec mmdbRecord
		if err := res.Decode(&rec); err != nil {
			st.skip(st.Lines, "network %s: %v", p, err)
			continue
		}
		if !p.IsValid() {
			st.skip(st.Lines, "network without a prefix")
			continue
		}
		if p.Addr().Is4In6() {
			continue
		}
		p = p.Masked()
		cc, ok := countryCode(rec.Country.ISOCode)
		if !ok {
			cc, ok = countryCode(rec.RegisteredCountry.ISOCode)
		}
		if ok {
			m.PrefixCountries.Insert(p, cc)
			st.PrefixCountries++
			if len(rec.Subdivisions) > 0 && rec.Subdivisions[0].ISOCode != "" {
				m.Regions.Insert(p, cc+"-"+strings.ToUpper(rec.Subdivisions[0].ISOCode))
				st.Regions++
			}
		}
		if rec.ASN != 0 {
			m.Origins.Insert(p, rec.ASN)
			st.Origins++
			if rec.ASOrg != "" {
				m.Names[rec.ASN] = rec.ASOrg
				st.Names++
			}
		}
	}
	return st, nil
}
