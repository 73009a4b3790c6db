package form

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// build is a multipart body as the SDKs write it (Go's multipart.Writer).
func build(t testing.TB, fields [][2]string, files map[string]string) ([]byte, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, f := range fields {
		_ = w.WriteField(f[0], f[1])
	}
	for name, content := range files {
		fw, _ := w.CreateFormFile(name, "img.png")
		_, _ = fw.Write([]byte(content))
	}
	_ = w.Close()
	return buf.Bytes(), w.Boundary()
}

func scanAll(body []byte, boundary string, lim Limits) ([]Part, error) {
	var parts []Part
	err := Scan(body, boundary, lim, func(p *Part) error { parts = append(parts, *p); return nil })
	return parts, err
}

func TestScan(t *testing.T) {
	body, b := build(t, [][2]string{{"model", "gpt-image-1"}, {"prompt", "a cat\r\n--not the boundary"}}, map[string]string{"image[]": "\x89PNG\r\n\x1a\n\r\n--"})
	parts, err := scanAll(body, b, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 || parts[0].Name != "model" || string(body[parts[0].ValueStart:parts[0].ValueEnd]) != "gpt-image-1" ||
		string(body[parts[1].ValueStart:parts[1].ValueEnd]) != "a cat\r\n--not the boundary" ||
		parts[2].Name != "image[]" || !parts[2].IsFile() || string(body[parts[2].ValueStart:parts[2].ValueEnd]) != "\x89PNG\r\n\x1a\n\r\n--" {
		t.Fatalf("%+v", parts)
	}
	// Replace the model and drop the prompt: what Go's reader then reads is exactly that.
	out := AppendEdited(nil, body, []Edit{
		{Start: parts[0].Start, ValueStart: parts[0].ValueStart, ValueEnd: parts[0].ValueEnd, Value: "up-model"},
		{Start: parts[1].Start, End: parts[1].End, Drop: true},
	})
	got := readGo(t, out, b)
	if len(got) != 2 || got[0] != [2]string{"model", "up-model"} || got[1][0] != "image[]" || got[1][1] != "\x89PNG\r\n\x1a\n\r\n--" {
		t.Fatalf("edited body reads %q", got)
	}
}

func TestScanRefuses(t *testing.T) {
	body, b := build(t, [][2]string{{"model", "m"}}, nil)
	many := &bytes.Buffer{}
	w := multipart.NewWriter(many)
	for range 65 {
		_ = w.WriteField("n", "1")
	}
	_ = w.Close()
	for name, tc := range map[string]struct {
		body     []byte
		boundary string
	}{
		"wrong boundary":   {body, "other"},
		"preamble":         {append([]byte("hello\r\n"), body...), b},
		"no close":         {body[:len(body)-8], b},
		"no parts":         {[]byte("--" + b + "--\r\n"), b},
		"lf only":          {bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), b},
		"no name":          {[]byte("--" + b + "\r\nContent-Disposition: form-data\r\n\r\nx\r\n--" + b + "--"), b},
		"not form-data":    {[]byte("--" + b + "\r\nContent-Disposition: attachment; name=a\r\n\r\nx\r\n--" + b + "--"), b},
		"folded header":    {[]byte("--" + b + "\r\nContent-Disposition: form-data;\r\n name=a\r\n\r\nx\r\n--" + b + "--"), b},
		"endless headers":  {[]byte("--" + b + "\r\nX: " + strings.Repeat("a", 9000) + "\r\n\r\nx\r\n--" + b + "--"), b},
		"too many parts":   {many.Bytes(), w.Boundary()},
		"empty":            {nil, b},
		"no boundary":      {body, ""},
		"boundary garbage": {[]byte("--" + b + "x\r\n"), b},
	} {
		_, err := scanAll(tc.body, tc.boundary, Limits{})
		var fe *failure.Error
		if !errors.As(err, &fe) || fe.Class != failure.InvalidRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestBoundary(t *testing.T) {
	if b, err := Boundary(`multipart/form-data; boundary="abc def"`); err != nil || b != "abc def" {
		t.Fatal(b, err)
	}
	for _, ct := range []string{"", "application/json", "multipart/form-data", "multipart/form-data; boundary=" + strings.Repeat("a", 71), "multipart/mixed; boundary=x"} {
		if _, err := Boundary(ct); err == nil {
			t.Errorf("%q accepted", ct)
		}
	}
}

// readGo reads body with the standard library's reader: names and raw values.
func readGo(t testing.TB, body []byte, boundary string) [][2]string {
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	var out [][2]string
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Go's reader: %v", err)
		}
		v, err := io.ReadAll(p)
		if err != nil {
			t.Fatalf("Go's reader: %v", err)
		}
		out = append(out, [2]string{p.FormName(), string(v)})
	}
}

