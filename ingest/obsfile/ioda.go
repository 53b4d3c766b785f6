package obsfile

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/linefile"
	"github.com/outagewatch/outagewatch/obs"
)

// IODA publishes its signals in two forms that an operator downloads as
// they come: the API's response (GET /v2/signals/raw/{type}/{code}, a JSON
// envelope whose data holds one time series per source, values from
// `from` every `step` seconds, null where there was no measurement) and a
// CSV of one entity (a Unix `timestamp` column, a column per source,
// often a hand label, `LABEL`). Both replay here as observations, each
// source as the signal the shipped IODA rules declare for it, so that
// neither needs rewriting first.

// IODASources maps the names IODA gives its outage signals' sources (the
// API's datasource, an export's column) to the signals the shipped IODA
// rules (examples/ioda/ioda.yaml) declare for them. Its telescope was
// UCSD's (ucsd-nt) before Merit's (merit-nt); where an entity has both,
// Merit's is replayed. Other sources (Google's traffic, Mozilla's, the
// probing loss and latency) have no signal of IODA's rules and are
// counted as skipped.
var IODASources = map[string]string{
	"bgp":          "bgp_visible_slash24",
	"ping-slash24": "active_probing_slash24",
	"merit-nt":     "telescope_sources",
	"ucsd-nt":      "telescope_sources",
}

// IODASignal is the signal IODA's source replays as, where merit says
// whether Merit's telescope (merit-nt) is among the sources of the same
// entity: UCSD's (ucsd-nt) then gives way to it. ok is false for a
// source that does not replay.
func IODASignal(source string, merit bool) (signal string, ok bool) {
	if source == "ucsd-nt" && merit {
		return "", false
	}
	signal, ok = IODASources[source]
	return signal, ok
}

// Reasons an IODA file's values are left out before decoding.
const (
	// SkipSource is a value of a source with no signal (IODASources), or
	// of UCSD's telescope beside Merit's.
	SkipSource = "datasource"
	// SkipNotNumber is a value that is not a number: the API gives some
	// sources (probing loss and latency) as objects a bucket.
	SkipNotNumber = "not_a_number"
	// SkipSeries is a value of a series whose start, step or entity is
	// missing, so that it has no time or place; SkipRow a CSV row without
	// a Unix timestamp, or of another length than the header.
	SkipSeries = "series"
	SkipRow    = "row"
)

// IODAStats counts the values of one IODA file by what became of them.
// Empty values (null, an empty cell) are gaps, not values: the series had
// no measurement then.
type IODAStats struct {
	// Values is the number of values read; Records those handed on.
	Values, Records int64
	// Skipped counts values left out, by reason (SkipSource, SkipNotNumber),
	// and FirstSkipped is the number (from 1) of the first, with its
	// source.
	Skipped      map[string]int64
	FirstSkipped int64
	FirstWhy     string
	// Averaged counts the API's series of a count (a signal the rules
	// declare with Poisson noise) whose step is wider than their native
	// one: each value the mean of several readings (a long range asked
	// for), which the rules judge as one.
	// Step and NativeStep are the first such series', in seconds.
	Averaged         int
	Step, NativeStep int64
	// Names is what the file calls its entities, where it says: the API's
	// entityName ("Gaza Strip" for region:1226), or an export's file name
	// (gazastrip). IODA's region codes are its own, which no ISO table
	// names.
	Names map[string]string
	// whole is, per signal the rules declare the mean of several counts
	// (obs.SignalDef.MeanOf), how many of its values above 0 were read
	// and how many of them were whole numbers; nil for any other signal,
	// so that each is looked up once.
	whole map[string]*[2]int64
}

// minWhole is how many values above 0 of a signal declared the mean of
// k counts must all be whole numbers before the file is said to hold
// single counts: such a mean is whole about one time in k, and 20 in a
// row (one chance in 5^20 for IODA's telescope, 10^-14) is no chance.
const minWhole = 20

// poisson tells whether the rules declared signal a count with Poisson
// sampling noise.
func poisson(signal string) bool {
	sig, ok := obs.Lookup(signal)
	return ok && sig.Def().Poisson
}

