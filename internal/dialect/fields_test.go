package dialect

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

func TestFieldReaders(t *testing.T) {
	get := func(js string) gjson.Result { return gjson.Get(js, "v") }
	if b, err := BoolField(get(`{"v":true}`), "v"); !b || err != nil {
		t.Errorf("bool true: %v %v", b, err)
	}
	for _, js := range []string{`{}`, `{"v":null}`, `{"v":false}`} {
		if b, err := BoolField(get(js), "v"); b || err != nil {
			t.Errorf("bool %s: %v %v", js, b, err)
		}
		if s, err := StringField(get(js), "v"); js != `{"v":false}` && (s != "" || err != nil) {
			t.Errorf("string %s: %q %v", js, s, err)
		}
	}
	if s, err := StringField(get(`{"v":"x"}`), "v"); s != "x" || err != nil {
		t.Errorf("string: %q %v", s, err)
	}
	if f, err := FloatField(get(`{"v":0.5}`), "v"); f == nil || *f != 0.5 || err != nil {
		t.Errorf("float: %v %v", f, err)
	}
	if f, err := FloatField(get(`{}`), "v"); f != nil || err != nil {
		t.Errorf("float absent: %v %v", f, err)
	}
	if n, err := IntField(get(`{"v":4096}`), "v"); n != 4096 || err != nil {
		t.Errorf("int: %v %v", n, err)
	}
	for _, js := range []string{`{"v":"1"}`, `{"v":1.5}`, `{"v":-1}`, `{"v":1e300}`, `{}`} {
		if _, err := IntField(get(js), "max_tokens"); failure.From(err) == nil || failure.From(err).Param != "max_tokens" {
			t.Errorf("int %s: %v, want invalid_request naming max_tokens", js, err)
		}
	}
	for _, tc := range []struct {
		js  string
		err func() error
	}{
		{`{"v":"yes"}`, func() error { _, err := BoolField(get(`{"v":"yes"}`), "v"); return err }},
		{`{"v":1}`, func() error { _, err := StringField(get(`{"v":1}`), "v"); return err }},
		{`{"v":"1"}`, func() error { _, err := FloatField(get(`{"v":"1"}`), "v"); return err }},
	} {
		if fe := failure.From(tc.err()); fe == nil || fe.Class != failure.InvalidRequest || fe.Param != "v" {
			t.Errorf("%s: %v, want invalid_request naming v", tc.js, fe)
		}
	}
}
