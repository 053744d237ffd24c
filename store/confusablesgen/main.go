// Command confusablesgen writes store/confusables_table.go, the table of Unicode's
// confusables (UTS #39) that store.UsernameLooks computes skeletons with, and
// store/UNICODE-LICENSE.txt, the licence of that data, from Unicode's confusables.txt.
// Run it with `go generate ./store` and commit both files: the build needs no network.
//
// Where the file comes from: this machine reaches Debian's archive but not
// unicode.org, and Debian's unicode-data package does not ship the security files.
// ICU's source package does, verbatim, as icu/source/data/unidata/confusables.txt,
// with Unicode's licence as the first part of icu/LICENSE. Without flags the command
// fetches that source package with apt-get (`apt-get source --download-only icu`,
// from a deb-src line of -suite in a throwaway apt configuration, so the system's is
// untouched) and reads both files from its orig tarball; -icu reads an ICU source
// tarball already at hand; -confusables and -license read the two files directly
// (e.g. downloaded from https://www.unicode.org/Public/security/<version>/).
//
// The file's "# Version:" header must say -version: moving to a newer Unicode release
// is a deliberate change (raise the constant, regenerate, and add the schema
// migrations that re-index stored usernames: the skeletons change with the data).
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// unicodeVersion is the confusables.txt release the table holds: Debian bookworm's
// ICU 72.1 ships Unicode 15.0.0's.
const unicodeVersion = "15.0.0"

// Paths inside ICU's source tarball.
const (
	icuConfusables = "icu/source/data/unidata/confusables.txt"
	icuLicense     = "icu/LICENSE"
)

func main() {
	version := flag.String("version", unicodeVersion, "the version confusables.txt must declare")
	icu := flag.String("icu", "", "ICU source tarball (icu_*.orig.tar.gz) to read confusables.txt and the licence from")
	confusables := flag.String("confusables", "", "confusables.txt to read (with -license)")
	license := flag.String("license", "", "Unicode's licence text to keep beside the table (with -confusables)")
	suite := flag.String("suite", "bookworm", "Debian suite whose ICU source package to fetch when no file is given")
	out := flag.String("out", ".", "directory of package store")
	flag.Parse()
	if err := run(*version, *icu, *confusables, *license, *suite, *out); err != nil {
		fmt.Fprintln(os.Stderr, "confusablesgen:", err)
		os.Exit(1)
	}
}

func run(version, icu, confusablesPath, licensePath, suite, out string) error {
	var data, license []byte
	var origin string
	switch {
	case confusablesPath != "" || licensePath != "":
		if confusablesPath == "" || licensePath == "" {
			return errors.New("-confusables and -license go together")
		}
		var err error
		if data, err = os.ReadFile(confusablesPath); err != nil {
			return err
		}
		if license, err = os.ReadFile(licensePath); err != nil {
			return err
		}
		origin = filepath.Base(confusablesPath)
	default:
		if icu == "" {
			tmp, err := os.MkdirTemp("", "confusablesgen-")
			if err != nil {
				return err
			}
			defer func() { _ = os.RemoveAll(tmp) }() // a scratch copy of the source package
			if icu, err = fetchICUSource(tmp, suite); err != nil {
				return err
			}
		}
		files, err := readTarGz(icu, icuConfusables, icuLicense)
		if err != nil {
			return err
		}
		data, license = files[icuConfusables], unicodeLicense(files[icuLicense])
		origin = filepath.Base(icu) + " (Debian's ICU source package): " + icuConfusables
	}
	if err := checkHeader(data, version); err != nil {
		return err
	}
	if len(license) == 0 || !bytes.Contains(license, []byte("Unicode")) {
		return errors.New("the licence text is empty or not Unicode's")
	}
	entries, err := parse(data)
	if err != nil {
		return err
	}
	src, err := table(entries, version, origin, sha256.Sum256(data))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "confusables_table.go"), src, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "UNICODE-LICENSE.txt"), license, 0o644)
}

