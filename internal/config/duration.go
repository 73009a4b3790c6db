package config

import (
	"fmt"
	"strconv"
	"strings"
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

// Retention is how long audit records are kept (store.audit_retention), from their
// created_at; 0 keeps them forever. In YAML it is a Go duration ("720h"), a whole number of
// days ("30d"), or "0" / "off" (forever). Errors are *yaml.TypeError with the value's line.
type Retention time.Duration

// D returns the retention; 0 is forever.
func (r Retention) D() time.Duration { return time.Duration(r) }

// UnmarshalYAML implements yaml.Unmarshaler (see Retention).
func (r *Retention) UnmarshalYAML(n *yaml.Node) error {
	bad := &yaml.TypeError{Errors: []string{fmt.Sprintf(
		"line %d: invalid retention %q: want days such as \"30d\", a Go duration such as \"720h\", or \"off\" (0) to keep records forever", n.Line, n.Value)}}
	if n.Kind != yaml.ScalarNode {
		return bad
	}
	v := strings.TrimSpace(n.Value)
	switch {
	case v == "0" || strings.EqualFold(v, "off"):
		*r = 0
		return nil
	case strings.HasSuffix(v, "d"):
		days, err := strconv.ParseInt(strings.TrimSuffix(v, "d"), 10, 64)
		if err != nil || days < -106751 || days > 106751 { // time.Duration's range
			return bad
		}
		*r = Retention(time.Duration(days) * 24 * time.Hour)
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return bad
	}
	*r = Retention(d)
	return nil
}

// String formats the retention as it is written: "off", whole days as "30d", else a Go
// duration.
func (r Retention) String() string {
	switch d := time.Duration(r); {
	case d == 0:
		return "off"
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	default:
		return d.String()
	}
}
