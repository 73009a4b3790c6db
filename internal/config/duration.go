package config

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// UnmarshalYAML implements yaml.Unmarshaler: the value must be a Go duration string such as
// "20s" or "1m30s" (time.ParseDuration). A bare number is rejected, since its unit would be a
// guess. Errors are returned as *yaml.TypeError with the value's line, so decoding goes on and
// every bad duration in a file is reported. Negative durations decode; Validate rejects them.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: a duration must be a string such as \"20s\"", n.Line)}}
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: invalid duration %q: want a Go duration such as \"20s\" or \"1m30s\"", n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
}

// String formats the duration as time.Duration does ("20s").
func (d Duration) String() string { return time.Duration(d).String() }