// fetchICUSource downloads Debian's ICU source package into dir with a throwaway apt
// configuration holding one deb-src line, and returns its orig tarball.
func fetchICUSource(dir, suite string) (string, error) {
	for _, d := range []string{"parts", "lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return "", err
		}
	}
	sources := "Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: " + suite +
		"\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
	if err := os.WriteFile(filepath.Join(dir, "parts", "icu-src.sources"), []byte(sources), 0o644); err != nil {
		return "", err
	}
	opts := []string{
		"-o", "Dir::Etc::SourceList=/dev/null",
		"-o", "Dir::Etc::SourceParts=" + filepath.Join(dir, "parts"),
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
	}
	for _, args := range [][]string{{"update"}, {"source", "--download-only", "icu"}} {
		cmd := exec.Command("apt-get", append(append([]string{}, opts...), args...)...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("apt-get %s: %w (is this a Debian system? or pass -icu or -confusables)", strings.Join(args, " "), err)
		}
	}
	found, err := filepath.Glob(filepath.Join(dir, "icu_*.orig.tar.gz"))
	if err != nil || len(found) != 1 {
		return "", fmt.Errorf("apt-get source icu left %v, not one icu_*.orig.tar.gz", found)
	}
	return found[0], nil
}

// readTarGz returns the named files of a .tar.gz.
func readTarGz(path string, names ...string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string][]byte{}
	tr := tar.NewReader(gz)
	for len(out) < len(names) {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, n := range names {
			if h.Name == n {
				if out[n], err = io.ReadAll(io.LimitReader(tr, 16<<20)); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, n := range names {
		if out[n] == nil {
			return nil, fmt.Errorf("%s has no %s", path, n)
		}
	}
	return out, nil
}

// unicodeLicense is the first part of ICU's LICENSE: Unicode's own licence, which the
// data files come under (the rest covers third-party code in ICU's libraries).
func unicodeLicense(icuLicense []byte) []byte {
	if i := bytes.Index(icuLicense, []byte("\n-----")); i > 0 {
		icuLicense = icuLicense[:i+1]
	}
	return icuLicense
}

var versionLine = regexp.MustCompile(`(?m)^# Version: (\S+)\s*$`)

func checkHeader(data []byte, want string) error {
	if !bytes.HasPrefix(data, []byte("# confusables.txt")) {
		return errors.New("the file does not start with \"# confusables.txt\": not Unicode's confusables data")
	}
	m := versionLine.FindSubmatch(data)
	if m == nil {
		return errors.New("confusables.txt has no \"# Version:\" line")
	}
	if got := string(m[1]); got != want {
		return fmt.Errorf("confusables.txt is version %s, want %s (pass -version %s to move to it, and re-index stored usernames)", got, want, got)
	}
	return nil
}

type entry struct {
	from rune
	to   string
}

// parse reads the data lines "SOURCE ;\tTARGET… ;\tMA\t# comment".
func parse(data []byte) ([]entry, error) {
	var out []entry
	seen := map[rune]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimPrefix(line, "\ufeff")
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(line, ";")
		if len(fields) < 3 || strings.TrimSpace(fields[2]) != "MA" {
			return nil, fmt.Errorf("line %d: want SOURCE ; TARGET ; MA, got %q", n, sc.Text())
		}
		from, err := codePoints(fields[0])
		if err != nil || len(from) != 1 {
			return nil, fmt.Errorf("line %d: source must be one code point: %q", n, fields[0])
		}
		to, err := codePoints(fields[1])
		if err != nil || len(to) == 0 {
			return nil, fmt.Errorf("line %d: bad target %q", n, fields[1])
		}
		if seen[from[0]] {
			return nil, fmt.Errorf("line %d: U+%04X mapped twice", n, from[0])
		}
		seen[from[0]] = true
		out = append(out, entry{from: from[0], to: string(to)})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) < 1000 {
		return nil, fmt.Errorf("only %d mappings: not the whole file", len(out))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].from < out[j].from })
	return out, nil
}

func codePoints(s string) ([]rune, error) {
	var out []rune
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseUint(f, 16, 32)
		if err != nil || v > 0x10FFFF {
			return nil, fmt.Errorf("bad code point %q", f)
		}
		out = append(out, rune(v))
	}
	return out, nil
}

func table(entries []entry, version, origin string, sum [32]byte) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `// Code generated by confusablesgen; DO NOT EDIT.

// From Unicode's confusables.txt, version %s (sha256 %x), taken from %s.
// The data's licence is UNICODE-LICENSE.txt beside this file.

package store

// ConfusablesVersion is the Unicode release of the confusables data that username
// skeletons are computed with; stored skeleton indexes are built with it.
const ConfusablesVersion = %q

// confusables maps each code point Unicode lists as confusable to its prototype, the
// sequence it is drawn like, by code point (UTS #39, %d mappings).
var confusables = [...]confusable{
`, version, sum, origin, version, len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "\t{0x%04X, %s},\n", e.from, strconv.QuoteToASCII(e.to))
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
