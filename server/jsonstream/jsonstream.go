// Package jsonstream reads one JSON object from a stream member by member, so that a
// request body holding a huge string (an image as a data URL) never sits in memory:
// a string value can be streamed, unescaped, to an io.Writer in pieces, while every
// other value comes back as its JSON text, within a byte budget for the whole object.
//
// It accepts exactly the JSON that encoding/json accepts (except that streamed
// strings pass invalid UTF-8 through rather than replacing it) and reports errors
// with the offset of the byte that caused them.
package jsonstream

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

var (
	// ErrEmpty: the input holds nothing but whitespace.
	ErrEmpty = errors.New("jsonstream: no JSON value")
	// ErrNotObject: the input is a JSON value other than an object.
	ErrNotObject = errors.New("jsonstream: the value is not an object")
	// ErrTrailing: something other than whitespace follows the object.
	ErrTrailing = errors.New("jsonstream: data after the object")
	// ErrBudget: member names and raw values together exceed the budget.
	ErrBudget = errors.New("jsonstream: member names and values exceed the budget")
)

// SyntaxError is malformed JSON; Offset counts the bytes read up to and including
// the one at fault, as in encoding/json.
type SyntaxError struct {
	Offset int64
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("jsonstream: %s at byte %d", e.Msg, e.Offset)
}

// Decoder reads from a buffered reader; io.EOF inside a value becomes
// io.ErrUnexpectedEOF, and any other read error is returned as is (wrapped).
type Decoder struct {
	r      *bufio.Reader
	off    int64 // bytes consumed
	budget int64 // bytes names and raw values may still take
	out    []byte
}

// bufSize is the read buffer, and the size of the pieces a string is streamed in.
const bufSize = 32 << 10

// NewDecoder reads from r; names and raw values may take budget bytes in all.
func NewDecoder(r io.Reader, budget int64) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, bufSize), budget: budget}
}

// Value is the value of the member being read. The callback of Object either
// consumes it once with Stream or Raw, or leaves it to be skipped (within the budget).
type Value struct {
	d    *Decoder
	kind byte
	used bool
}

// Kind is the first byte of the value: '"', '{', '[', 't', 'f', 'n', '-' or a digit.
func (v *Value) Kind() byte { return v.kind }

// Stream writes the string's content, unescaped, to w in pieces of at most 32 KiB.
// The value must be a string (Kind '"'). An error of w is returned as is.
func (v *Value) Stream(w io.Writer) error {
	if v.used || v.kind != '"' {
		return errors.New("jsonstream: Stream of a value that is not an unread string")
	}
	v.used = true
	return v.d.stream(w)
}

// Raw returns the value's JSON text, checked to be valid JSON.
func (v *Value) Raw() ([]byte, error) {
	if v.used {
		return nil, errors.New("jsonstream: the value was already read")
	}
	v.used = true
	return v.d.raw()
}

// Object reads the object, calling member for each member in order; an error of
// member ends the read and is returned as is. After the closing brace only
// whitespace may follow.
func (d *Decoder) Object(member func(name string, v *Value) error) error {
	c, err := d.skipSpace()
	if err == io.EOF {
		return ErrEmpty
	}
	if err != nil {
		return err
	}
	if c != '{' {
		if isValueStart(c) {
			return ErrNotObject
		}
		return d.syntax(c, "looking for the beginning of an object")
	}
	d.next()
	first := true
	for {
		c, err := d.skipSpaceIn()
		if err != nil {
			return err
		}
		if first && c == '}' {
			d.next()
			break
		}
		first = false
		if c != '"' {
			return d.syntax(c, "looking for the beginning of a member name")
		}
		nameRaw, err := d.raw()
		if err != nil {
			return err
		}
		var name string
		if err := json.Unmarshal(nameRaw, &name); err != nil {
			return err // cannot happen: raw checked the string
		}
		if c, err = d.skipSpaceIn(); err != nil {
			return err
		}
		if c != ':' {
			return d.syntax(c, "after a member name")
		}
		d.next()
		if c, err = d.skipSpaceIn(); err != nil {
			return err
		}
		if !isValueStart(c) {
			return d.syntax(c, "looking for the beginning of a value")
		}
		v := &Value{d: d, kind: c}
		if err := member(name, v); err != nil {
			return err
		}
		if !v.used {
			if _, err := v.Raw(); err != nil {
				return err
			}
		}
		if c, err = d.skipSpaceIn(); err != nil {
			return err
		}
		d.next()
		if c == '}' {
			break
		}
		if c != ',' {
			return d.syntaxAt(d.off, c, "after a member value")
		}
	}
	if _, err := d.skipSpace(); err != io.EOF {
		if err != nil {
			return err
		}
		return ErrTrailing
	}
	return nil
}

func isValueStart(c byte) bool {
	switch c {
	case '"', '{', '[', 't', 'f', 'n', '-':
		return true
	}
	return '0' <= c && c <= '9'
}

// peek returns the next byte without consuming it; io.EOF at the end.
func (d *Decoder) peek() (byte, error) {
	b, err := d.r.Peek(1)
	if err != nil {
		if err == io.EOF {
			return 0, io.EOF
		}
		return 0, fmt.Errorf("jsonstream: read: %w", err)
	}
	return b[0], nil
}

func (d *Decoder) next() {
	_, _ = d.r.Discard(1) // the byte was peeked: it is buffered
	d.off++
}

// skipSpace skips whitespace and peeks at the byte after it.
func (d *Decoder) skipSpace() (byte, error) {
	for {
		c, err := d.peek()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			d.next()
		default:
			return c, nil
		}
	}
}