// Caveat says, when the API's series are averages (Averaged), what that
// does to their judgement, and how to get native steps; "" otherwise. A
// count's mean of k readings has 1/√k the sampling noise of one, which
// the rules' Poisson floor still grants it: a drop that is news may be
// taken for noise.
//
// It also says when a signal declared the mean of k counts (IODA's
// telescope) came as whole numbers only: single counts, whose sampling
// noise the rules take for √k times smaller than it is.
func (st *IODAStats) Caveat() string {
	var notes []string
	if st.Averaged > 0 {
		k := float64(st.Step) / float64(st.NativeStep)
		notes = append(notes, fmt.Sprintf("%d series are IODA's averages of %.3g readings (step %ds, native %ds), judged as one reading each: "+
			"a count's sampling noise reads %.3g times too large, and smaller drops pass unseen; ask the API for a shorter range to get native steps",
			st.Averaged, k, st.Step, st.NativeStep, math.Sqrt(k)))
	}
	for _, signal := range slices.Sorted(maps.Keys(st.whole)) {
		c := st.whole[signal]
		if c == nil || c[0] < minWhole || c[1] < c[0] {
			continue
		}
		sig, _ := obs.Lookup(signal)
		k := sig.Def().MeanOf
		notes = append(notes, fmt.Sprintf("all %d values of %s above 0 are whole numbers: single counts, not the means of %g that its declaration (counted_every) takes them for; "+
			"their sampling noise reads %.3g times too small, and chance falls may page", c[0], signal, k, math.Sqrt(k)))
	}
	return strings.Join(notes, "; ")
}

// shape counts, for a signal declared the mean of several counts, a
// value above 0 and whether it is whole.
func (st *IODAStats) shape(signal string, v float64) {
	if v <= 0 {
		return
	}
	c, ok := st.whole[signal]
	if !ok {
		if sig, found := obs.Lookup(signal); found && sig.Def().Poisson && sig.Def().MeanOf > 1 {
			c = new([2]int64)
		}
		if st.whole == nil {
			st.whole = map[string]*[2]int64{}
		}
		st.whole[signal] = c
	}
	if c != nil {
		c[0]++
		if v == math.Trunc(v) {
			c[1]++
		}
	}
}

// name records the first name the file gives entity.
func (st *IODAStats) name(entity, name string) {
	if st.Names == nil {
		st.Names = map[string]string{}
	}
	if _, ok := st.Names[entity]; !ok {
		st.Names[entity] = name
	}
}

func (st *IODAStats) skip(why, source string) {
	st.Values++
	if st.Skipped == nil {
		st.Skipped = map[string]int64{}
	}
	st.Skipped[why]++
	if st.FirstSkipped == 0 {
		st.FirstSkipped, st.FirstWhy = st.Values, skipText[why]
		if source != "" {
			st.FirstWhy = fmt.Sprintf("%s: %s", source, st.FirstWhy)
		}
	}
}

var skipText = map[string]string{
	SkipSource:    "no signal of the IODA rules (" + strings.Join(slices.Sorted(maps.Keys(IODASources)), ", ") + " have one)",
	SkipNotNumber: "a value that is not a number",
	SkipSeries:    "a series with no entity, start or step",
	SkipRow:       "a row with no Unix timestamp, or not as long as the header",
}

// emit hands on one value as an observation line, time in Unix seconds.
func (st *IODAStats) emit(sec int64, entity, signal string, v float64, fn func(ingest.Record) error) error {
	st.Values++
	st.Records++
	st.shape(signal, v)
	line := strconv.AppendInt(nil, sec, 10)
	line = append(line, ',')
	line = append(line, entity...)
	line = append(line, ',')
	line = append(line, signal...)
	line = append(line, ',')
	line = strconv.AppendFloat(line, v, 'g', -1, 64)
	// Offsets count from 0, as a replay numbers the records of a file
	// that is not lines.
	return fn(ingest.Record{Stream: Stream, Format: FormatCSV, Offset: st.Values - 1, Time: sec * 1e9, Value: line})
}

// IODAEntity is the entity of a file named as IODA names its exports,
// ioda_<kind>_<code>_<name>.csv with kind country, region or asn
// (ioda_country_IQ_iraq.csv.gz is country:IQ, ioda_region_1226_gazastrip
// region:1226): a CSV export has no entity column.
func IODAEntity(path string) (string, error) {
	parts := strings.Split(filepath.Base(path), "_")
	if len(parts) >= 3 && parts[0] == "ioda" {
		code := strings.TrimSuffix(strings.TrimSuffix(parts[2], ".gz"), ".csv")
		switch parts[1] {
		case "country", "region", "asn":
			if code != "" {
				return parts[1] + ":" + code, nil
			}
		}
	}
	return "", fmt.Errorf("%s: not named as IODA names its exports (ioda_country_IQ_iraq.csv, ioda_region_1226_gazastrip.csv, ioda_asn_20294_mtn.csv), the only place an export names its entity", path)
}

