package score

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/ingest/linefile"
	"github.com/outagewatch/outagewatch/ingest/obsfile"
	"github.com/outagewatch/outagewatch/internal/yamlerr"
)

// BoardSet is one real labelled set on the scoreboard: which files, read
// how, judged by which rules, and its labels.
//
//	name: ioda-gaza-2023
//	rules: ../examples/ioda/ioda.yaml     # relative to this file
//	format: ioda-csv                      # or atlas-rtt
//	files: [ioda-labelled/ioda_region_1226_gazastrip.csv.gz]  # relative to the data directory
//	entity: "region:1226"
//	columns: {bgp: bgp_visible_slash24, ping-slash24: active_probing_slash24, merit-nt: telescope_sources}
//	windows:                              # ioda-csv: written from the file's LABEL column
//	  - {from: 2023-10-27T17:30:00Z, to: 2023-10-29T03:35:00Z}
//
// For an IODA export, entity, columns and windows may be left out: the
// entity is then read from the file's name as IODA names its exports
// (obsfile.IODAEntity), the columns are IODA's sources the file has (obsfile.IODASources),
// and the windows are the file's LABEL column (LabelWindows). So an
// export nobody here has seen is scored as it comes.
type BoardSet struct {
	Name    string            `yaml:"name"`
	Rules   string            `yaml:"rules"`
	Format  string            `yaml:"format"`
	Files   []string          `yaml:"files"`
	Entity  string            `yaml:"entity"`
	Columns map[string]string `yaml:"columns"`
	Windows []Window          `yaml:"windows"`
	// File is where the set was read from.
	File string `yaml:"-"`
}

// Formats of labelled sets the scoreboard reads.
const (
	// FormatIODACSV is IODA's per-entity CSV: a Unix timestamp column, one
	// column per source, and LABEL (1 inside a labelled outage).
	FormatIODACSV = "ioda-csv"
	// FormatAtlasRTT is a labelled RTT trace, `epoch;rtt;cp`: time as
	// dd/mm/yyyy HH:MM (or yyyy-mm-dd HH:MM:SS) UTC or Unix seconds, RTT
	// in ms (negative: lost), cp 1 at a hand-labelled change point (see
	// ParseAtlasRTT). The file's name holds the probe id.
	FormatAtlasRTT = "atlas-rtt"
)

// LoadBoardSet reads and checks a set file; errors carry file:line.
func LoadBoardSet(file string) (*BoardSet, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("scoreboard: %w", err)
	}
	doc, err := parseDoc(file, b)
	if err != nil {
		return nil, err
	}
	var s BoardSet
	if err := yamlerr.Decode(file, b, &s); err != nil {
		return nil, err
	}
	s.File = file
	line := func(key string) int {
		if len(doc.Content) > 0 {
			top := doc.Content[0]
			for k := 0; k+1 < len(top.Content); k += 2 {
				if top.Content[k].Value == key {
					return top.Content[k].Line
				}
			}
		}
		return 1
	}
	switch {
	case s.Name == "":
		return nil, fmt.Errorf("%s:1: missing name", file)
	case s.Rules == "":
		return nil, fmt.Errorf("%s:1: missing rules (a rules file or directory, relative to this file)", file)
	case len(s.Files) == 0:
		return nil, fmt.Errorf("%s:1: missing files (relative to the data directory)", file)
	}
	switch s.Format {
	case FormatIODACSV:
		if s.Entity != "" {
			if _, _, ok := strings.Cut(s.Entity, ":"); !ok {
				return nil, fmt.Errorf("%s:%d: entity %q: want kind:name (country:IQ, region:1226, asn:64512)", file, line("entity"), s.Entity)
			}
		}
	case FormatAtlasRTT:
		if len(s.Windows) > 0 {
			return nil, fmt.Errorf("%s:%d: format %s is labelled by its own change points: no windows:", file, line("windows"), s.Format)
		}
	default:
		return nil, fmt.Errorf("%s:%d: format %q: want %s or %s", file, line("format"), s.Format, FormatIODACSV, FormatAtlasRTT)
	}
	for i, w := range s.Windows {
		if !w.To.After(w.From) {
			return nil, fmt.Errorf("%s:%d: windows[%d]: to must be after from", file, line("windows"), i)
		}
	}
	return &s, nil
}

