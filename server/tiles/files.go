package tiles

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gardend/gardend/imagestore/pyramid"
)

// Pyramid is an open pack. Close it when done.
type Pyramid struct {
	f *os.File
	*pyramid.Pack
}

// Close closes the pack's file.
func (p *Pyramid) Close() error { return p.f.Close() }

// Version names the pyramid in URLs and ETags: the picture's digest (SHA-256, the
// first 128 bits) and the pyramid format, so that a gardend that tiles differently
// never serves a new tile under an old name.
func (p *Pyramid) Version() string {
	return hex.EncodeToString(p.Info.Digest[:16]) + "-" + fmt.Sprint(pyramid.Version)
}

// touchEvery: a pack served is marked used at most this often (the budget evicts the
// least recently used).
const touchEvery = time.Minute

// open opens the pack of name; fs.ErrNotExist when there is none. A pack that does
// not read as one (another format, a damaged file) is deleted, to be built again.
func (m *Manager) open(name string) (*Pyramid, error) {
	p := m.file(name, packExt)
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close() // read only
		return nil, err
	}
	pack, err := pyramid.OpenPack(f, st.Size())
	if err != nil {
		_ = f.Close() // read only
		if errors.Is(err, pyramid.ErrBadPack) {
			m.log.Warn().Err(err).Str("file", p).Msg("a tile pack that does not read; it is deleted and built again")
			_ = os.Remove(p) // gone or not, it is rebuilt
			return nil, fs.ErrNotExist
		}
		return nil, err
	}
	if now := time.Now(); m.cfg.MaxBytes > 0 && now.Sub(st.ModTime()) > touchEvery {
		_ = os.Chtimes(p, now, now) // best effort: a missed touch only ages the pack
	}
	return &Pyramid{f: f, Pack: pack}, nil
}

// accountLocked counts a new pack of n bytes against the budget and evicts the least
// recently used others when over it; m.mu held.
func (m *Manager) accountLocked(n int64, keep string) {
	if m.cfg.MaxBytes <= 0 {
		return
	}
	m.used += n
	if m.scanned && m.used <= m.cfg.MaxBytes {
		return
	}
	type kept struct {
		name string
		size int64
		used time.Time
	}
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		m.log.Error().Err(err).Msg("measure the tile packs")
		return
	}
	var packs []kept
	var total int64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), packExt)
		info, err := e.Info()
		if !ok || err != nil || strings.HasPrefix(name, tempPrefix) {
			continue
		}
		total += info.Size()
		if name != keep {
			packs = append(packs, kept{name, info.Size(), info.ModTime()})
		}
	}
	m.used, m.scanned = total, true
	if total <= m.cfg.MaxBytes {
		return
	}
	slices.SortFunc(packs, func(a, b kept) int { return cmp.Or(a.used.Compare(b.used), strings.Compare(a.name, b.name)) })
	target := m.cfg.MaxBytes / 10 * 9
	evicted := 0
	for _, p := range packs {
		if m.used <= target {
			break
		}
		// The mark first: a crash in between leaves a mark beside a pack, which is
		// served as ever.
		if err := os.WriteFile(m.file(p.name, evictedExt), nil, 0o600); err != nil {
			m.log.Error().Err(err).Msg("mark an evicted tile pack")
			continue
		}
		if err := os.Remove(m.file(p.name, packExt)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.log.Error().Err(err).Msg("evict a tile pack")
			continue
		}
		m.used -= p.size
		evicted++
	}
	m.log.Info().Int("packs", evicted).Int64("used", m.used).Int64("max", m.cfg.MaxBytes).
		Msg("tile packs over --tiles-max-bytes: the least recently used were deleted; they are built again when asked for")
}

// Used is the bytes of packs as last measured (metrics).
func (m *Manager) Used() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// Sweep deletes the files of pictures the store no longer refers to (a crash between
// a deletion's commit and its clean-up, a node that missed another's deletion) and,
// at start-up (startup: no build runs yet), the temporary files of interrupted
// builds. It returns how many files it deleted.
func (m *Manager) Sweep(startup bool) (int, error) {
	// The listing comes first: a pack built after the store is read belongs to a
	// picture referred to then, and paths never come back once unreferenced.
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return 0, err
	}
	paths, err := m.src.ImagePaths()
	if err != nil {
		return 0, err
	}
	keep := make(map[string]bool, len(paths))
	for p := range paths {
		if name, ok := packName(p); ok {
			keep[name] = true
		}
	}
	n := 0
	var errs []error
	for _, e := range entries {
		base := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		switch {
		case strings.HasPrefix(base, tempPrefix):
			if !startup {
				continue
			}
		case !keep[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(base, packExt), failedExt), evictedExt)]:
		default:
			continue
		}
		if err := os.Remove(m.file(base, "")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if n > 0 {
		m.mu.Lock()
		m.scanned = false
		m.mu.Unlock()
	}
	return n, errors.Join(errs...)
}