// IsIODAHeader reports whether the fields of a CSV's first line are an
// IODA export's: a timestamp column and at least one of IODA's sources.
func IsIODAHeader(fields []string) bool {
	if !slices.Contains(fields, "timestamp") {
		return false
	}
	return slices.ContainsFunc(fields, func(f string) bool { _, ok := IODASources[f]; return ok })
}

// IsIODAExport reports whether the CSV file at path is an IODA export
// (IsIODAHeader of its first line) rather than time,entity,signal,value
// lines.
func IsIODAExport(path string) (bool, error) {
	_, gz, err := FormatOf(path)
	if err != nil {
		return false, err
	}
	return linefile.ReadFile("obsfile", path, gz, func(r io.Reader) (bool, error) {
		var first []byte
		err := linefile.Scan(r, maxLine, func(_ int64, line []byte) error {
			first = bytes.Clone(line)
			return io.EOF
		})
		if err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		return IsIODAHeader(strings.Split(string(first), ",")), nil
	})
}

// ReadIODAFile reads an IODA file, the API's JSON (.json, .json.gz) or a
// CSV export (.csv, .csv.gz, its entity from its name), and calls fn with
// one observation a value, series by series or row by row.
func ReadIODAFile(path string, fn func(ingest.Record) error) (IODAStats, error) {
	name := strings.TrimSuffix(strings.ToLower(path), ".gz")
	gz := name != strings.ToLower(path)
	if strings.HasSuffix(name, ".json") {
		// One document, often one line: read to the cut, not to the
		// last whole line.
		return linefile.ReadDocument("ioda", path, gz, func(r io.Reader) (IODAStats, error) { return ReadIODAJSON(r, fn) })
	}
	entity, err := IODAEntity(path)
	if err != nil {
		return IODAStats{}, err
	}
	st, err := linefile.ReadFile("ioda", path, gz, func(r io.Reader) (IODAStats, error) { return ReadIODACSV(r, entity, fn) })
	if name := iodaFileName(path); name != "" {
		st.name(entity, name)
	}
	return st, err
}

// iodaFileName is the name an export's file gives its entity, after its
// code: gazastrip for ioda_region_1226_gazastrip.csv; "" for none.
func iodaFileName(path string) string {
	base := filepath.Base(path)
	for trimmed := ""; trimmed != base; {
		trimmed = base
		base = strings.TrimSuffix(strings.TrimSuffix(base, ".gz"), ".csv")
	}
	parts := strings.SplitN(base, "_", 4)
	if len(parts) < 4 {
		return ""
	}
	return parts[3]
}

// IsIODAFile reports whether the file at path replays as IODA's: a .json
// file (its API's response) or an IODA CSV export.
func IsIODAFile(path string) bool {
	name := strings.TrimSuffix(strings.ToLower(path), ".gz")
	if strings.HasSuffix(name, ".json") && !strings.HasSuffix(name, ".atlas.json") {
		return true
	}
	if !strings.HasSuffix(name, ".csv") {
		return false
	}
	ok, err := IsIODAExport(path)
	return err == nil && ok
}

// CheckIODASignals says, before an IODA file is judged, when the signals
// of its sources are not declared: they are not built in, a rules file
// declares them (examples/ioda/ioda.yaml), and without it every value
// would be refused one by one.
func CheckIODASignals() error {
	var undeclared []string
	for _, sig := range slices.Sorted(maps.Values(IODASources)) {
		if _, ok := obs.Lookup(sig); !ok && !slices.Contains(undeclared, sig) {
			undeclared = append(undeclared, sig)
		}
	}
	if len(undeclared) > 0 {
		return fmt.Errorf("an IODA file, and the signals of its sources (%s) are not declared: judge it with the IODA rules (--rules examples/ioda/ioda.yaml) or rules that declare them", strings.Join(undeclared, ", "))
	}
	return nil
}

// iodaSeries is one time series of the API's signals/raw response.
type iodaSeries struct {
	EntityType string            `json:"entityType"`
	EntityCode string            `json:"entityCode"`
	EntityName string            `json:"entityName"`
	Datasource string            `json:"datasource"`
	From       int64             `json:"from"`
	Step       int64             `json:"step"`
	NativeStep int64             `json:"nativeStep"`
	Values     []json.RawMessage `json:"values"`
}