// FuzzScan: no body panics the scanner, every offset it reports is inside the body and in
// order, and a body it accepts reads the same (names and raw values) with the standard
// library's multipart reader, before and after AppendEdited replaces the first part's value
// and drops the second part.
func FuzzScan(f *testing.F) {
	body, b := build(f, [][2]string{{"model", "gpt-image-1"}, {"prompt", "a cat"}, {"extra", `{"fallbacks":["x"]}`}}, map[string]string{"image": "PNG\r\n--"})
	f.Add(body, b)
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=model\r\n\r\nm\r\n--b--"), "b")
	f.Add([]byte("--b \t\r\nContent-Disposition: form-data; name=\"a\"; filename=\"\"\r\nContent-Type: image/png\r\n\r\n\r\n--b\r\n\r\n\r\n--b--"), "b")
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=a\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=41\r\n--b--\r\nepilogue"), "b")
	f.Fuzz(func(t *testing.T, body []byte, boundary string) {
		parts, err := scanAll(body, boundary, Limits{MaxParts: 8, MaxHeaderBytes: 256})
		if err != nil {
			var fe *failure.Error
			if !errors.As(err, &fe) || fe.Class != failure.InvalidRequest {
				t.Fatalf("error %v is not invalid_request", err)
			}
			return
		}
		prev := 0
		for _, p := range parts {
			if p.Start < prev || p.ValueStart < p.Start || p.ValueEnd < p.ValueStart || p.End < p.ValueEnd || p.End > len(body) {
				t.Fatalf("offsets out of order: %+v (body %d)", p, len(body))
			}
			prev = p.End
		}
		if len(boundary) > MaxBoundary || strings.ContainsAny(boundary, "\r\n") {
			return // Go's reader takes what Boundary would refuse
		}
		check := func(body []byte, want []Part, values map[int]string) {
			got := readGo(t, body, boundary)
			if len(got) != len(want) {
				t.Fatalf("Go reads %d parts, the scanner %d", len(got), len(want))
			}
			for i, p := range want {
				v, ok := values[i]
				if !ok {
					v = string(body[p.ValueStart:p.ValueEnd])
				}
				if got[i][0] != p.Name || (!p.Encoded && got[i][1] != v) {
					t.Fatalf("part %d: Go reads %q, the scanner %q=%q", i, got[i], p.Name, v)
				}
			}
		}
		check(body, parts, nil)
		if len(parts) < 2 {
			return
		}
		edited := AppendEdited(nil, body, []Edit{
			{Start: parts[0].Start, ValueStart: parts[0].ValueStart, ValueEnd: parts[0].ValueEnd, Value: "upstream-model"},
			{Start: parts[1].Start, End: parts[1].End, Drop: true},
		})
		again, err := scanAll(edited, boundary, Limits{MaxParts: 8, MaxHeaderBytes: 256})
		if err != nil || len(again) != len(parts)-1 || string(edited[again[0].ValueStart:again[0].ValueEnd]) != "upstream-model" {
			t.Fatalf("edited body: %v, %d parts", err, len(again))
		}
		check(edited, again, nil)
	})
}
