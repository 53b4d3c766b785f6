package series

// DayCodes fills codes[k] with Code(t − k days) for k = 0, 1, …: the same
// time of day on the days before t, as detectors comparing a bucket with
// past days read them. A ring of whole days keeps these codes side by
// side (its day-major layout), so the column is found once and read in a
// run instead of locating every code from scratch.
func (r *Ring) DayCodes(t int64, codes []uint16) {
	const day = int64(24 * 3600e9)
	if r.days == 1 {
		for k := range codes {
			codes[k] = r.Code(t - int64(k)*day)
		}
		return
	}
	k := 0
	// Days after the head are not held.
	for ; k < len(codes) && (r.last == 0 || t-int64(k)*day > r.last); k++ {
		codes[k] = codeMissing
	}
	if k == len(codes) {
		return
	}
	back := (r.last - (t - int64(k)*day)) / r.step
	if back >= int64(r.n) {
		clear(codes[k:])
		return
	}
	// Slot i sits in column i%perDay at row i/perDay; a day earlier is one
	// row up, wrapping within the column.
	i := r.index(int32(back))
	g, row := i%r.perDay, i/r.perDay
	col := uint32(g) * uint32(r.days)
	held := (int64(r.n) - 1 - back) / int64(r.perDay) // days before k still held
	// A grouped ring keeps the whole column in one word: decode it once.
	var group [maxGroupDays]uint8
	if r.grouped {
		r.loadGroup(g, &group)
	}
	for ; k < len(codes); k++ {
		if r.grouped {
			codes[k] = uint16(group[row])
		} else {
			codes[k] = uint16(r.getP(col + uint32(row)))
		}
		if held == 0 {
			clear(codes[k+1:])
			return
		}
		held--
		if row--; row < 0 {
			row = r.days - 1
		}
	}
}
