// Package yamlerr words the errors of the YAML decoder for the person
// who wrote the file. The decoder speaks of Go's types ("field sinkz not
// found in type service.Config", "cannot unmarshal !!int `7` into
// time.Duration"); an operator reading a config, rules or actions file
// wants the line, the key that is wrong, and what it takes instead
// ("unknown key \"sinkz\"", "want a duration such as 30s, 5m or 168h,
// not 7"). The files an operator writes (the service's config, rules,
// actions, Traffic Manager scenarios, labels, scoreboard sets, the mapping
// file) report through here, so that they all read alike.
package yamlerr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Split returns the line an error from decoding a YAML file names (0
// when it names none) and its reason, reworded. Of several type errors,
// the first is told and the others counted.
func Split(err error) (line int, reason string) {
	line, reason, _ = split(err, nil)
	return line, reason
}

// split is Split, and the value at fault when the error is one a value's
// own parser gave (a time, a duration), which the decoder passes on with
// no line: Decode finds the line by it.
func split(err error, v any) (line int, reason, value string) {
	msg := err.Error()
	more := 0
	var te *yaml.TypeError
	var pe *time.ParseError
	switch {
	case errors.As(err, &te) && len(te.Errors) > 0:
		msg, more = te.Errors[0], len(te.Errors)-1
	case errors.As(err, &pe):
		return 0, "want a time such as 2025-04-28T10:30:00Z, not " + pe.Value, pe.Value
	}
	if m := durationRE.FindStringSubmatch(msg); m != nil {
		return 0, "want a duration such as 30s, 5m or 168h, not " + m[1], m[1]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	msg = reword(msg, v)
	switch more {
	case 0:
	case 1:
		msg += " (and 1 more error)"
	default:
		msg += fmt.Sprintf(" (and %d more errors)", more)
	}
	return line, msg, ""
}

// Wrap is Split as one error, "FILE:LINE: reason" ("FILE: reason" when
// the decoder names no line).
func Wrap(file string, err error) error {
	line, msg := Split(err)
	return at(file, line, msg)
}

// Decode decodes the YAML document b into v, refusing keys v's types do
// not have; an error is Wrap's, an unknown key told with the key meant,
// or the keys there are, and a time or duration that does not parse with
// the line it is on. An empty document leaves v as it is: what it lacks
// is for the caller's checks to say.
func Decode(file string, b []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	err := dec.Decode(v)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	line, msg, value := split(err, v)
	if line == 0 && value != "" {
		line = lineOf(b, value)
	}
	return at(file, line, msg)
}

func at(file string, line int, msg string) error {
	if line == 0 {
		return fmt.Errorf("%s: %s", file, msg)
	}
	return fmt.Errorf("%s:%d: %s", file, line, msg)
}

// lineOf is the line of the first scalar in document b whose value is
// value; 0 if none is. Where two keys hold the same bad value, the first
// is named: the decoder does not say which it was.
func lineOf(b []byte, value string) int {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil {
		return 0
	}
	var find func(n *yaml.Node) int
	find = func(n *yaml.Node) int {
		if n.Kind == yaml.ScalarNode && n.Value == value {
			return n.Line
		}
		for _, c := range n.Content {
			if l := find(c); l != 0 {
				return l
			}
		}
		return 0
	}
	return find(&doc)
}

var (
	lineRE      = regexp.MustCompile(`^line (\d+): `)
	durationRE  = regexp.MustCompile(`^time: (?:invalid duration|unknown unit .* in duration|missing unit in duration) "(.*)"$`)
	unknownRE   = regexp.MustCompile("^field (.+) not found in type (.+)$")
	unmarshalRE = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
)

// reword turns one of the decoder's messages (without "yaml: line N: ")
// into the file's words; a message it does not know is returned as it is.
// v, when given, is what was decoded into: an unknown key is told with
// the keys of its section there.
func reword(msg string, v any) string {
	if m := unknownRE.FindStringSubmatch(msg); m != nil {
		var keys []string
		if v != nil {
			keys = typeKeys(reflect.TypeOf(v), m[2])
		}
		return Unknown(m[1], "", keys)
	}
	m := unmarshalRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	tag, value, goType := m[1], m[2], m[3]
	var got string
	switch tag {
	case "seq":
		got = "a list"
	case "map":
		got = "a mapping"
	case "null":
		got = "nothing"
	default:
		got = value
	}
	return fmt.Sprintf("want %s, not %s", want(goType, tag), got)
}

// want says what a key of Go type t takes. A type named outside the
// standard library that a scalar could not fill is a mapping of keys (a
// section of the file); one a list or mapping could not fill is a single
// value.
func want(t, tag string) string {
	switch t = strings.TrimLeft(t, "*"); t {
	case "time.Duration":
		return "a duration such as 30s, 5m or 168h"
	case "bool":
		return "true or false"
	case "string":
		return "a single value"
	case "float32", "float64":
		return "a number"
	case "int", "int8", "int16", "int32", "int64":
		return "a whole number"
	case "uint", "uint64":
		return "a whole number, 0 or more"
	case "uint8", "uint16", "uint32":
		bits, _ := strconv.Atoi(strings.TrimPrefix(t, "uint"))
		return fmt.Sprintf("a whole number from 0 to %d", uint64(1)<<bits-1)
	}
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping of keys to values"
	case tag == "seq" || tag == "map":
		return "a single value"
	}
	return "a mapping of keys"
}

// Unknown words a key that is not one of keys, of the section in (""
// for none named): with the key meant, when it is a slip of a letter or
// two from one, else with all of them (none when keys is empty).
func Unknown(key, in string, keys []string) string {
	msg := fmt.Sprintf("unknown key %q", key)
	if in != "" {
		msg += " in " + in
	}
	if k := closest(key, keys); k != "" {
		return fmt.Sprintf("%s: did you mean %q?", msg, k)
	}
	if len(keys) == 0 {
		return msg
	}
	return fmt.Sprintf("%s (known: %s)", msg, strings.Join(keys, ", "))
}

// Keys lists the keys of struct type t as the decoder reads them: each
// exported field's yaml name (its lower-cased name without one), and an
// inline field's keys in its place.
func Keys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-":
			continue
		case strings.Contains(","+opts+",", ",inline,"):
			if ft := deref(f.Type); ft.Kind() == reflect.Struct {
				keys = append(keys, Keys(ft)...)
			}
			continue
		case name == "":
			name = strings.ToLower(f.Name)
		}
		keys = append(keys, name)
	}
	return keys
}

// typeKeys finds, among the types reachable from t, the struct the
// decoder names name ("service.Topic"), and lists its keys; nil if none.
func typeKeys(t reflect.Type, name string) []string {
	seen := map[reflect.Type]bool{}
	var find func(t reflect.Type) []string
	find = func(t reflect.Type) []string {
		t = deref(t)
		if t.Kind() != reflect.Struct || seen[t] {
			return nil
		}
		seen[t] = true
		if t.String() == name {
			return Keys(t)
		}
		for i := range t.NumField() {
			if keys := find(t.Field(i).Type); keys != nil {
				return keys
			}
		}
		return nil
	}
	return find(t)
}

// deref is the type a pointer, slice, array or map of t holds, to any
// depth.
func deref(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return t
		}
	}
}

// closest is the key nearest to k, if a slip of one or two letters away
// (and k is longer than that slip); "" otherwise.
func closest(k string, keys []string) string {
	best, bestD := "", min(3, len(k)-1)
	for _, c := range keys {
		if d := distance(k, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
