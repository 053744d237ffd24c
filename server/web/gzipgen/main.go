// Command gzipgen packs the web app's static files for embedding (see
// server/web/internal/pack): gz/<name>.gz for each file but the index, and
// assets_gen.go. Run it with `go generate -run gzipgen ./server/web` after changing
// anything under static/ (TestPackedAssets fails until then).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gardend/gardend/server/web/internal/pack"
)

func main() {
	if err := run("static", "gz", "assets_gen.go"); err != nil {
		fmt.Fprintln(os.Stderr, "gzipgen:", err)
		os.Exit(1)
	}
}

func run(src, out, gen string) error {
	files, err := pack.Read(os.DirFS(src))
	if err != nil {
		return err
	}
	m, gz, err := pack.Build(files)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	for name, body := range gz {
		p := filepath.Join(out, filepath.FromSlash(name)+".gz")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			return err
		}
	}
	code, err := pack.GoSource(m)
	if err != nil {
		return err
	}
	if err := os.WriteFile(gen, code, 0o644); err != nil {
		return err
	}
	var raw, packed int
	for _, f := range m.Files {
		raw += f.Size
		packed += f.GzipSize
	}
	fmt.Printf("packed %d files: %d bytes, %d gzipped (version %s)\n", len(m.Files), raw, packed, m.Version)
	return nil
}