// RulesPath is the set's rules relative to the set file.
func (s *BoardSet) RulesPath() string {
	if s.Rules == "" || filepath.IsAbs(s.Rules) {
		return s.Rules
	}
	return filepath.Join(filepath.Dir(s.File), s.Rules)
}

// Paths expands the set's files (globs) under the data directory, sorted.
func (s *BoardSet) Paths(data string) ([]string, error) {
	var out []string
	for _, f := range s.Files {
		if !filepath.IsAbs(f) {
			f = filepath.Join(data, f)
		}
		m, err := filepath.Glob(f)
		if err != nil {
			return nil, fmt.Errorf("%s: files: %w", s.File, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: files: %s: no such file (is --data the directory of the labelled sets?)", s.File, f)
		}
		out = append(out, m...)
	}
	slices.Sort(out)
	return out, nil
}

// openMaybeGzip opens path, gunzipped when it ends in .gz, past a leading
// byte order mark (linefile.SkipBOM).
func openMaybeGzip(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	}
	return struct {
		io.Reader
		io.Closer
	}{linefile.SkipBOM(r), f}, nil
}

// IODARow is one row of an IODA CSV: its time, the value of each source
// column (NaN when empty) and its label.
type IODARow struct {
	Time   time.Time
	Values map[string]float64
	Label  bool
}

// ReadIODACSV reads an IODA CSV with a timestamp (Unix seconds) and a
// LABEL column.
func ReadIODACSV(path string) ([]IODARow, error) {
	rc, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return ParseIODACSV(path, rc)
}

// ParseIODACSV reads an IODA CSV from in; path names it in errors.
func ParseIODACSV(path string, in io.Reader) ([]IODARow, error) {
	r := csv.NewReader(bufio.NewReader(in))
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	ts, lab := slices.Index(head, "timestamp"), slices.IndexFunc(head, isLabelColumn)
	if ts < 0 || lab < 0 {
		return nil, fmt.Errorf("%s:1: want timestamp and LABEL columns, have %s", path, strings.Join(head, ","))
	}
	var rows []IODARow
	lines := map[int64]int{}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		f, ok := unixSeconds(strings.TrimSpace(rec[ts]))
		if !ok {
			return nil, fmt.Errorf("%s:%d: timestamp %q: not a Unix time in seconds", path, line, rec[ts])
		}
		sec := int64(f)
		if before, dup := lines[sec]; dup {
			return nil, fmt.Errorf("%s:%d: timestamp %d again (line %d): which row's values and label hold?", path, line, sec, before)
		}
		lines[sec] = line
		row := IODARow{Time: time.Unix(sec, 0).UTC(), Values: map[string]float64{}, Label: marked(rec[lab])}
		for i, h := range head {
			if i == ts || i == lab {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil {
				v = math.NaN()
			}
			row.Values[h] = v
		}
		rows = append(rows, row)
	}
	// An export is in time order; one that is not is read as if it were.
	slices.SortStableFunc(rows, func(a, b IODARow) int { return a.Time.Compare(b.Time) })
	return rows, nil
}

// nonName is what an entity made of a file's name leaves out.
var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// marked reports whether a hand label's cell marks its row (an outage's
// LABEL, a trace's change point): 1, 1.0 or true, as labels are written.
func marked(cell string) bool {
	cell = strings.TrimSpace(cell)
	return cell == "1" || cell == "1.0" || strings.EqualFold(cell, "true")
}

