package obsfile

import (
	"strings"

	"github.com/outagewatch/outagewatch/obs"
)

// seriesCache turns the (signal, entity text) of a line into what the sink
// needs, so that an export repeating the same entities on every line
// neither re-validates nor re-allocates them, nor makes the sink look the
// name up again:
//
//   - into an obs.SeriesSink (the pipeline's aggregator), the number of the
//     series, once the sink has one: a series' first observation goes by
//     name, which creates it, and every later one by number;
//   - into any other sink, and for series the sink does not number (custom
//     signals, or one whose only observations so far were late), the
//     normalised entity name.
//
// Memory is bounded by what the sink itself keeps, not by a count that
// stops caching at some size. A number is cached only for a series that
// exists in the sink, and for at most maxSpellings spellings of it, each
// at most maxSpelling bytes: at most maxSpellings entries per series of
// the sink, whose own cost per series (history, open bucket, detector
// state: kilobytes) is a hundred times that of an entry. Lines whose
// entity is malformed cache nothing. Names, which no series count bounds
// (a sink that does not number series; lines that create no series), are
// a working set of maxNames spellings: past it a new one replaces one at
// random, so the cache keeps working for any export whose entities fit in
// it and degrades to normalising each line, never to growing.
type seriesCache struct {
	// numbered is the sink whose series numbers ids holds.
	numbered obs.SeriesSink
	// ids maps the spellings of entities to series numbers, one map per
	// signal (by its number), so that a lookup hashes a plain string.
	ids []map[string]int32
	// nIDs counts the entries of ids; spellings counts them per series
	// number.
	nIDs      int
	spellings []uint8
	names     map[string]string
}

const (
	// maxSpellings is how many spellings of one series get its number
	// cached: an export uses one ("asn:5089"), a merge of two exports
	// perhaps two ("asn:AS5089" too).
	maxSpellings = 4
	// maxSpelling bounds the length of a cached spelling other than the
	// normalised name itself (which the sink keeps anyway), so that
	// padding an entity with blanks cannot make one entry large.
	maxSpelling = 256
	// maxNames is the working set of entity names.
	maxNames = 1 << 16
)

func newSeriesCache() *seriesCache {
	return &seriesCache{names: map[string]string{}}
}

// resolve returns the number of the series (sig, raw) in sink when sink
// numbers its series and the number is known (id ≥ 0); otherwise id is -1
// and ent is the normalised entity, to observe by name and then to pass to
// learn.
func (c *seriesCache) resolve(sink obs.Sink, sig obs.Signal, raw string) (id int32, ent string, err error) {
	ss, _ := sink.(obs.SeriesSink)
	if ss != c.numbered {
		c.numbered = ss
		c.ids, c.nIDs, c.spellings = nil, 0, c.spellings[:0]
	}
	if ss != nil && int(sig) < len(c.ids) {
		if id, ok := c.ids[sig][raw]; ok {
			return id, "", nil
		}
	}
	if ent, ok := c.names[raw]; ok {
		return -1, ent, nil
	}
	ent, err = normalizeEntity(raw)
	if err != nil {
		return -1, "", err
	}
	return -1, ent, nil
}

// observe hands value v at time t to sink: by number when resolve gave
// one, else by name through o (the decoder's reused observation), after
// which the series' number or name is learnt.
func (c *seriesCache) observe(sink obs.Sink, o *obs.Observation, id int32, t int64, sig obs.Signal, raw, ent string, v float64) {
	if id >= 0 {
		c.numbered.ObserveSeries(id, t, v)
		return
	}
	*o = obs.Observation{Time: t, Signal: sig, Entity: ent, Value: v}
	sink.Observe(o)
	c.learn(sig, raw, ent)
}

// learn remembers what resolve found for (sig, raw) after ent was
// observed by name: its series number when the sink now has one, else its
// name.
func (c *seriesCache) learn(sig obs.Signal, raw, ent string) {
	// The entity the sink was given is the key's text when they are equal:
	// the sink keeps that string as its series' name, so the entry costs
	// no bytes of its own.
	canonical := raw == ent
	if !canonical && len(raw) > maxSpelling {
		return
	}
	if ss := c.numbered; ss != nil {
		if id, ok := ss.SeriesID(sig, ent); ok {
			for int(id) >= len(c.spellings) {
				c.spellings = append(c.spellings, 0)
			}
			if c.spellings[id] < maxSpellings {
				c.spellings[id]++
				for int(sig) >= len(c.ids) {
					c.ids = append(c.ids, nil)
				}
				if c.ids[sig] == nil {
					c.ids[sig] = map[string]int32{}
				}
				c.ids[sig][c.keep(raw, ent)] = id
				c.nIDs++
			}
			return
		}
	}
	if _, ok := c.names[raw]; ok {
		return
	}
	if len(c.names) >= maxNames {
		for k := range c.names { // map iteration starts at random
			delete(c.names, k)
			break
		}
	}
	c.names[c.keep(raw, ent)] = ent
}

// keep returns raw as a string of its own: ent when they are equal, else a
// copy, as raw points into the decoder's line buffer.
func (c *seriesCache) keep(raw, ent string) string {
	if raw == ent {
		return ent
	}
	return strings.Clone(raw)
}
