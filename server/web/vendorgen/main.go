// Command vendorgen refreshes the web app's vendored libraries from npm: it fetches
// each package's released tarball with `npm pack`, copies the files the app loads
// into static/vendor/<package>/, with the package's LICENSE and a VERSION file, and
// points the add-ons' bare "three" imports at the vendored module (the page's CSP
// forbids an inline import map). Run it with `go generate ./server/web`; pass
// -three VERSION to move to another release (e.g. "latest").
package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// threeVersion is the release the tree holds; change it here or with -three.
const threeVersion = "0.187.0"

// threeFiles maps a path in the package to its name under static/vendor/three.
var threeFiles = map[string]string{
	"LICENSE":                                "LICENSE",
	"build/three.module.js":                  "three.module.js",
	"build/three.core.js":                    "three.core.js",
	"examples/jsm/controls/OrbitControls.js": "OrbitControls.js",
}

// bareThree matches the add-ons' `from 'three'` imports.
var bareThree = regexp.MustCompile(`from\s*['"]three['"]`)

func main() {
	version := flag.String("three", threeVersion, "three.js version (npm spec) to vendor")
	out := flag.String("out", "static/vendor/three", "directory to write")
	flag.Parse()
	if err := vendorThree(*version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "vendorgen:", err)
		os.Exit(1)
	}
}

func vendorThree(version, out string) error {
	tmp, err := os.MkdirTemp("", "vendorgen-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a leftover in the temporary directory
	cmd := exec.Command("npm", "pack", "--json", "--pack-destination", tmp, "three@"+version)
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("npm pack three@%s: %w (is npm installed?)", version, err)
	}
	var packed []struct {
		Version  string `json:"version"`
		Filename string `json:"filename"`
	}
	if err := json.Unmarshal(raw, &packed); err != nil || len(packed) != 1 {
		return fmt.Errorf("npm pack answered %q: %v", raw, err)
	}
	files, err := extract(filepath.Join(tmp, filepath.Base(packed[0].Filename)))
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for src, dst := range threeFiles {
		body, ok := files[src]
		if !ok {
			return fmt.Errorf("three@%s has no %s", packed[0].Version, src)
		}
		if strings.HasSuffix(dst, ".js") {
			body = bareThree.ReplaceAll(body, []byte(`from './three.module.js'`))
		}
		if err := os.WriteFile(filepath.Join(out, dst), body, 0o644); err != nil {
			return err
		}
	}
	note := fmt.Sprintf("three %s (npm), MIT licence (LICENSE).\nFiles: build/three.module.js, build/three.core.js, examples/jsm/controls/OrbitControls.js\n(its `from 'three'` import rewritten to './three.module.js').\nRefresh: go generate ./server/web\n", packed[0].Version)
	fmt.Printf("vendored three %s into %s\n", packed[0].Version, out)
	return os.WriteFile(filepath.Join(out, "VERSION"), []byte(note), 0o644)
}

// extract reads the wanted files of an npm tarball (paths under "package/").
func extract(tgz string) (map[string][]byte, error) {
	f, err := os.Open(tgz)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(h.Name, "package/")
		if _, want := threeFiles[name]; !want || h.Typeflag != tar.TypeReg {
			continue
		}
		body, err := io.ReadAll(io.LimitReader(tr, 64<<20))
		if err != nil {
			return nil, err
		}
		out[name] = body
	}
}
