package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/outagewatch/outagewatch/ingest/mapdata"
	"github.com/outagewatch/outagewatch/netmap"
)

func init() { extraCommands = append(extraCommands, netmapCmd) }

func netmapCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "netmap",
		Short: "Build and query the mapping file: AS names and countries, prefix origins, countries and regions",
	}
	c.AddCommand(netmapBuildCmd(), netmapLookupCmd())
	return c
}

// fileFormats are the formats read from a path rather than a stream.
var fileFormats = map[string]func(string, *netmap.Map) (mapdata.Stats, error){
	"mmdb": mapdata.ReadMMDB,
	"rib":  mapdata.ReadRIB,
}

func formatNames() string {
	var n []string
	for k := range mapdata.Formats {
		n = append(n, k)
	}
	for k := range fileFormats {
		n = append(n, k)
	}
	slices.Sort(n)
	return strings.Join(n, ", ")
}

func netmapBuildCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "build --out FILE FORMAT:PATH...",
		Short: "Build the mapping file the pipeline loads (--map, the service's map:) from downloaded metadata",
		Long: `build reads network metadata in the formats operators download and writes one
mapping file. Each argument is FORMAT:PATH (gzip and bzip2 are read as
they are); sources are read in order, and a later one overrides an earlier
one for the same AS or prefix, so put the one you trust most last:

  asnames    potaroo-style asn.txt: ASN<TAB>HANDLE - Organisation,CC
  as2org     CAIDA's YYYYMMDD.as-org2info.txt (for those licensed to use it)
  pfx2as     pyasn IPASN files, CAIDA RouteViews pfx2as files
  ip2asn     iptoasn.com ip2asn-v4.tsv / -v6 / -combined
  delegated  RIR delegated statistics, extended or plain
  mmdb       MaxMind-format databases: Country, City (regions), ASN
  rib        MRT TABLE_DUMP_V2 RIB dumps (RouteViews rib.*, RIS bview.*)

Lines that do not parse are counted and skipped; the first few are logged
with their line numbers.`,
		Example: `  outagewatch netmap build --out /var/lib/outagewatch/map.yaml \
    delegated:delegated-afrinic-extended-latest asnames:asn.txt \
    pfx2as:ipasn_20240101.dat mmdb:GeoLite2-City.mmdb`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("netmap build: --out FILE is required")
			}
			m, err := buildMap(args)
			if err != nil {
				return err
			}
			return writeMap(out, m, args)
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "mapping file to write (- for stdout)")
	return c
}

// buildMap reads every FORMAT:PATH argument into one map, in order.
func buildMap(args []string) (*netmap.Map, error) {
	m := netmap.New()
	for _, a := range args {
		format, path, ok := strings.Cut(a, ":")
		if !ok || path == "" {
			return nil, fmt.Errorf("netmap build: %q: want FORMAT:PATH (formats: %s)", a, formatNames())
		}
		start := time.Now()
		var st mapdata.Stats
		var err error
		if rd, ok := mapdata.Formats[format]; ok {
			st, err = readSource(path, rd, m)
		} else if rd, ok := fileFormats[format]; ok {
			st, err = rd(path, m)
		} else {
			return nil, fmt.Errorf("netmap build: %q: unknown format %q (formats: %s)", a, format, formatNames())
		}
		if err != nil {
			return nil, fmt.Errorf("netmap build: %s: %w", path, err)
		}
		slog.Info("netmap source", "format", format, "file", path, "lines", st.Lines, "skipped", st.Skipped,
			"names", st.Names, "as_countries", st.Countries, "origins", st.Origins,
			"prefix_countries", st.PrefixCountries, "regions", st.Regions, "elapsed", time.Since(start).Round(time.Millisecond))
		for _, n := range st.Notes {
			slog.Info("netmap source", "file", path, "note", n)
		}
		for _, e := range st.Errors {
			slog.Warn("netmap source: line skipped", "file", path, "reason", e)
		}
		if st.Lines > 0 && st.Skipped == st.Lines {
			return nil, fmt.Errorf("netmap build: %s: none of its %d lines is %s (first: %s)", path, st.Lines, format, st.Errors[0])
		}
	}
	return m, nil
}

func readSource(path string, rd mapdata.Reader, m *netmap.Map) (mapdata.Stats, error) {
	f, err := mapdata.Open(path)
	if err != nil {
		return mapdata.Stats{}, err
	}
	defer f.Close()
	return rd(f, m)
}

// writeMap writes m to file through a temporary file and a rename, so a
// service watching the file never reads half of it.
func writeMap(file string, m *netmap.Map, args []string) error {
	header := []string{"outagewatch mapping file, written by `outagewatch netmap build` from (later overrides earlier):"}
	for _, a := range args {
		format, path, _ := strings.Cut(a, ":")
		header = append(header, "  "+format+": "+filepath.Base(path))
	}
	if file == "-" {
		return netmap.Write(os.Stdout, m, header...)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := netmap.Write(tmp, m, header...); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	slog.Info("netmap written", "file", file, "asns", len(m.Names), "as_countries", len(m.Countries),
		"origins", m.Origins.Len(), "prefix_countries", m.PrefixCountries.Len(), "regions", m.Regions.Len())
	return nil
}

func netmapLookupCmd() *cobra.Command {
	var mapFile string
	c := &cobra.Command{
		Use:     "lookup --map FILE ADDRESS|ENTITY...",
		Short:   "Show what a mapping file says about addresses (origin, country, region) and entities (their display names)",
		Example: `  outagewatch netmap lookup --map map.yaml 41.210.130.1 asn:20294 country:ES`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := netmap.LoadFile(nil, mapFile)
			if err != nil {
				return err
			}
			return lookup(cmd.OutOrStdout(), m, args)
		},
	}
	c.Flags().StringVar(&mapFile, "map", "", "mapping file")
	_ = c.MarkFlagRequired("map")
	return c
}

func lookup(w io.Writer, m *netmap.Map, args []string) error {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	for _, a := range args {
		addr, err := netip.ParseAddr(a)
		if err != nil {
			fmt.Fprintf(bw, "%s\t%s\n", a, m.Name(a))
			continue
		}
		fmt.Fprintf(bw, "%s", addr)
		if as, ok := m.OriginAS(addr); ok {
			fmt.Fprintf(bw, "\torigin %s", m.ASName(as))
			if c := m.Country(as); c != "" {
				fmt.Fprintf(bw, " [%s]", c)
			}
		} else {
			fmt.Fprintf(bw, "\torigin unknown")
		}
		if c := m.CountryOf(addr); c != "" {
			fmt.Fprintf(bw, "\tcountry %s (%s)", c, netmap.CountryName(c))
		}
		if r := m.Region(addr); r != "" {
			fmt.Fprintf(bw, "\tregion %s", r)
		}
		fmt.Fprintln(bw)
	}
	return nil
}