// ReadIODAJSON reads the API's signals/raw response: an envelope whose
// data is a list (one per entity asked for) of lists of series, or, as
// some clients save it, the list of series alone. The envelope's error, if
// any, is the file's error.
//
// The response is read a series at a time, so that one cut short (a
// download cut off) replays the series before the cut and ends with an
// *ingest.TornError; the series are all read before any is replayed, as
// whether an entity has Merit's telescope decides UCSD's.
func ReadIODAJSON(r io.Reader, fn func(ingest.Record) error) (IODAStats, error) {
	var st IODAStats
	br := bufio.NewReader(r)
	if b, err := peekNonSpace(br); err == nil && b == '[' {
		return st, errors.New("a JSON array, not IODA's signals response: a .json file is read as IODA's; name a RIPE Atlas download *.atlas.json")
	}
	series, err := decodeIODAResponse(json.NewDecoder(br))
	var torn *ingest.TornError
	if err != nil && !errors.As(err, &torn) {
		return st, err
	}
	merit := map[string]bool{}
	for _, s := range series {
		if s.Datasource == "merit-nt" {
			merit[s.EntityType+":"+s.EntityCode] = true
		}
	}
	for i, s := range series {
		entity := s.EntityType + ":" + s.EntityCode
		placed := s.EntityType != "" && s.EntityCode != "" && s.Step > 0 && s.Step < maxSeconds && s.From > 0 && s.From < maxSeconds
		if name := strings.TrimSpace(s.EntityName); placed && name != "" {
			st.name(entity, name)
		}
		signal, ok := IODASignal(s.Datasource, merit[entity])
		if ok && s.NativeStep > 0 && s.Step > s.NativeStep && len(s.Values) > 0 && poisson(signal) {
			if st.Averaged == 0 {
				st.Step, st.NativeStep = s.Step, s.NativeStep
			}
			st.Averaged++
		}
		for k, raw := range s.Values {
			raw = bytes.TrimSpace(raw)
			if bytes.Equal(raw, []byte("null")) {
				continue
			}
			sec := s.From + int64(k)*s.Step
			if !placed || sec >= maxSeconds || sec < s.From {
				st.skip(SkipSeries, fmt.Sprintf("series %d (%s)", i, s.Datasource))
				continue
			}
			if !ok {
				st.skip(SkipSource, "source "+strconv.Quote(s.Datasource))
				continue
			}
			v, err := strconv.ParseFloat(string(raw), 64)
			if err != nil || math.IsInf(v, 0) {
				st.skip(SkipNotNumber, "source "+strconv.Quote(s.Datasource))
				continue
			}
			if err := st.emit(sec, entity, signal, v, fn); err != nil {
				return st, err
			}
		}
	}
	if torn != nil {
		return st, torn
	}
	return st, nil
}

// decodeIODAResponse reads the series of a signals response from dec, in
// order. A response that ends early returns the whole series before the
// cut with an *ingest.TornError.
func decodeIODAResponse(dec *json.Decoder) ([]iodaSeries, error) {
	notResponse := func(err error) error { return fmt.Errorf("not an IODA signals response (JSON): %w", err) }
	if t, err := dec.Token(); err != nil {
		return nil, notResponse(err)
	} else if t != json.Delim('{') {
		return nil, notResponse(fmt.Errorf("it begins with %v, not an object", t))
	}
	var series []iodaSeries
	cut := func(err error) ([]iodaSeries, error) {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return series, &ingest.TornError{Record: int64(len(series)),
				Err: fmt.Errorf("the response ends inside series %d: %w", len(series)+1, io.ErrUnexpectedEOF)}
		}
		return nil, err
	}
	data := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return cut(err)
		}
		switch t {
		case "error":
			var e json.RawMessage
			if err := dec.Decode(&e); err != nil {
				return cut(err)
			}
			if e = bytes.TrimSpace(e); len(e) > 0 && !bytes.Equal(e, []byte("null")) {
				return nil, fmt.Errorf("the response is IODA's error: %s", e)
			}
		case "data":
			data = true
			t, err := dec.Token()
			if err != nil {
				return cut(err)
			}
			if t == nil {
				continue // "data": null
			}
			if t != json.Delim('[') {
				return nil, fmt.Errorf(`not an IODA signals response: "data" is not a list (it begins with %v)`, t)
			}
			for i := 0; dec.More(); i++ {
				t, err := dec.Token()
				if err != nil {
					return cut(err)
				}
				// one reads a series of data[i], past its opening brace.
				one := func() error {
					s, err := decodeIODASeries(dec)
					if err != nil {
						return fmt.Errorf("data[%d]: %w", i, err)
					}
					series = append(series, s)
					return nil
				}
				switch t {
				case json.Delim('{'): // the list of series alone
					if err := one(); err != nil {
						return cut(err)
					}
				case json.Delim('['):
					for dec.More() {
						if t, err := dec.Token(); err != nil {
							return cut(err)
						} else if t != json.Delim('{') {
							return nil, fmt.Errorf("data[%d]: a series is an object, not %v", i, t)
						}
						if err := one(); err != nil {
							return cut(err)
						}
					}
					if _, err := dec.Token(); err != nil {
						return cut(err)
					}
				default:
					return nil, fmt.Errorf("data[%d]: want a list of series, not %v", i, t)
				}
			}
			if _, err := dec.Token(); err != nil {
				return cut(err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return cut(err)
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return cut(err)
	}
	if !data {
		return nil, errors.New(`not an IODA signals response: no "data" (want the body of GET /v2/signals/raw/{entityType}/{entityCode})`)
	}
	return series, nil
}

// decodeIODASeries reads the fields of one series from dec, past its
// opening brace, through its closing one.
func decodeIODASeries(dec *json.Decoder) (iodaSeries, error) {
	var s iodaSeries
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return s, err
		}
		var v any
		switch t {
		case "entityType":
			v = &s.EntityType
		case "entityCode":
			v = &s.EntityCode
		case "entityName":
			v = &s.EntityName
		case "datasource":
			v = &s.Datasource
		case "from":
			v = &s.From
		case "step":
			v = &s.Step
		case "nativeStep":
			v = &s.NativeStep
		case "values":
			v = &s.Values
		default:
			v = new(json.RawMessage)
		}
		if err := dec.Decode(v); err != nil {
			return s, fmt.Errorf("%v: %w", t, err)
		}
	}
	_, err := dec.Token()
	return s, err
}

