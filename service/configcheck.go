package service

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/memlimit"
)

// checkLoaded runs the checks of a freshly parsed config that point at a
// line of its file: durations that are negative (a typo such as "-10s"
// would otherwise be taken as "use the default" and the operator would
// never know) and Kafka TLS/SASL settings that cannot work (unreadable CA,
// a certificate without its key, an unknown mechanism, an empty password
// variable). It runs before defaults are filled in.
func (c *Config) checkLoaded(file string, b []byte) error {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	at := func(key string, err error) error {
		if n := lineOf(&root, key); n > 0 {
			return fmt.Errorf("%s:%d: %w", file, n, err)
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	if key, d, ok := negativeDuration(reflect.ValueOf(c).Elem(), ""); ok {
		hint := "zero keeps the default"
		if key == "correlation.group_wait" {
			hint = "0s pages at once, unset keeps the default"
		}
		return at(key, fmt.Errorf("%s: %s is negative (%s)", key, d, hint))
	}
	if c.History < 0 {
		return at("history_buckets", fmt.Errorf("history_buckets: %d is negative (zero keeps the default)", c.History))
	}
	if c.Kafka.MaxQueued < 0 {
		return at("kafka.max_queued_records", fmt.Errorf("kafka.max_queued_records: %d is negative (zero keeps the default)", c.Kafka.MaxQueued))
	}
	if _, err := memlimit.Parse(c.MemoryLimit); err != nil {
		return at("memory_limit", fmt.Errorf("memory_limit: %w", err))
	}
	if c.Kafka.TLS == nil && c.Kafka.SASL == nil {
		return nil
	}
	if _, err := c.KafkaDialer(); err != nil {
		var se *kafkaio.SecError
		if errors.As(err, &se) {
			return at(se.Key, err)
		}
		return at("kafka", err)
	}
	return nil
}

var durationType = reflect.TypeFor[time.Duration]()

// negativeDuration finds the first negative time.Duration in v, walking
// structs, pointers and slices by their yaml keys, so that a duration added
// to the config later is checked without being listed here.
func negativeDuration(v reflect.Value, path string) (string, time.Duration, bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			return negativeDuration(v.Elem(), path)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			if k, d, ok := negativeDuration(v.Field(i), p); ok {
				return k, d, true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if k, d, ok := negativeDuration(v.Index(i), path+"["+strconv.Itoa(i)+"]"); ok {
				return k, d, true
			}
		}
	case reflect.Int64:
		if v.Type() == durationType && v.Int() < 0 {
			return path, time.Duration(v.Int()), true
		}
	}
	return "", 0, false
}

// lineOf is the line of a key such as "kafka.tls.ca_file" or
// "sinks[2].timeout" in a parsed YAML document; for a key that is not
// written out (a required one that is missing), the line of its closest
// parent that is; 0 when nothing matches.
func lineOf(root *yaml.Node, key string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for part := range strings.SplitSeq(key, ".") {
		name, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			name = part[:i]
			idx, _ = strconv.Atoi(part[i+1 : len(part)-1])
		}
		next := mapValue(n, name)
		if next == nil {
			return line
		}
		line = next.key.Line
		n = next.value
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

type keyValue struct{ key, value *yaml.Node }

func mapValue(n *yaml.Node, name string) *keyValue {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return &keyValue{n.Content[i], n.Content[i+1]}
		}
	}
	return nil
}
