// Package words is the one place where outagewatch spells counts and
// units for people and for JSON consumers: plurals ("1 network", "2
// networks"), a signal unit in words ("/24 prefixes", not "slash24";
// "Mbit/s", not "Mbps") and the unit a JSON event states beside its values
// ("bytes/300s" for a count per five-minute bucket). Detectors, the
// correlator and the sinks all write through it, so a unit is named the
// same way in a summary, a Slack message and an event line.
package words

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Plural writes n with its noun, adding "s" (or "es" after s, x, ch and
// sh) when n is not 1: Plural(1, "view") is "1 view", Plural(3,
// "session") "3 sessions". Nouns that do not take a regular plural are
// written with PluralOf.
func Plural(n int, noun string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun)
}

// Noun is noun in the number n asks for, without the count.
func Noun(n int, noun string) string {
	if n == 1 {
		return noun
	}
	for _, suf := range []string{"s", "x", "ch", "sh"} {
		if strings.HasSuffix(noun, suf) {
			return noun + "es"
		}
	}
	return noun + "s"
}

// PluralOf writes n with one or many, for irregular nouns.
func PluralOf(n int, one, many string) string {
	if n == 1 {
		return strconv.Itoa(n) + " " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Unit writes a signal unit, as the signal registry spells it, for a
// person: "/24 prefixes" for slash24, "/48 prefixes" for slash48, "Mbit/s"
// for Mbps. Units already in words (bytes, ms, ratio, peers) pass through.
func Unit(unit string) string {
	switch unit {
	case "slash24":
		return "/24 prefixes"
	case "slash48":
		return "/48 prefixes"
	case "Mbps", "mbps":
		return "Mbit/s"
	}
	return unit
}

// Figure writes a value for a sentence: whole above 100 (2917, not
// 2.92e+03), otherwise to three significant figures, so that a telescope's
// mean of 0.8 sources is not written as 1.
func Figure(v float64) string {
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// JSONUnit is the unit a JSON event states beside observed and baseline
// values of a signal: the unit in words, and for a count summed over a
// bucket (perBucket) the bucket it is counted over, "bytes/300s". Values
// stay as the detectors judged them, so a consumer that divides by the
// bucket's seconds gets a rate per second.
func JSONUnit(unit string, perBucket bool, bucket time.Duration) string {
	u := Unit(unit)
	if u == "" {
		return ""
	}
	if perBucket && bucket > 0 {
		return u + "/" + strconv.FormatFloat(bucket.Seconds(), 'f', -1, 64) + "s"
	}
	return u
}
