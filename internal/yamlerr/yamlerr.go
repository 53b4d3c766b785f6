// Package yamlerr words the errors of the YAML decoder for the person
// who wrote the file. The decoder speaks of Go's types ("field sinkz not
// found in type service.Config", "cannot unmarshal !!int `7` into
// time.Duration"); an operator reading a config, rules or actions file
// wants the line, the key that is wrong, and what it takes instead
// ("unknown key \"sinkz\"", "want a duration such as 30s, 5m or 168h,
// not 7"). Every file outagewatch reads as YAML reports through here, so
// that they all read alike.
package yamlerr

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Split returns the line an error from decoding a YAML file names (0
// when it names none) and its reason, reworded. Of several type errors,
// the first is told and the others counted.
func Split(err error) (line int, reason string) {
	msg := err.Error()
	more := 0
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg, more = te.Errors[0], len(te.Errors)-1
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	msg = Reword(msg)
	switch more {
	case 0:
	case 1:
		msg += " (and 1 more error)"
	default:
		msg += fmt.Sprintf(" (and %d more errors)", more)
	}
	return line, msg
}

// Wrap is Split as one error, "FILE:LINE: reason" ("FILE: reason" when
// the decoder names no line).
func Wrap(file string, err error) error {
	line, msg := Split(err)
	if line == 0 {
		return fmt.Errorf("%s: %s", file, msg)
	}
	return fmt.Errorf("%s:%d: %s", file, line, msg)
}

var (
	lineRE      = regexp.MustCompile(`^line (\d+): `)
	unknownRE   = regexp.MustCompile("^field (.+) not found in type .+$")
	unmarshalRE = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
)

// Reword turns one of the decoder's messages (without "yaml: line N: ")
// into the file's words; a message it does not know is returned as it is.
func Reword(msg string) string {
	if m := unknownRE.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("unknown key %q", m[1])
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