// isLabelColumn reports whether a column of an IODA export is its hand
// label: LABEL, or label in any case.
func isLabelColumn(name string) bool { return strings.EqualFold(strings.TrimSpace(name), "label") }

// SniffFormat tells a labelled file's format by its header: an IODA
// export's has timestamp and LABEL columns, an RTT trace's is
// epoch;rtt;cp.
func SniffFormat(path string) (string, error) {
	rc, err := openMaybeGzip(path)
	if err != nil {
		return "", fmt.Errorf("scoreboard: %w", err)
	}
	defer rc.Close()
	head, err := bufio.NewReader(rc).ReadString('\n')
	if err != nil && head == "" {
		return "", fmt.Errorf("%s: header: %w", path, err)
	}
	head = strings.TrimSpace(head)
	cols := strings.Split(head, ",")
	if slices.Contains(cols, "timestamp") && slices.ContainsFunc(cols, isLabelColumn) {
		return FormatIODACSV, nil
	}
	if _, _, ok := rttHeader(head); ok {
		return FormatAtlasRTT, nil
	}
	return "", fmt.Errorf("%s:1: header %.80q: want an IODA export's (timestamp, its sources, LABEL) or an RTT trace's (epoch;rtt;cp)", path, head)
}

// IODAFile is how one file of an IODA set is replayed and scored.
type IODAFile struct {
	Entity  string
	Columns map[string]string
	Windows []Window
}

// ForIODAFile is the set's entity, columns and windows for the file at
// path, whose rows are rows: the set's own where it names them, else
// those read from the file (see BoardSet).
func (s *BoardSet) ForIODAFile(path string, rows []IODARow) (IODAFile, error) {
	f := IODAFile{Entity: s.Entity, Columns: s.Columns, Windows: s.Windows}
	if f.Entity == "" {
		e, err := obsfile.IODAEntity(path)
		if err != nil {
			// Scored, the entity names only the series: the IODA rules
			// judge countries, regions and networks alike.
			e = "region:" + strings.Trim(nonName.ReplaceAllString(strings.ToLower(strings.Split(filepath.Base(path), ".")[0]), "-"), "-")
			slog.Warn("scoreboard: an IODA export whose name gives no entity (ioda_<kind>_<code>_….csv), scored as "+e, "file", path, "err", err)
		}
		f.Entity = e
	}
	if len(f.Columns) == 0 && len(rows) > 0 {
		f.Columns = map[string]string{}
		_, merit := rows[0].Values["merit-nt"]
		for c := range rows[0].Values {
			if sig, ok := obsfile.IODASignal(c, merit); ok {
				f.Columns[c] = sig
			}
		}
		if len(f.Columns) == 0 {
			return f, fmt.Errorf("%s: no columns: the set names none, and the file has none of IODA's sources (%s)", path, strings.Join(slices.Sorted(maps.Keys(obsfile.IODASources)), ", "))
		}
	}
	if len(f.Windows) == 0 {
		f.Windows = LabelWindows(rows)
	}
	return f, nil
}

// LabelWindows turns a labelled column into windows: each run of labelled
// rows is [its first row's time, the next row's time); a run that ends
// the file lasts one step more (the file's first spacing; IODA's 5
// minutes in a file of one row).
func LabelWindows(rows []IODARow) []Window {
	step := 5 * time.Minute
	if len(rows) > 1 {
		step = rows[1].Time.Sub(rows[0].Time)
	}
	var out []Window
	for i := 0; i < len(rows); i++ {
		if !rows[i].Label {
			continue
		}
		j := i
		for j+1 < len(rows) && rows[j+1].Label {
			j++
		}
		end := rows[j].Time.Add(step)
		if j+1 < len(rows) {
			end = rows[j+1].Time
		}
		out = append(out, Window{From: rows[i].Time, To: end})
		i = j
	}
	return out
}

// ReadAtlasRTT reads a labelled RTT trace (FormatAtlasRTT).
func ReadAtlasRTT(path string) ([]Sample, error) {
	rc, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return ParseAtlasRTT(path, rc)
}

