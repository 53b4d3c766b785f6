package obs

// SeriesSink is a Sink that numbers its series. A decoder that meets the
// same few entities in every record (a flow collector's eyeball networks,
// their countries) asks once for the number of each series and observes
// by number from then on, so that no entity name is looked up per record.
type SeriesSink interface {
	Sink
	// SeriesID returns the number of the series (sig, entity), valid for
	// the life of the sink, once the series exists: ok is false before its
	// first observation has arrived through Observe, and always for a
	// custom signal, whose accumulator reads the whole Observation.
	// Numbers are dense, from 0, one per series the sink has, so that a
	// caller can keep what it knows per series in a slice indexed by them.
	SeriesID(sig Signal, entity string) (id int32, ok bool)
	// ObserveSeries adds value v at event time t (Unix ns) to the series
	// numbered id, exactly as Observe would.
	ObserveSeries(id int32, t int64, v float64)
}