// skipSpaceIn is skipSpace inside the object, where the end of the input is early.
func (d *Decoder) skipSpaceIn() (byte, error) {
	c, err := d.skipSpace()
	if err == io.EOF {
		return 0, io.ErrUnexpectedEOF
	}
	return c, err
}

func (d *Decoder) syntax(c byte, context string) error {
	return d.syntaxAt(d.off+1, c, context)
}

func (d *Decoder) syntaxAt(off int64, c byte, context string) error {
	return &SyntaxError{Offset: off, Msg: fmt.Sprintf("invalid character %q %s", c, context)}
}

// raw reads one value as JSON text, within the budget, and checks it. It finds the
// end of a string, object or array by its quotes and brackets (json.Unmarshal then
// checks that they match) and the end of a number or literal at the first byte that
// cannot continue one.
func (d *Decoder) raw() ([]byte, error) {
	start := d.off
	var buf []byte
	take := func() (byte, error) {
		c, err := d.peek()
		if err == io.EOF {
			return 0, io.ErrUnexpectedEOF
		}
		if err != nil {
			return 0, err
		}
		if d.budget--; d.budget < 0 {
			return 0, ErrBudget
		}
		buf = append(buf, c)
		d.next()
		return c, nil
	}
	first, err := take()
	if err != nil {
		return nil, err
	}
	switch first {
	case '"', '{', '[':
		depth, inString, escaped := 1, first == '"', false
		if inString {
			depth = 0
		}
		for inString || depth > 0 {
			c, err := take()
			if err != nil {
				return nil, err
			}
			switch {
			case escaped:
				escaped = false
			case inString && c == '\\':
				escaped = true
			case inString:
				inString = c != '"'
			case c == '"':
				inString = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
			}
		}
	default:
		for {
			c, err := d.peek()
			if err == io.EOF || c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			if _, err := take(); err != nil {
				return nil, err
			}
		}
	}
	var check json.RawMessage
	if err := json.Unmarshal(buf, &check); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, &SyntaxError{Offset: start + syn.Offset, Msg: syn.Error()}
		}
		return nil, &SyntaxError{Offset: start + int64(len(buf)), Msg: err.Error()}
	}
	return buf, nil
}

// stream writes the content of the string that starts at the next byte.
func (d *Decoder) stream(w io.Writer) error {
	d.next() // the opening quote
	if d.out == nil {
		d.out = make([]byte, 0, bufSize)
	}
	out := d.out[:0]
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		_, err := w.Write(out)
		out = out[:0]
		return err
	}
	for {
		if _, err := d.peek(); err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		b, _ := d.r.Peek(d.r.Buffered())
		i := 0
		for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
			i++
		}
		if n := min(i, cap(out)-len(out)); n < i {
			out = append(out, b[:n]...)
			if err := flush(); err != nil {
				return err
			}
			out = append(out, b[n:i]...)
		} else {
			out = append(out, b[:i]...)
		}
		_, _ = d.r.Discard(i) // peeked bytes: buffered
		d.off += int64(i)
		if i == len(b) {
			continue
		}
		switch c := b[i]; {
		case c == '"':
			d.next()
			return flush()
		case c < 0x20:
			return d.syntax(c, "in string literal")
		}
		// An escape: at most 12 bytes, so make room first.
		if cap(out)-len(out) < utf8.UTFMax {
			if err := flush(); err != nil {
				return err
			}
		}
		var err error
		if out, err = d.unescape(out); err != nil {
			return err
		}
	}
}

// unescape reads one escape sequence and appends what it stands for.
func (d *Decoder) unescape(out []byte) ([]byte, error) {
	d.next() // the backslash
	c, err := d.peek()
	if err != nil {
		if err == io.EOF {
			return out, io.ErrUnexpectedEOF
		}
		return out, err
	}
	switch c {
	case '"', '\\', '/':
		d.next()
		return append(out, c), nil
	case 'b', 'f', 'n', 'r', 't':
		d.next()
		return append(out, map[byte]byte{'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}[c]), nil
	case 'u':
		d.next()
		r, err := d.hex4()
		if err != nil {
			return out, err
		}
		if utf16.IsSurrogate(r) {
			// A pair, as encoding/json reads it: a lone half becomes U+FFFD and the
			// next escape is read on its own.
			if b, err := d.r.Peek(6); err == nil && b[0] == '\\' && b[1] == 'u' {
				if lo, ok := parseHex4(b[2:6]); ok {
					if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
						_, _ = d.r.Discard(6) // peeked bytes: buffered
						d.off += 6
						return utf8.AppendRune(out, pair), nil
					}
				}
			}
			r = utf8.RuneError
		}
		return utf8.AppendRune(out, r), nil
	}
	return out, d.syntax(c, "in string escape code")
}

func (d *Decoder) hex4() (rune, error) {
	b, err := d.r.Peek(4)
	if len(b) < 4 {
		if err == io.EOF {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, err
	}
	r, ok := parseHex4(b)
	if !ok {
		for i := range 4 {
			if _, ok := parseHex4([]byte{'0', '0', '0', b[i]}); !ok {
				_, _ = d.r.Discard(i) // peeked bytes: buffered
				d.off += int64(i)
				return 0, d.syntax(b[i], "in \\u hexadecimal character escape")
			}
		}
	}
	_, _ = d.r.Discard(4) // peeked bytes: buffered
	d.off += 4
	return r, nil
}

func parseHex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}
