package server

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gardend/gardend/store"
)

// decodeLogPatch reads a log's JSON (POST and PUT): each documented member present
// is set (null clears an optional one), unknown members are ignored (decisions.md),
// and each member of the wrong type is a 400 naming it. Whether a member is allowed
// and what it must hold is the store's to check (store.ValidateLog), so that both
// backends say the same. creating says whether null means "the default" (POST) or is
// refused for a member that cannot be cleared (PUT).
func decodeLogPatch(body []byte, creating bool) (store.LogPatch, error) {
	var members map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&members); err != nil {
		return store.LogPatch{}, jsonError(err)
	}
	if members == nil {
		return store.LogPatch{}, badRequest("body", "the body must be a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return store.LogPatch{}, badRequest("body", "the body must hold a single JSON object")
	}
	v := &store.ValidationError{}
	var p store.LogPatch
	isNull := func(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }
	str := func(name string, required bool) *string {
		raw, ok := members[name]
		if !ok {
			return nil
		}
		if isNull(raw) {
			switch {
			case required && !creating:
				v.Add(name, name+" cannot be cleared; send a string")
			case required:
				v.Add(name, name+" is required and must be a string")
			default:
				return new("")
			}
			return nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			v.Add(name, name+" must be a string")
			return nil
		}
		return &s
	}
	if t := str("type", true); t != nil {
		p.Type = new(store.LogType(*t))
	}
	p.Title = str("title", true)
	p.Notes = str("notes", false)
	if raw, ok := members["at"]; ok {
		switch {
		case isNull(raw) && creating:
		case isNull(raw):
			v.Add("at", "at cannot be cleared; send an ISO 8601 time")
		default:
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				v.Add("at", "at must be an ISO 8601 time as a string, like 2026-05-01T07:30:00Z")
				break
			}
			t, _, err := parseTimeOrDate(s)
			if err != nil {
				v.Add("at", "at must be an ISO 8601 time, like 2026-05-01T07:30:00Z or 2026-05-01")
				break
			}
			p.At = &t
		}
	}
	if raw, ok := members["bed"]; ok {
		if isNull(raw) {
			p.Bed = new(uint64(0))
		} else if id, ok := positiveID(raw); ok {
			p.Bed = &id
		} else {
			v.Add("bed", "bed must be a positive integer: the id of a bed of this garden")
		}
	}
	p.Plant = str("plant", false)
	if raw, ok := members["quantity"]; ok {
		if isNull(raw) {
			p.Quantity = new((*store.Quantity)(nil))
		} else if q := decodeQuantity(raw, v); q != nil {
			p.Quantity = &q
		}
	}
	p.Assignee = str("assignee", false)
	if s := str("status", true); s != nil {
		p.Status = new(store.LogStatus(*s))
	}
	if creating && p.Type == nil {
		if _, sent := members["type"]; !sent {
			v.Add("type", "type is required: observation, activity, harvest or task")
		}
	}
	if creating && p.Title == nil {
		if _, sent := members["title"]; !sent {
			v.Add("title", "title is required: 1 to 200 characters")
		}
	}
	if err := v.OrNil(); err != nil {
		return store.LogPatch{}, err
	}
	return p, nil
}

// decodeQuantity reads {"value": number, "unit": string}; problems go to v.
func decodeQuantity(raw json.RawMessage, v *store.ValidationError) *store.Quantity {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		v.Add("quantity", `quantity must be an object like {"value": 2.5, "unit": "kg"}`)
		return nil
	}
	var q store.Quantity
	ok := true
	switch rv, sent := m["value"]; {
	case !sent || string(bytes.TrimSpace(rv)) == "null":
		v.Add("quantity.value", "quantity.value is required: how much, as a number")
		ok = false
	case json.Unmarshal(rv, &q.Value) != nil:
		v.Add("quantity.value", "quantity.value must be a number")
		ok = false
	}
	switch ru, sent := m["unit"]; {
	case !sent || string(bytes.TrimSpace(ru)) == "null":
		v.Add("quantity.unit", "quantity.unit is required: kg, g, pieces, l …")
		ok = false
	case json.Unmarshal(ru, &q.Unit) != nil:
		v.Add("quantity.unit", "quantity.unit must be a string")
		ok = false
	}
	if !ok {
		return nil
	}
	return &q
}

