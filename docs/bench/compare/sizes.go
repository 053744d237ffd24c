package main

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// printSizes builds src (a module directory) unstripped and prints what each module
// (and each package of the main module) adds to the binary, by the sizes of its code
// and data symbols (go tool nm); files embedded with go:embed carry no symbol and are
// counted from the source tree. What remains (the tables the runtime needs for every
// function, type names, strings) is listed as such: it grows with the code.
func printSizes(name, src, work, toolchain string) error {
	bin := filepath.Join(work, "sizes-"+strings.ReplaceAll(name, " ", "-"))
	cmd := exec.Command("go", "build", "-trimpath", "-tags", releaseTags(src), "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN="+toolchain, "GOFLAGS=-mod=mod")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build (unstripped) in %s: %w", src, err)
	}
	stripped := bin + "-stripped"
	cmd = exec.Command("go", "build", "-trimpath", "-tags", releaseTags(src), "-ldflags=-s -w", "-o", stripped, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN="+toolchain, "GOFLAGS=-mod=mod")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return err
	}
	st, err := os.Stat(stripped)
	if err != nil {
		return err
	}
	modules, err := binaryModules(bin, toolchain)
	if err != nil {
		return err
	}
	nm := exec.Command("go", "tool", "nm", "-size", bin)
	nm.Env = append(os.Environ(), "GOTOOLCHAIN="+toolchain)
	out, err := nm.Output()
	if err != nil {
		return fmt.Errorf("go tool nm: %w", err)
	}
	bySize, byCode := map[string]int64{}, map[string]int64{}
	var symbols, code int64
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[2] {
		case "T", "t", "R", "r", "D", "d": // B, b (zeroed at start) take no room in the file
		default:
			continue
		}
		sym := strings.Join(f[3:], " ")
		if strings.HasPrefix(sym, "go:func.") || strings.HasPrefix(sym, "runtime.findfunctab") {
			continue // per-function tables: the remainder
		}
		g := group(symbolPackage(sym), modules)
		bySize[g] += size
		symbols += size
		if f[2] == "T" || f[2] == "t" {
			byCode[g] += size
			code += size
		}
	}
	embedded, err := embeddedBytes(src)
	if err != nil {
		return err
	}
	var embeddedTotal int64
	for _, v := range embedded {
		embeddedTotal += v
	}
	// What no symbol names (pclntab, function data, type names, headers) grows with
	// the code: each part gets its share by its code size, an estimate.
	rest := st.Size() - symbols - embeddedTotal
	type row struct {
		name        string
		size, total int64
	}
	var rows []row
	for k, v := range bySize {
		share := int64(0)
		if code > 0 {
			share = rest * byCode[k] / code
		}
		rows = append(rows, row{k, v, v + share})
	}
	for k, v := range embedded {
		rows = append(rows, row{"embedded files: " + k, v, v})
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(b.total, a.total) })
	fmt.Printf("\n%s: %.2f MiB stripped, by part (KiB): its code and data symbols, and with its share of the\n"+
		"runtime's tables (pclntab, func data; %d KiB in all, shared by code size: an estimate):\n\n",
		name, float64(st.Size())/(1<<20), rest>>10)
	fmt.Println("| part | symbols | with tables |\n|---|---|---|")
	var small, smallTotal int64
	for _, r := range rows {
		if r.total < 32<<10 {
			small += r.size
			smallTotal += r.total
			continue
		}
		fmt.Printf("| %s | %d | %d |\n", r.name, r.size>>10, r.total>>10)
	}
	fmt.Printf("| parts under 32 KiB | %d | %d |\n", small>>10, smallTotal>>10)
	return nil
}

// binaryModules lists the module paths linked into bin, longest first.
func binaryModules(bin, toolchain string) ([]string, error) {
	cmd := exec.Command("go", "version", "-m", bin)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+toolchain)
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var mods []string
	for line := range strings.SplitSeq(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "mod" || f[0] == "dep") {
			mods = append(mods, f[1])
		}
	}
	slices.SortFunc(mods, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return mods, nil
}

// symbolPackage is the import path of the package a symbol belongs to.
func symbolPackage(sym string) string {
	for _, p := range []string{"type:", "go:itab.", "go:string.", "go:"} {
		sym = strings.TrimPrefix(sym, p)
	}
	sym = strings.TrimLeft(sym, "*")
	if i := strings.IndexAny(sym, "[(,"); i >= 0 {
		sym = sym[:i]
	}
	slash := strings.LastIndex(sym, "/")
	if dot := strings.Index(sym[slash+1:], "."); dot >= 0 {
		return sym[:slash+1+dot]
	}
	return sym
}

// mainModule's packages are listed one by one, other modules as a whole.
const mainModule = "github.com/gardend/gardend"

func group(pkg string, modules []string) string {
	pkg = strings.TrimPrefix(pkg, "vendor/")
	if pkg == mainModule || strings.HasPrefix(pkg, mainModule+"/") {
		rest := strings.TrimPrefix(strings.TrimPrefix(pkg, mainModule), "/")
		if rest == "" {
			return "gardend (main)"
		}
		parts := strings.SplitN(rest, "/", 3)
		return "gardend/" + strings.Join(parts[:min(2, len(parts))], "/")
	}
	for _, m := range modules {
		if pkg == m || strings.HasPrefix(pkg, m+"/") {
			return m
		}
	}
	first, _, _ := strings.Cut(pkg, "/")
	if !strings.Contains(first, ".") {
		switch {
		case strings.HasPrefix(pkg, "crypto"), strings.HasPrefix(pkg, "golang.org/x/crypto"):
			return "std: crypto"
		case strings.HasPrefix(pkg, "net"), strings.HasPrefix(pkg, "golang.org/x/net"):
			return "std: net, net/http"
		case pkg == "runtime" || strings.HasPrefix(pkg, "runtime/") || strings.HasPrefix(pkg, "internal/"):
			return "std: runtime, internal"
		}
		return "std: other"
	}
	if strings.HasPrefix(pkg, "golang.org/x/") { // the standard library's vendored copies
		return "std: vendored golang.org/x"
	}
	return "other: " + pkg
}

var (
	embedPattern = regexp.MustCompile(`(?m)^//go:embed\s+(.+)$`)
	// embedFS matches the declaration after a go:embed line when it is an embed.FS.
	embedFS = regexp.MustCompile(`^\s*(?://[^\n]*\n\s*)*var\s+\w+\s+embed\.FS`)
)

// embeddedBytes sums the files each package of src embeds (not test files), by
// package directory.
func embeddedBytes(src string) (map[string]int64, error) {
	out := map[string]int64{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") ||
			strings.Contains(p, string(filepath.Separator)+"testdata"+string(filepath.Separator)) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dir := filepath.Dir(p)
		rel, _ := filepath.Rel(src, dir)
		for _, loc := range embedPattern.FindAllSubmatchIndex(b, -1) {
			// Files embedded in a string or []byte variable are a symbol of their own
			// (counted above); only an embed.FS's files are not.
			if v := b[loc[1]:]; !embedFS.Match(v) {
				continue
			}
			for pat := range strings.FieldsSeq(string(b[loc[2]:loc[3]])) {
				matches, err := filepath.Glob(filepath.Join(dir, pat))
				if err != nil {
					return err
				}
				for _, match := range matches {
					_ = filepath.WalkDir(match, func(q string, e fs.DirEntry, err error) error {
						if err != nil || e.IsDir() {
							return err
						}
						info, err := e.Info()
						if err != nil {
							return err
						}
						out[rel+"/"+pat] += info.Size()
						return nil
					})
				}
			}
		}
		return nil
	})
	return out, err
}