// peekNonSpace is the first byte of r after white space, left unread.
func peekNonSpace(r *bufio.Reader) (byte, error) {
	for {
		b, err := r.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			r.Discard(1)
		default:
			return b[0], nil
		}
	}
}

// ReadIODACSV reads an IODA export of entity: a header with a
// `timestamp` column (Unix seconds) and a column per source; columns of
// no source (a LABEL, datetime strings) are not values. An empty cell is
// a gap.
func ReadIODACSV(r io.Reader, entity string, fn func(ingest.Record) error) (IODAStats, error) {
	var st IODAStats
	cr := csv.NewReader(r)
	cr.ReuseRecord, cr.FieldsPerRecord = true, -1
	head, err := cr.Read()
	if err != nil {
		return st, fmt.Errorf("line 1: %w", err)
	}
	head = slices.Clone(head)
	if !IsIODAHeader(head) {
		return st, fmt.Errorf("line 1: header %.80q: want an IODA export's (timestamp and at least one of %s)", strings.Join(head, ","), strings.Join(slices.Sorted(maps.Keys(IODASources)), ", "))
	}
	ts := slices.Index(head, "timestamp")
	merit := slices.Contains(head, "merit-nt")
	signals := make([]string, len(head))
	skipped := make([]bool, len(head))
	for i, h := range head {
		if i == ts || strings.EqualFold(h, "label") || strings.EqualFold(h, "datetime") {
			continue
		}
		var ok bool
		signals[i], ok = IODASignal(h, merit)
		skipped[i] = !ok
	}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return st, nil
		}
		var perr *csv.ParseError
		if errors.As(err, &perr) {
			st.skip(SkipRow, fmt.Sprintf("line %d", line))
			continue
		}
		if err != nil {
			return st, fmt.Errorf("line %d: %w", line, err)
		}
		if len(rec) != len(head) {
			st.skip(SkipRow, fmt.Sprintf("line %d", line))
			continue
		}
		// Unix seconds, written by some exports as a float.
		f, err := strconv.ParseFloat(strings.TrimSpace(rec[ts]), 64)
		sec := int64(f)
		if err != nil || !(f > 0 && f < float64(maxSeconds)) {
			st.skip(SkipRow, fmt.Sprintf("line %d", line))
			continue
		}
		for i, cell := range rec {
			cell = strings.TrimSpace(cell)
			if cell == "" || (signals[i] == "" && !skipped[i]) {
				continue
			}
			if skipped[i] {
				st.skip(SkipSource, "source "+strconv.Quote(head[i]))
				continue
			}
			if strings.EqualFold(cell, "nan") {
				// Exports write a gap as nan as often as they leave it
				// empty.
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
				st.skip(SkipNotNumber, fmt.Sprintf("line %d, %s", line, head[i]))
				continue
			}
			if err := st.emit(sec, entity, signals[i], v, fn); err != nil {
				return st, err
			}
		}
	}
}