// positiveID reads a JSON integer ≥ 1 (2.0 counts, 2.5 does not).
func positiveID(raw json.RawMessage) (uint64, bool) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f < 1 || f != math.Trunc(f) || f > 1<<53 {
		return 0, false
	}
	return uint64(f), true
}

// parseTimeOrDate reads an RFC 3339 time (any offset, kept in UTC) or a date
// (2026-05-01: its midnight UTC; dateOnly says so).
func parseTimeOrDate(s string) (t time.Time, dateOnly bool, err error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, true, nil
	}
	t, err = time.Parse(time.RFC3339Nano, s)
	return t.UTC(), false, err
}

// parseLogFilter reads a listing's query: each parameter its own 400. Usernames
// (assignee, author) are resolved by the caller: they come back in names.
func parseLogFilter(q url.Values) (f store.LogFilter, names map[string]string, err error) {
	v := &store.ValidationError{}
	get := func(name string) (string, bool) {
		s, ok := q[name]
		if !ok || len(s) == 0 {
			return "", false
		}
		return s[len(s)-1], true
	}
	if s, ok := get("type"); ok {
		t, err := store.ParseLogType("type", s)
		if err != nil {
			v.Add("type", err.(*store.ValidationError).Fields["type"])
		}
		f.Type = t
	}
	if s, ok := get("status"); ok {
		st, err := store.ParseLogStatus("status", s)
		if err != nil {
			v.Add("status", err.(*store.ValidationError).Fields["status"])
		}
		f.Status = st
	}
	if s, ok := get("bed"); ok {
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil || id == 0 {
			v.Add("bed", "bed must be a positive integer bed id")
		}
		f.Bed = id
	}
	if s, ok := get("plant"); ok {
		if !store.ValidUUID(s) || s == "" {
			v.Add("plant", "plant must be a plant id as the bed's plants endpoint reports it")
		}
		f.Plant = s
	}
	names = map[string]string{}
	for _, name := range []string{"assignee", "author"} {
		if s, ok := get(name); ok {
			if strings.TrimSpace(s) == "" {
				v.Add(name, name+" must be a username")
			}
			names[name] = s
		}
	}
	if s, ok := get("from"); ok {
		t, _, err := parseTimeOrDate(s)
		if err != nil {
			v.Add("from", "from must be an ISO 8601 time or date, like 2026-05-01")
		}
		f.From = t
	}
	if s, ok := get("to"); ok {
		t, dateOnly, err := parseTimeOrDate(s)
		switch {
		case err != nil:
			v.Add("to", "to must be an ISO 8601 time or date, like 2026-05-31")
		case dateOnly:
			f.Until = t.AddDate(0, 0, 1) // the whole day
		default:
			f.Until = t.Add(time.Microsecond) // to itself included
		}
	}
	if !f.From.IsZero() && !f.Until.IsZero() && !f.From.Before(f.Until) {
		v.Add("to", "to must not be before from")
	}
	if s, ok := get("q"); ok {
		words, err := store.QueryWords(s)
		if err != nil {
			v.Add("q", err.(*store.ValidationError).Fields["q"])
		}
		f.Words = words
	}
	if s, ok := get("limit"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > store.MaxLogPage {
			v.Add("limit", "limit must be a number from 1 to "+strconv.Itoa(store.MaxLogPage))
		}
		f.Limit = n
	}
	if s, ok := get("cursor"); ok {
		c, err := store.ParseLogCursor(s)
		if err != nil {
			v.Add("cursor", err.(*store.ValidationError).Fields["cursor"])
		}
		f.After = &c
	}
	return f, names, v.OrNil()
}
