package chart

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Unit says how to print values: Name after the number, and whether to
// use SI prefixes (k, M, G) for large values.
type Unit struct {
	Name string
	SI   bool
	// Percent values are ratios (0.25) printed as percentages (25 %).
	Percent bool
}

// Units of the signals outagewatch charts.
var (
	BitsPerSecond    = Unit{Name: "bit/s", SI: true}
	PacketsPerSecond = Unit{Name: "packets/s", SI: true}
	QueriesPerSecond = Unit{Name: "queries/s", SI: true}
	Milliseconds     = Unit{Name: "ms"}
	Percent          = Unit{Name: "%", Percent: true}
)

// niceTicks returns about n round values covering lo..hi (steps of 1, 2 or
// 5 times a power of ten) and the new range they span.
func niceTicks(lo, hi float64, n int) (ticks []float64, nlo, nhi float64) {
	span := hi - lo
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		span = 1
	}
	raw := span / float64(max(n-1, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	nlo = math.Floor(lo/step) * step
	nhi = math.Ceil(hi/step) * step
	for v := nlo; v <= nhi+step/1e6; v += step {
		ticks = append(ticks, math.Round(v/step)*step)
	}
	return ticks, nlo, nhi
}

var siPrefixes = []struct {
	f float64
	p string
}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}

// Format prints v in unit u with just enough digits to tell ticks step
// apart: "40 Gbit/s", "2.5 Gbit/s", "22 ms", "12.5 %".
func (u Unit) Format(v, step float64) string {
	if u.Percent {
		v, step = v*100, step*100
	}
	prefix := ""
	if u.SI {
		for _, p := range siPrefixes {
			if math.Abs(v) >= p.f || step >= p.f {
				v, step, prefix = v/p.f, step/p.f, p.p
				break
			}
		}
	}
	// As many decimals as the step needs (2.5 needs one), or three
	// significant digits for a lone value.
	digits := 0
	if step > 0 {
		for digits < 4 {
			x := step * math.Pow(10, float64(digits))
			if math.Abs(x-math.Round(x)) < 1e-6*x {
				break
			}
			digits++
		}
	} else if av := math.Abs(v); av > 0 {
		digits = max(0, min(3, 2-int(math.Floor(math.Log10(av)))))
	}
	s := strconv.FormatFloat(v, 'f', digits, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	name := u.Name
	if prefix != "" {
		name = prefix + name
	}
	if name == "" {
		return s
	}
	return s + " " + name
}

// timeSteps are the tick spacings a time axis may use.
var timeSteps = []time.Duration{
	5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour,
}

// timeTick is a tick on the time axis: its time, its hour label and, at
// the first tick and each new day, the date under it.
type timeTick struct {
	T          time.Time
	Hour, Date string
}

// timeTicks returns ticks on round local times between from and to, at most
// about n of them.
func timeTicks(from, to time.Time, loc *time.Location, n int) []timeTick {
	span := to.Sub(from)
	step := timeSteps[len(timeSteps)-1]
	for _, s := range timeSteps {
		if span/s <= time.Duration(n) {
			step = s
			break
		}
	}
	lf := from.In(loc)
	var t time.Time
	if step >= 24*time.Hour {
		t = time.Date(lf.Year(), lf.Month(), lf.Day(), 0, 0, 0, 0, loc)
	} else {
		t = lf.Truncate(time.Minute)
		// Align to the step within the local day.
		day := time.Date(lf.Year(), lf.Month(), lf.Day(), 0, 0, 0, 0, loc)
		since := lf.Sub(day)
		t = day.Add((since + step - 1) / step * step)
	}
	for t.Before(from) {
		t = t.Add(step)
	}
	var out []timeTick
	lastDay := ""
	for ; !t.After(to); t = nextTick(t, step, loc) {
		lt := t.In(loc)
		tk := timeTick{T: t, Hour: lt.Format("15:04")}
		day := lt.Format("Mon 2 Jan 2006")
		if day != lastDay {
			tk.Date = lt.Format("Mon 2 Jan")
			if lastDay == "" {
				tk.Date = lt.Format("Mon 2 Jan 2006")
			}
			lastDay = day
		}
		if step >= 24*time.Hour {
			tk.Hour = ""
		}
		out = append(out, tk)
	}
	return out
}

// nextTick steps in local time, so ticks stay on round hours across a
// daylight-saving change.
func nextTick(t time.Time, step time.Duration, loc *time.Location) time.Time {
	if step >= 24*time.Hour {
		lt := t.In(loc)
		return time.Date(lt.Year(), lt.Month(), lt.Day()+int(step/(24*time.Hour)), 0, 0, 0, 0, loc)
	}
	return t.Add(step)
}

// zoneName returns "UTC" or "CEST (UTC+2)".
func zoneName(t time.Time, loc *time.Location) string {
	name, off := t.In(loc).Zone()
	if off == 0 {
		return "UTC"
	}
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	h, m := off/3600, off%3600/60
	o := fmt.Sprintf("UTC%s%d", sign, h)
	if m != 0 {
		o += fmt.Sprintf(":%02d", m)
	}
	if name == "" || strings.HasPrefix(name, "+") || strings.HasPrefix(name, "-") {
		return o
	}
	return name + " (" + o + ")"
}
