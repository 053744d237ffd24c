package imagestore_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gardend/gardend/imagestore"
)

// An upload and a download as the HTTP layer does them, minus HTTP.
func Example() {
	dataDir, _ := os.MkdirTemp("", "gardend")
	defer os.RemoveAll(dataDir)
	store, err := imagestore.Open(filepath.Join(dataDir, "images"))
	if err != nil {
		panic(err)
	}
	png, _ := os.ReadFile("../testdata/images/garden.png")
	upload := imagestore.DataURLPrefix + base64.StdEncoding.EncodeToString(png)

	// Upload: a client error here is a 400 with err.Error() as the detail.
	b, err := imagestore.DecodeDataURL(upload)
	if err != nil {
		panic(err)
	}
	width, height, err := imagestore.CheckPNG(b)
	if err != nil {
		panic(err)
	}
	rel, err := store.Put(b) // then commit rel in the record, then Remove the old one
	if err != nil {
		panic(err)
	}
	fmt.Println(width, height, strings.HasPrefix(rel, "images/"))

	// Download.
	r, size, err := store.Open(rel)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	var out strings.Builder
	if err := imagestore.WriteDataURL(&out, r); err != nil {
		panic(err)
	}
	fmt.Println(out.String() == upload, int64(out.Len()) == imagestore.EncodedLen(size))

	// Output:
	// 64 48 true
	// true true
}

func ExampleDecodeDataURL_errors() {
	for _, in := range []string{
		"data:image/jpeg;base64,/9j/4AAQ",
		"data:image/png;base64,iVBORw0KGgo*",
		"data:image/png;base64,SGVsbG8=",
	} {
		b, err := imagestore.DecodeDataURL(in)
		if err == nil {
			_, _, err = imagestore.CheckPNG(b)
		}
		fmt.Println(err)
	}
	// Output:
	// only PNG is supported: the data URL declares "image/jpeg"; it must start with "data:image/png;base64,"
	// invalid base64: bad character, bad padding or truncated data at byte 11 of the image data (standard alphabet, padding optional)
	// only PNG is supported: the data does not start with the PNG signature
}
