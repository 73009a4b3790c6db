package admin

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseUSD: amount_usd is read exactly into micro-USD: at most 6 significant decimals
// (zeros after the 6th are harmless), positive, and below 1e12 USD, the message and the check
// agreeing on the bound (999999999999.999999 passes, 1000000000000 does not).
func TestParseUSD(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"10", 10_000_000, ""},
		{"2.50", 2_500_000, ""},
		{"0.000001", 1, ""},
		{"1.0000000", 1_000_000, ""},
		{"2.5000000000000", 2_500_000, ""},
		{"0.0000010", 1, ""},
		{"999999999999.999999", 999_999_999_999_999_999, ""},
		{"999999999999.9999990", 999_999_999_999_999_999, ""},
		{"0.0000001", 0, "6 decimals"},
		{"1.0000001", 0, "6 decimals"},
		{"1.0000000001", 0, "6 decimals"},
		{"1000000000000", 0, "below 1e12"},
		{"1000000000000.000000", 0, "below 1e12"},
		{"99999999999999999999", 0, "below 1e12"},
		{"0", 0, "positive"},
		{"0.0000000", 0, "positive"},
		{"-1", 0, "positive decimal"},
		{"1e3", 0, "positive decimal"},
		{`"1"`, 0, "positive decimal"},
	} {
		got, err := parseUSD(tc.in)
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("parseUSD(%s) = %d, %v; want %d", tc.in, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("parseUSD(%s) = %d, %v; want an error mentioning %q", tc.in, got, err, tc.wantErr)
		}
	}
}

// TestJSONTypeName: a 400 for a member of the wrong type names JSON types, never Go types.
func TestJSONTypeName(t *testing.T) {
	t.Parallel()
	var (
		s  string
		p  *string
		ps *[]string
		i  *int
		f  float64
		b  bool
		m  map[string]int
		ss [][]string
		st struct{ A int }
		a  any
	)
	for _, tc := range []struct {
		v    any
		want string
	}{
		{&s, "string"}, {&p, "string"}, {&ps, "array of strings"}, {&i, "integer"}, {&f, "number"},
		{&b, "boolean"}, {&m, "object"}, {&st, "object"}, {&ss, "array of arrays of strings"},
		{&a, "a JSON value"},
	} {
		if got := jsonTypeName(reflect.TypeOf(tc.v).Elem()); got != tc.want {
			t.Errorf("jsonTypeName(%T) = %q, want %q", tc.v, got, tc.want)
		}
	}
	if got := jsonTypeName(nil); got != "a JSON value" {
		t.Errorf("jsonTypeName(nil) = %q", got)
	}
}

// TestCheckName: names are at most 256 bytes and hold no control characters (C0, DEL, C1).
func TestCheckName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"Acme", true},
		{"", true}, // emptiness is the caller's rule (policies refuse it)
		{"Équipe de recherche — 研究", true},
		{strings.Repeat("a", 256), true},
		{strings.Repeat("é", 128), true},
		{strings.Repeat("a", 257), false},
		{strings.Repeat("é", 129), false},
		{"a\nb", false},
		{"tab\there", false},
		{"nul\x00", false},
		{"del\x7f", false},
		{"c1\u0085", false},
	} {
		if msg := checkName(tc.name); (msg == "") != tc.ok {
			t.Errorf("checkName(%.20q) = %q; want ok=%v", tc.name, msg, tc.ok)
		}
	}
}
