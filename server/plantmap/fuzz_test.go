package plantmap_test

import (
	"bytes"
	"testing"

	"github.com/gardend/gardend/server/plantmap"
)

// FuzzReadDumpConvert: any input either fails to read as a dump with ErrDump, or
// converts without panicking, every problem naming its model.
func FuzzReadDumpConvert(f *testing.F) {
	for _, seed := range []string{
		`[]`,
		`[{"model": "auth.user", "pk": 1, "fields": {"username": "a", "password": "!", "date_joined": "2020-01-01T00:00:00Z"}}]`,
		`[{"model": "restapi.garden", "pk": 1, "fields": {"name": null, "company": ["x"], "image_path": "/a/b\\c.png"}}]`,
		`[{"model": "restapi.coordinate", "pk": "top_left", "fields": {"latitude": "1e400", "longitude": -0, "garden": 1}}]`,
		`[{"model": "restapi.widget", "pk": 1, "fields": {"user": ["ana"], "data": [1, {"a": null}]}}, {"model": "auth.user", "fields": {}}]`,
		`[{"model": "restapi.companypermission", "pk": 18446744073709551615, "fields": {"permission": "a", "company": 0, "user": -1}}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := plantmap.ReadDump(bytes.NewReader(data), nil)
		if err != nil {
			return
		}
		c := plantmap.Convert(d)
		for _, p := range c.Problems {
			if p.Model == "" || p.Message == "" {
				t.Fatalf("problem without model or message: %+v", p)
			}
		}
	})
}