// ParseAtlasRTT reads a labelled RTT trace from in; path names it in
// errors. The header names the columns epoch, rtt and cp, in any order,
// separated by ";" or ","; epoch is a date (dd/mm/yyyy HH:MM[:SS] or
// yyyy-mm-dd HH:MM[:SS], UTC, or RFC 3339) or Unix seconds, as the
// column's name says; cp is 1 (or true) at a change point. Blank lines
// are skipped; a line that cannot be read is the file's error, naming
// it, as a label read wrong would score wrong.
func ParseAtlasRTT(path string, in io.Reader) ([]Sample, error) {
	sc := bufio.NewScanner(in)
	var out []Sample
	var sep string
	var col [3]int
	for line := 1; sc.Scan(); line++ {
		// Some of the labelled files end their lines with CR LF.
		text := strings.TrimSpace(sc.Text())
		if line == 1 {
			var ok bool
			if sep, col, ok = rttHeader(text); !ok {
				return nil, fmt.Errorf("%s:1: header %.80q: want the columns epoch, rtt and cp (epoch;rtt;cp)", path, text)
			}
			continue
		}
		if text == "" {
			continue
		}
		parts := strings.Split(text, sep)
		if len(parts) != 3 {
			return nil, fmt.Errorf("%s:%d: want 3 fields separated by %q, have %d", path, line, sep, len(parts))
		}
		t, err := rttTime(strings.TrimSpace(parts[col[0]]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		rtt, err := rttValue(parts[col[1]])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: rtt: %w", path, line, err)
		}
		out = append(out, Sample{Time: t.UTC(), RTT: rtt, CP: marked(parts[col[2]])})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// rttValue reads an RTT in milliseconds. A sample with no RTT is a lost
// ping, however the program that wrote the trace says nothing: a
// negative number (Atlas' -1, the labelled traces' -3), an empty cell,
// or NaN, NA, null or None as data-frame libraries write a missing
// value. Anything else that is not a finite number is the file's error.
func rttValue(field string) (float64, error) {
	field = strings.TrimSpace(field)
	switch strings.ToLower(field) {
	case "", "nan", "na", "null", "none":
		return -1, nil
	}
	rtt, err := strconv.ParseFloat(field, 64)
	if err == nil && (math.IsNaN(rtt) || math.IsInf(rtt, 0)) {
		err = fmt.Errorf("%q is not a number of milliseconds", field)
	}
	return rtt, err
}

// rttHeader reads a labelled trace's header: its separator and where
// its epoch, rtt and cp columns are.
func rttHeader(line string) (sep string, col [3]int, ok bool) {
	sep = ";"
	if !strings.Contains(line, sep) {
		sep = ","
	}
	names := strings.Split(line, sep)
	if len(names) != 3 {
		return sep, col, false
	}
	for i, want := range []string{"epoch", "rtt", "cp"} {
		j := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(strings.TrimSpace(n), want) })
		if j < 0 {
			return sep, col, false
		}
		col[i] = j
	}
	return sep, col, true
}

// unixSeconds reads s as Unix seconds, which some files write as a
// float: ok only between 1970 and 2242 (2³³ seconds), so that a time in
// milliseconds is not read as one.
func unixSeconds(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && f > 0 && f < 1<<33
}

// rttTime reads a trace's epoch: Unix seconds, or a date in one of the
// layouts labelled traces are written in, UTC.
func rttTime(s string) (time.Time, error) {
	if sec, ok := unixSeconds(s); ok {
		return time.Unix(0, int64(sec*1e9)).UTC(), nil
	}
	for _, layout := range []string{"02/01/2006 15:04", "02/01/2006 15:04:05", time.DateTime, "2006-01-02 15:04", time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("epoch %q: want dd/mm/yyyy HH:MM, yyyy-mm-dd HH:MM:SS or Unix seconds", s)
}
