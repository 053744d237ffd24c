package cli

import (
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/gardend/gardend/store"
)

// checkOpUTF8 refuses an admin operation with a string field that is not UTF-8, with
// the error the store gives in process ("name: name must be UTF-8 text (invalid byte
// 0xFF at character 1)"). Through the admin socket the operation goes as JSON, whose
// encoding would quietly turn the bytes into U+FFFD, and the store would keep that:
// the same command would succeed or fail by whether serve is running.
func checkOpUTF8(op any) error {
	v := reflect.ValueOf(op)
	if v.Kind() != reflect.Struct {
		return nil
	}
	for i := range v.NumField() {
		f, field := v.Type().Field(i), v.Field(i)
		if !f.IsExported() || field.Kind() != reflect.String {
			continue
		}
		if s := field.String(); !utf8.ValidString(s) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			return store.Invalid(name, name+" "+store.TextProblem(s))
		}
	}
	return nil
}
