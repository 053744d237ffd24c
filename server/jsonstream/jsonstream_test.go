package jsonstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// readAll decodes an object: strings streamed, everything else raw, last name wins.
func readAll(in io.Reader, budget int64) (map[string]string, error) {
	got := map[string]string{}
	err := NewDecoder(in, budget).Object(func(name string, v *Value) error {
		if v.Kind() == '"' {
			var b bytes.Buffer
			err := v.Stream(&b)
			got[name] = "string:" + b.String()
			return err
		}
		raw, err := v.Raw()
		got[name] = "raw:" + string(raw)
		return err
	})
	return got, err
}

// reference decodes with encoding/json, in the same shape as readAll.
func reference(in []byte) (map[string]string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(in, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("null")
	}
	out := map[string]string{}
	for k, v := range m {
		var s string
		if v[0] == '"' && json.Unmarshal(v, &s) == nil {
			out[k] = "string:" + s
		} else {
			out[k] = "raw:" + string(v)
		}
	}
	return out, nil
}

func TestObject(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string
		wantErr error
	}{
		{`{}`, map[string]string{}, nil},
		{" \r\n\t{ } \n", map[string]string{}, nil},
		{`{"a":"x\"y\\z\/\b\f\n\r\t\u00e9\ud83c\udf31 \ud800 "}`, map[string]string{"a": "string:x\"y\\z/\b\f\n\r\té🌱 \uFFFD "}, nil},
		{`{"a":1,"b":[1,{"c":"]"}],"c":{"d":null},"e":true,"f":-1.5e3,"g":"s"}`, map[string]string{
			"a": "raw:1", "b": `raw:[1,{"c":"]"}]`, "c": `raw:{"d":null}`, "e": "raw:true", "f": "raw:-1.5e3", "g": "string:s",
		}, nil},
		{`{"a":1,"a":"x"}`, map[string]string{"a": "string:x"}, nil},
		{`{"\u0061":2}`, map[string]string{"a": "raw:2"}, nil},
		{"", nil, ErrEmpty},
		{"  ", nil, ErrEmpty},
		{"[1]", nil, ErrNotObject},
		{"null", nil, ErrNotObject},
		{`{} {}`, nil, ErrTrailing},
		{`{}x`, nil, ErrTrailing},
		{`{"a":1`, nil, io.ErrUnexpectedEOF},
		{`{"a":"xx`, nil, io.ErrUnexpectedEOF},
		{`{"a":"x\`, nil, io.ErrUnexpectedEOF},
		{`{"a":"\u00`, nil, io.ErrUnexpectedEOF},
		{`{"a":[1,2`, nil, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		got, err := readAll(strings.NewReader(tc.in), 1<<20)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%q: error %v, want %v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil && !maps.Equal(got, tc.want) {
			t.Errorf("%q: got %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestObjectSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int64
	}{
		{`x`, 1},
		{`{x}`, 2},
		{`{"a" 1}`, 6},
		{`{"a":}`, 6},
		{`{"a":1 "b":2}`, 8},
		{`{"a":[1,}]}`, 9},
		{`{"a":tru}`, 8},
		{"{\"a\":\"x\ty\"}", 8},
		{`{"a":"\x"}`, 8},
		{`{"a":"\u00g0"}`, 11},
		{`{"a":{"b" 1}}`, 11},
	} {
		_, err := readAll(strings.NewReader(tc.in), 1<<20)
		var syn *SyntaxError
		if !errors.As(err, &syn) {
			t.Errorf("%q: error %v, want a SyntaxError", tc.in, err)
			continue
		}
		if syn.Offset != tc.offset {
			t.Errorf("%q: offset %d, want %d (%v)", tc.in, syn.Offset, tc.offset, err)
		}
	}
}

func TestBudget(t *testing.T) {
	in := `{"image":"` + strings.Repeat("A", 1000) + `","other":"` + strings.Repeat("b", 50) + `"}`
	// Streamed strings do not count; the name "other" and its value do.
	err := NewDecoder(strings.NewReader(in), 70).Object(func(name string, v *Value) error {
		if name == "image" {
			return v.Stream(io.Discard)
		}
		return nil // skipped: read raw within the budget
	})
	if err != nil {
		t.Fatalf("within the budget: %v", err)
	}
	err = NewDecoder(strings.NewReader(in), 40).Object(func(name string, v *Value) error {
		if name == "image" {
			return v.Stream(io.Discard)
		}
		return nil
	})
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("over the budget: %v", err)
	}
}

// TestStreamPieces streams a long string with escapes through readers that return
// little at a time, and checks that the writer gets bounded pieces.
func TestStreamPieces(t *testing.T) {
	content := strings.Repeat(`abc\/def\n`, 20000)
	want := strings.Repeat("abc/def\n", 20000)
	in := `{"s":"` + content + `"}`
	for name, r := range map[string]io.Reader{
		"whole":   strings.NewReader(in),
		"onebyte": iotest.OneByteReader(strings.NewReader(in)),
		"half":    iotest.HalfReader(strings.NewReader(in)),
	} {
		var got bytes.Buffer
		largest := 0
		err := NewDecoder(r, 100).Object(func(_ string, v *Value) error {
			return v.Stream(writerFunc(func(p []byte) (int, error) {
				largest = max(largest, len(p))
				return got.Write(p)
			}))
		})
		if err != nil || got.String() != want {
			t.Fatalf("%s: %v, %d bytes, want %d", name, err, got.Len(), len(want))
		}
		if largest > bufSize {
			t.Errorf("%s: a piece of %d bytes", name, largest)
		}
	}
}

func TestStreamWriterError(t *testing.T) {
	errSink := errors.New("sink full")
	err := NewDecoder(strings.NewReader(`{"s":"`+strings.Repeat("a", 100<<10)+`"}`), 100).Object(func(_ string, v *Value) error {
		return v.Stream(writerFunc(func([]byte) (int, error) { return 0, errSink }))
	})
	if err != errSink {
		t.Fatalf("error %v, want the writer's", err)
	}
}

func TestReadError(t *testing.T) {
	errRead := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader(`{"s":"abc`), iotest.ErrReader(errRead))
	_, err := readAll(r, 100)
	if !errors.Is(err, errRead) {
		t.Fatalf("error %v, want the reader's", err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// FuzzObject compares the decoder with encoding/json on any input: both accept or
// both reject, and accepted objects have the same members.
func FuzzObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"b\u00e9\ud83c\udf31","c":[1,{"d":null}],"e":-0.5}`, `{"a":1,"a":2}`, `[1]`, `{"a":"\/\\"}`, ` {"image":"data:image/png;base64,iVBO"} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := readAll(iotest.HalfReader(bytes.NewReader(in)), 1<<20)
		want, wantErr := reference(in)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("jsonstream: %v; encoding/json: %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if !utf8.Valid(in) {
			return // encoding/json replaces invalid UTF-8 in strings; Stream passes it
		}
		if !maps.Equal(got, want) {
			t.Fatalf("jsonstream: %v\nencoding/json: %v", got, want)
		}
	})
}
