package correlate

// Place is where an entity belongs for grouping: its country, its transit,
// its owner's country for a zone, else the entity itself. A scaled-out
// second stage keys each series by it, so that everything one event may
// group, and every level the correlator reads, lands in one partition.
func (c *Correlator) Place(entity string) string { return c.place(entity) }
