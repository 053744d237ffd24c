// Package plantmap brings the data of a PlantMap server (the Django service gardend
// replaces) into gardend: it reads a `manage.py dumpdata` export, checks it, converts
// it into a store.Import (users with their Django password hashes, companies,
// gardens with their images and coordinates, beds, permissions, widgets) and has the
// store write it in one transaction. Everything else a dump holds (sessions, tokens,
// the admin log, content types, …) is counted and left out.
//
// Data flows one way: ReadDump → Convert → (images) → store.PlanImport → report →
// store.ApplyImport. Nothing is written when any record has an error.
package plantmap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
)

// The models the import reads, as dumpdata names them.
const (
	ModelUser        = "auth.user"
	ModelCompany     = "restapi.company"
	ModelGarden      = "restapi.garden"
	ModelCoordinate  = "restapi.coordinate"
	ModelBed         = "restapi.bed"
	ModelCompanyPerm = "restapi.companypermission"
	ModelGardenPerm  = "restapi.gardenpermission"
	ModelWidget      = "restapi.widget"
)

// Models lists the models read, in the order they are reported.
var Models = []string{ModelUser, ModelCompany, ModelGarden, ModelCoordinate, ModelBed, ModelCompanyPerm, ModelGardenPerm, ModelWidget}

func known(model string) bool {
	for _, m := range Models {
		if m == model {
			return true
		}
	}
	return false
}

// ErrDump is wrapped by every error about a dump that cannot be read at all.
var ErrDump = errors.New("not a dumpdata export")

// Record is one entry of a dump: {"model", "pk", "fields"}.
type Record struct {
	Model  string          `json:"model"`
	PK     json.RawMessage `json:"pk"`
	Fields json.RawMessage `json:"fields"`
}

// PKText is the record's pk as the dump wrote it, for messages.
func (r Record) PKText() string {
	if len(r.PK) == 0 {
		return "(none)"
	}
	return string(r.PK)
}

// Dump is what ReadDump kept: the records of the models read, in dump order, and
// how many records of every other model it left out.
type Dump struct {
	Records map[string][]Record
	Skipped map[string]int
	Bytes   int64
}

// SkippedModels lists the skipped models by name.
func (d *Dump) SkippedModels() []string {
	out := make([]string, 0, len(d.Skipped))
	for m := range d.Skipped {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// countingReader reports the bytes read so far.
type countingReader struct {
	r        io.Reader
	n        int64
	progress func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.progress != nil && n > 0 {
		c.progress(c.n)
	}
	return n, err
}

// ReadDump reads a dumpdata export (a JSON array of {model, pk, fields}) as a stream:
// the fields of models it does not read are dropped as soon as they are parsed, so a
// dump full of sessions costs no more memory than one without. progress, when set,
// is told the bytes read so far.
func ReadDump(r io.Reader, progress func(read int64)) (*Dump, error) {
	cr := &countingReader{r: r, progress: progress}
	dec := json.NewDecoder(cr)
	dec.UseNumber()
	d := &Dump{Records: map[string][]Record{}, Skipped: map[string]int{}}
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("%w: it must be a JSON array of {\"model\", \"pk\", \"fields\"} objects, as `manage.py dumpdata --format json` writes (%s)", ErrDump, describe(err, tok))
	}
	for i := 0; dec.More(); i++ {
		var rec Record
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrDump, i, syntaxText(err, dec))
		}
		switch {
		case rec.Model == "":
			return nil, fmt.Errorf("%w: entry %d has no \"model\"", ErrDump, i)
		case !known(rec.Model):
			d.Skipped[rec.Model]++
			continue
		case len(bytes.TrimSpace(rec.Fields)) == 0 || rec.Fields[0] != '{':
			return nil, fmt.Errorf("%w: entry %d (%s pk=%s) has no \"fields\" object", ErrDump, i, rec.Model, rec.PKText())
		}
		d.Records[rec.Model] = append(d.Records[rec.Model], rec)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: the array does not end: %v", ErrDump, syntaxText(err, dec))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: something follows the array", ErrDump)
	}
	d.Bytes = cr.n
	return d, nil
}

func describe(err error, tok json.Token) string {
	switch {
	case errors.Is(err, io.EOF):
		return "the file is empty"
	case err != nil:
		return err.Error()
	}
	return fmt.Sprintf("it starts with %v", tok)
}

func syntaxText(err error, dec *json.Decoder) string {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "the file ends in the middle of an entry (truncated?)"
	}
	return fmt.Sprintf("%v (near byte %d)", err, dec.InputOffset())
}
