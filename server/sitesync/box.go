package sitesync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/rs/zerolog"

	"github.com/gardend/gardend/store"
)

// DefaultMaxBytes is --sync-max-bytes: how much a box keeps for the office while the
// uplink is down.
const DefaultMaxBytes = 1 << 30

// BoxConfig configures a field box's sync.
type BoxConfig struct {
	Store  store.Backend
	Images store.ImageContent
	// Photos is where log photos' bytes are (the server's photo content).
	Photos store.PhotoContent
	// DataDir is the data directory; the NATS server's files go in DataDir/nats.
	DataDir                   string
	Uplink, CredsFile, CAFile string
	// MaxBytes bounds the changes and pictures waiting for the office (0:
	// DefaultMaxBytes). Past it the box goes on serving and stops queueing until the
	// office catches up; then it sends every record changed meanwhile as it is.
	MaxBytes int64
	Logger   zerolog.Logger
	Now      func() time.Time
	// Batch is how many changes go out at once (0: 256).
	Batch int
	// Poll is how often the change feed is read when nothing woke the loop (0: 250ms).
	Poll time.Duration
}

// Box is a field box's sync: the embedded NATS server and its loops.
type Box struct {
	cfg  BoxConfig
	site SiteIdentity
	log  zerolog.Logger
	srv  *server.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	out  jetstream.Stream
	pics jetstream.ObjectStore

	mu          sync.Mutex
	lastContact time.Time
	acked       uint64
	overLimit   bool
	// sent maps the sequence of each change in the stream to its stream sequence,
	// and objects the picture objects to the change that put them, until the office
	// acknowledges them.
	sent []sentChange
	// skipped are changes not sent because an earlier message of the batch sent
	// their record as it then was; they are done when that message is.
	skipped []skippedChange
	objects map[string]uint64
	// officeCursor is the last office change applied here; the counters count them.
	officeCursor                 uint64
	appliedOffice, refusedOffice uint64
	// published counts the messages this process put into the stream;
	// publishedSeq is the last change of the feed they sent.
	published, publishedSeq uint64
	// fullAt is what the stream and bucket held when JetStream refused more for
	// room; 0 while it has not.
	fullAt int64
	ackCh  chan uint64
	wake   chan struct{}
}

type sentChange struct{ seq, streamSeq uint64 }

// skippedChange: the change seq went with the message of change cover.
type skippedChange struct{ seq, cover uint64 }

// StartBox reads the site's identity from its credentials, starts the embedded
// NATS server and connects to it, and turns the change feed on (the first time,
// that enqueues every record: the box's snapshot). Run then syncs.
func StartBox(ctx context.Context, cfg BoxConfig, creds []byte) (*Box, error) {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 256
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	id, err := ParseSiteCreds(creds)
	if err != nil {
		return nil, fmt.Errorf("--sync-creds %s: %w", cfg.CredsFile, err)
	}
	b := &Box{cfg: cfg, site: id, log: cfg.Logger.With().Str("component", "sync").Logger(),
		objects: map[string]uint64{}, ackCh: make(chan uint64, 16), wake: make(chan struct{}, 1)}
	b.srv, err = StartBoxServer(BoxServerOptions{Site: id, StoreDir: filepath.Join(cfg.DataDir, "nats"), Uplink: cfg.Uplink,
		CredsFile: cfg.CredsFile, CAFile: cfg.CAFile, MaxBytes: cfg.MaxBytes, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	if err := b.connect(ctx); err != nil {
		b.srv.Shutdown()
		return nil, err
	}
	if started, err := cfg.Store.StartChangeFeed(); err != nil {
		b.Close()
		return nil, fmt.Errorf("start the change feed: %w", err)
	} else if started {
		b.log.Info().Msg("sync: change feed started; every record of this box will be sent (its first snapshot)")
	}
	if b.officeCursor, err = cfg.Store.ReplicaCursor(store.OfficeSite); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func (b *Box) connect(ctx context.Context) error {
	n := b.site.Number
	var err error
	b.nc, err = ConnectInProcess(b.srv, "gardend-sync", nats.CustomInboxPrefix(InboxPrefix(n)))
	if err != nil {
		return fmt.Errorf("connect to the embedded NATS server: %w", err)
	}
	b.js, err = jetstream.New(b.nc, jetstream.WithPublishAsyncMaxPending(b.cfg.Batch))
	if err != nil {
		return err
	}
	// Only changes the office has not acknowledged are kept (the feed holds them
	// too), so the stream is a buffer: it is refilled from the feed on every start.
	b.out, err = b.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: OutStream, Subjects: []string{OutSubject(n)}, Storage: jetstream.FileStorage,
		MaxBytes: b.cfg.MaxBytes, Discard: jetstream.DiscardNew, Duplicates: 2 * time.Minute,
		MaxMsgSize: DefaultMaxPayload,
	})
	if err != nil {
		return fmt.Errorf("the box's stream of changes: %w", err)
	}
	b.pics, err = b.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: PictureBucket(n), Storage: jetstream.FileStorage, MaxBytes: b.cfg.MaxBytes,
	})
	if err != nil {
		return fmt.Errorf("the box's picture bucket: %w", err)
	}
	if err := setLastMaxBytes(filepath.Join(b.cfg.DataDir, "nats"), b.cfg.MaxBytes); err != nil {
		return fmt.Errorf("record --sync-max-bytes: %w", err)
	}
	// What the stream and the bucket hold stays: the feed is sent again from its
	// start, and what they hold of it already is kept once (the stream drops a
	// message it has by its id and answers where it is; a picture that is there is
	// not put again). Only when the office has everything do they start empty, so
	// that nothing acknowledged before a crash lingers.
	if fs, err := b.cfg.Store.ChangeStats(); err != nil {
		return err
	} else if fs.Records == 0 {
		if err := b.out.Purge(ctx); err != nil {
			return err
		}
		if err := purgeObjects(ctx, b.js, PictureBucket(n)); err != nil {
			return err
		}
	}
	return nil
}

// purgeObjects empties a bucket: pictures are put again from the feed.
func purgeObjects(ctx context.Context, js jetstream.JetStream, bucket string) error {
	s, err := js.Stream(ctx, "OBJ_"+bucket)
	if err != nil {
		return err
	}
	return s.Purge(ctx)
}

// Close stops the NATS server; call it after Run returned.
func (b *Box) Close() {
	if b.nc != nil {
		b.nc.Close()
	}
	b.srv.Shutdown()
	b.srv.WaitForShutdown()
}

// Site is the box's identity.
func (b *Box) Site() SiteIdentity { return b.site }

// SiteName names a site as this box knows it: itself and the office.
func (b *Box) SiteName(n uint32) (string, bool) {
	switch n {
	case store.OfficeSite:
		return store.OfficeName, true
	case b.site.Number:
		return b.site.Name, true
	}
	return "", false
}

// Wake tells the loop that changes may be waiting (a write just happened).
func (b *Box) Wake() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Run syncs until ctx ends: changes out, acknowledgments in, the office's users in,
// reports out.
func (b *Box) Run(ctx context.Context) error {
	sub, err := b.nc.Subscribe(AckSubject(b.site.Number), func(m *nats.Msg) {
		var a ackMessage
		if controlMessage(m, &a) != nil || a.Seq == 0 {
			return
		}
		select {
		case b.ackCh <- a.Seq:
		default: // a later ack follows
		}
	})
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	var wg sync.WaitGroup
	wg.Go(func() { b.publishLoop(ctx) })
	wg.Go(func() { b.officeLoop(ctx) })
	wg.Go(func() { b.reportLoop(ctx) })
	wg.Wait()
	return nil
}

// controlMessage decodes an acknowledgment or a report into v, exactly: a message a
// JetStream consumer delivered (anyone's records aimed at the subject by a push
// consumer) or with a field v does not have is no control message.
func controlMessage(m *nats.Msg, v any) error {
	if strings.HasPrefix(m.Reply, "$JS.") || m.Header.Get("Nats-Stream") != "" {
		return errors.New("a JetStream delivery")
	}
	dec := json.NewDecoder(bytes.NewReader(m.Data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more after the message")
	}
	return nil
}

// ackMessage is the office's acknowledgment: every change of the site up to Seq is
// applied (or refused and logged) there.
type ackMessage struct {
	Seq uint64    `json:"seq"`
	At  time.Time `json:"at"`
}

// reportMessage is what a box tells the office of itself.
type reportMessage struct {
	BacklogRecords int64      `json:"backlog_records"`
	BacklogBytes   int64      `json:"backlog_bytes"`
	OldestUnsent   *time.Time `json:"oldest_unsent,omitempty"`
	OverLimit      bool       `json:"over_limit,omitempty"`
	// Connects counts the times the box's leaf node connected since it started,
	// Session names that start.
	Connects uint64 `json:"connects"`
	Session  string `json:"session"`
}

func (b *Box) publishLoop(ctx context.Context) {
	var published uint64
	compacted := time.Time{}
	t := time.NewTicker(b.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case seq := <-b.ackCh:
			b.acknowledged(ctx, seq)
		case <-t.C:
		case <-b.wake:
		}
		for ctx.Err() == nil {
			full, err := b.full(ctx)
			if err != nil {
				b.log.Warn().Err(err).Msg("sync: read the box's stream")
				break
			}
			if full {
				if time.Since(compacted) > time.Minute {
					if n, err := b.cfg.Store.CompactChanges(published); err != nil {
						b.log.Warn().Err(err).Msg("sync: compact the change feed")
					} else if n > 0 {
						b.log.Debug().Int("changes", n).Msg("sync: compacted the change feed")
					}
					compacted = time.Now()
				}
				break
			}
			n, last, err := b.publishBatch(ctx, published)
			if isStorageFull(err) {
				// JetStream refused it for room: full until the office takes some.
				if used, uerr := b.pendingBytes(ctx); uerr == nil {
					b.mu.Lock()
					b.fullAt = max(used, 1)
					b.mu.Unlock()
				}
				continue
			}
			if err != nil {
				if ctx.Err() == nil {
					b.log.Warn().Err(err).Msg("sync: queue changes for the office")
				}
				break
			}
			published = last
			b.mu.Lock()
			b.publishedSeq = last
			b.mu.Unlock()
			if n < b.cfg.Batch {
				break
			}
		}
	}
}

// full reports whether what waits for the office has reached MaxBytes, and says so
// once when it starts and ends.
func (b *Box) full(ctx context.Context) (bool, error) {
	used, err := b.pendingBytes(ctx)
	if err != nil {
		return false, err
	}
	b.mu.Lock()
	if used < b.fullAt {
		b.fullAt = 0 // the office took some: try again
	}
	full := used >= b.cfg.MaxBytes || b.fullAt > 0
	was := b.overLimit
	b.overLimit = full
	b.mu.Unlock()
	switch {
	case full && !was:
		b.log.Warn().Int64("bytes", used).Int64("max_bytes", b.cfg.MaxBytes).
			Msg("sync: the backlog for the office is over --sync-max-bytes: the box goes on serving, keeps recording what changes, and sends it as it then is once the office catches up")
	case !full && was:
		b.log.Info().Msg("sync: the backlog is under --sync-max-bytes again; sending what changed meanwhile")
	}
	return full, nil
}

// pendingBytes is what the stream and the picture bucket hold.
func (b *Box) pendingBytes(ctx context.Context) (int64, error) {
	info, err := b.out.Info(ctx)
	if err != nil {
		return 0, err
	}
	st, err := b.pics.Status(ctx)
	if err != nil {
		return 0, err
	}
	return int64(info.State.Bytes) + int64(st.Size()), nil
}

// publishBatch sends the changes after published into the box's stream and returns
// how many it read and the last sequence read.
func (b *Box) publishBatch(ctx context.Context, published uint64) (n int, last uint64, err error) {
	cs, err := b.cfg.Store.ChangesAfter(published, b.cfg.Batch)
	if err != nil || len(cs) == 0 {
		return 0, published, err
	}
	type key struct {
		kind    string
		id, ref uint64
	}
	seen := map[key]uint64{} // → the change whose message sends the record
	var skipped []skippedChange
	var (
		futures []jetstream.PubAckFuture
		seqs    []uint64
		sent    []sentChange
		fresh   uint64
	)
	// What went out is recorded even when the batch fails half-way: its messages
	// are then in the stream, to be let go when the office acknowledges them (the
	// batch is sent again; JetStream drops the messages it has by their ids). Its
	// pictures are held from the moment they are attached (boxAttacher.put).
	defer func() {
		b.mu.Lock()
		b.sent = append(b.sent, sent...)
		b.published += fresh
		b.mu.Unlock()
	}()
	wait := func() error {
		for i, f := range futures {
			select {
			case ack := <-f.Ok():
				// A duplicate's answer names the message the stream has.
				sent = append(sent, sentChange{seq: seqs[i], streamSeq: ack.Sequence})
				if !ack.Duplicate {
					fresh++
				}
			case err := <-f.Err():
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	coarsen(cs)
	for _, c := range cs {
		// The first change of a record in the batch sends it as it is now, which
		// includes the later ones.
		k := key{c.Kind, c.ID, c.Ref}
		if cover, ok := seen[k]; ok {
			skipped = append(skipped, skippedChange{seq: c.Seq, cover: cover})
			continue
		}
		seen[k] = c.Seq
		kd, ok := kinds[c.Kind]
		if !ok {
			return 0, published, errors.Join(fmt.Errorf("change %d: kind %q has no sync adapter", c.Seq, c.Kind), wait())
		}
		rec, err := kd.encode(ctx, b.cfg.Store, b.site.Number, c, &boxAttacher{b: b, seq: c.Seq})
		if errors.Is(err, store.ErrNotFound) {
			rec, err = nil, nil // gone meanwhile: a later change says what became of it
		}
		if err != nil {
			return 0, published, errors.Join(fmt.Errorf("%s: %w", c, err), wait())
		}
		m := Message{Site: b.site.Number, Seq: c.Seq, Kind: c.Kind, ID: globalID(b.site.Number, c.ID),
			Ref: globalID(b.site.Number, c.Ref), Deleted: rec == nil, At: c.At, Rec: rec}
		data, err := json.Marshal(m)
		if err != nil {
			return 0, published, errors.Join(err, wait())
		}
		msg := nats.NewMsg(OutSubject(b.site.Number))
		msg.Data = data
		f, err := b.js.PublishMsgAsync(msg, jetstream.WithMsgID(m.MsgID()))
		if err != nil {
			return 0, published, errors.Join(err, wait())
		}
		futures, seqs = append(futures, f), append(seqs, c.Seq)
	}
	if err := wait(); err != nil {
		return 0, published, err
	}
	b.mu.Lock()
	b.skipped = append(b.skipped, skipped...)
	b.mu.Unlock()
	return len(cs), cs[len(cs)-1].Seq, nil
}

// coarsen rewrites, in place, the refs of changes whose records one record
// includes (Kind.Coarsen), where several of the batch coarsen alike: they go as
// that record, once.
func coarsen(cs []store.Change) {
	type key struct {
		kind string
		id   uint64
		ref  uint64
	}
	coarse := make([]*key, len(cs))
	including := map[key]int{}
	for i, c := range cs {
		if kd, ok := kinds[c.Kind]; ok {
			if ref, ok := kd.coarsen(c.Ref); ok {
				coarse[i] = &key{c.Kind, c.ID, ref}
				including[*coarse[i]]++
			}
		}
	}
	for i, k := range coarse {
		if k != nil && including[*k] > 1 {
			cs[i].Ref = k.ref
		}
	}
}

// acknowledged trims what the office has: the feed up to seq, the stream's messages
// and the pictures of those changes.
func (b *Box) acknowledged(ctx context.Context, seq uint64) {
	b.mu.Lock()
	b.lastContact = b.cfg.Now()
	if seq <= b.acked {
		b.mu.Unlock()
		return
	}
	b.acked = seq
	var purgeBelow uint64
	// Below the first message of a change not acknowledged: after a restart the
	// stream may hold such a message before copies of acknowledged ones.
	kept := b.sent[:0]
	var firstKept uint64
	for _, s := range b.sent {
		if s.seq <= seq {
			purgeBelow = max(purgeBelow, s.streamSeq+1)
		} else {
			kept = append(kept, s)
			if firstKept == 0 || s.streamSeq < firstKept {
				firstKept = s.streamSeq
			}
		}
	}
	if firstKept > 0 {
		purgeBelow = min(purgeBelow, firstKept)
	}
	b.sent = kept
	// The feed is trimmed past the acknowledged change over the skipped changes that
	// follow it, when what they went with is acknowledged too and nothing sent but
	// not acknowledged comes before them: else a batch ending in such changes would
	// stay in the feed, counted as backlog, until the next write.
	trim, firstUnacked := seq, uint64(math.MaxUint64)
	for _, s := range kept {
		firstUnacked = min(firstUnacked, s.seq)
	}
	skipped := b.skipped[:0]
	for i, s := range b.skipped {
		switch {
		case s.seq <= seq:
		case s.seq < firstUnacked && s.cover <= seq && len(skipped) == 0 && trim < s.seq:
			trim = s.seq
		default:
			skipped = append(skipped, b.skipped[i])
		}
	}
	b.skipped = skipped
	var gone []string
	for name, s := range b.objects {
		if s <= seq {
			gone = append(gone, name)
			delete(b.objects, name)
		}
	}
	b.mu.Unlock()
	if _, err := b.cfg.Store.TrimChanges(trim); err != nil {
		b.log.Warn().Err(err).Uint64("seq", trim).Msg("sync: trim the change feed")
	}
	if purgeBelow > 0 {
		if err := b.out.Purge(ctx, jetstream.WithPurgeSequence(purgeBelow)); err != nil {
			b.log.Warn().Err(err).Msg("sync: purge what the office has")
		}
	}
	for _, name := range gone {
		if err := b.pics.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			b.log.Warn().Err(err).Str("object", name).Msg("sync: delete a picture the office has")
		}
	}
}

// boxAttacher puts pictures and photos into the box's bucket for change seq.
type boxAttacher struct {
	b   *Box
	seq uint64
}

func (a *boxAttacher) PutObject(ctx context.Context, name, imagePath string) (int64, string, error) {
	return a.put(ctx, name, func() (io.ReadCloser, error) {
		rc, _, err := a.b.cfg.Images.OpenImage(ctx, imagePath)
		return rc, err
	})
}

func (a *boxAttacher) PutPhotoObject(ctx context.Context, name, photoPath string) (int64, string, error) {
	return a.put(ctx, name, func() (io.ReadCloser, error) {
		if a.b.cfg.Photos == nil {
			return nil, errors.New("the box's sync has no photo content")
		}
		rc, _, err := a.b.cfg.Photos.OpenPhoto(ctx, photoPath)
		return rc, err
	})
}

// put stores what open yields under name, unless the bucket has it already.
func (a *boxAttacher) put(ctx context.Context, name string, open func() (io.ReadCloser, error)) (int64, string, error) {
	// Held for this change from now on: an acknowledgment arriving before the batch
	// ends must not delete a picture this change names (the office would wait for
	// it forever).
	a.b.mu.Lock()
	a.b.objects[name] = max(a.b.objects[name], a.seq)
	a.b.mu.Unlock()
	if info, err := a.b.pics.GetInfo(ctx, name); err == nil {
		whole, err := a.b.wholeObject(ctx, info)
		if err != nil {
			return 0, "", err
		}
		if whole {
			return int64(info.Size), info.Digest, nil
		}
		// A put cut short (the bucket full, say) may leave its description
		// without the chunks: put it again, under a new description.
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return 0, "", err
	}
	rc, err := open()
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = rc.Close() }()
	info, err := a.b.pics.Put(ctx, jetstream.ObjectMeta{Name: name}, io.Reader(rc))
	if err != nil {
		return 0, "", err
	}
	return int64(info.Size), info.Digest, nil
}

// wholeObject reports whether the bucket holds every chunk the object's
// description counts.
func (b *Box) wholeObject(ctx context.Context, info *jetstream.ObjectInfo) (bool, error) {
	s, err := b.js.Stream(ctx, "OBJ_"+info.Bucket)
	if err != nil {
		return false, err
	}
	subject := chunkSubject(info.Bucket, info.NUID)
	si, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return false, err
	}
	return si.State.Subjects[subject] == uint64(info.Chunks), nil
}

// chunkSubject is the subject of an object's chunks in its bucket's stream (the
// object store's layout).
func chunkSubject(bucket, nuid string) string { return "$O." + bucket + ".C." + nuid }

// officeLoop applies the office's users, read from the hub's stream across the leaf
// node whenever the uplink is up.
func (b *Box) officeLoop(ctx context.Context) {
	hub, err := jetstream.NewWithDomain(b.nc, HubDomain)
	if err != nil {
		b.log.Error().Err(err).Msg("sync: the hub's JetStream")
		return
	}
	for ctx.Err() == nil {
		cons, err := hub.OrderedConsumer(ctx, OfficeStream, jetstream.OrderedConsumerConfig{})
		if err != nil {
			sleep(ctx, 2*time.Second)
			continue
		}
		it, err := cons.Messages()
		if err != nil {
			sleep(ctx, 2*time.Second)
			continue
		}
		for ctx.Err() == nil {
			msg, err := it.Next(jetstream.NextMaxWait(5 * time.Second))
			if errors.Is(err, nats.ErrTimeout) {
				continue
			}
			if err != nil {
				break // recreate the consumer
			}
			b.applyOffice(ctx, msg.Data())
		}
		it.Stop()
	}
}

// applyOffice applies one of the office's changes, exactly once: the cursor is
// stored with it.
func (b *Box) applyOffice(ctx context.Context, data []byte) {
	var m Message
	if err := json.Unmarshal(data, &m); err != nil {
		b.log.Warn().Err(err).Msg("sync: refused a malformed change from the office")
		return
	}
	kd, ok := kinds[m.Kind]
	if m.Site != store.OfficeSite || !ok || !kd.toBoxes() {
		b.log.Warn().Uint32("site", m.Site).Str("kind", m.Kind).Uint64("seq", m.Seq).Msg("sync: refused a change the office does not send")
		return
	}
	d, derr := kd.decode(&m, store.OfficeSite, b.site.Number)
	for ctx.Err() == nil {
		_, err := b.cfg.Store.ApplyReplica(store.OfficeSite, store.OfficeName, func(w store.ReplicaWriter, cur uint64) (uint64, error) {
			if m.Seq <= cur {
				return cur, nil
			}
			if derr != nil {
				return m.Seq, nil // refused: logged below, and never tried again
			}
			return m.Seq, d.apply(w)
		})
		if err == nil {
			if derr != nil {
				b.log.Warn().Err(derr).Msg("sync: refused a change from the office")
			}
			b.mu.Lock()
			b.officeCursor = max(b.officeCursor, m.Seq)
			if derr != nil {
				b.refusedOffice++
			} else {
				b.appliedOffice++
			}
			b.mu.Unlock()
			return
		}
		if refusable(err) {
			derr = err
			continue // store the cursor past it
		}
		b.log.Warn().Err(err).Msg("sync: apply a change from the office; trying again")
		sleep(ctx, time.Second)
	}
}

// refusable errors are the change's fault: trying again cannot help.
func refusable(err error) bool {
	return errors.Is(err, errRefused) || errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrNotFound) ||
		errors.Is(err, store.ErrConflict)
}

// reportLoop tells the office how the box stands every 5 s, and at once when its
// leaf node connects anew (the office then sets the hub's sourcing up afresh).
func (b *Box) reportLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var connects uint64
	session := nuid.Next()
	connected := false
	var last time.Time
	for {
		now := b.srv.NumLeafNodes() > 0
		if now && !connected {
			connects++
		}
		fresh := now && !connected
		connected = now
		if fresh || time.Since(last) >= 5*time.Second {
			if st, err := b.Status(ctx); err == nil {
				r := reportMessage{BacklogRecords: st.BacklogRecords, BacklogBytes: st.BacklogBytes,
					OldestUnsent: st.OldestUnsent, OverLimit: st.OverLimit, Connects: connects, Session: session}
				if data, err := json.Marshal(r); err == nil {
					_ = b.nc.Publish(StatusSubject(b.site.Number), data) // best effort: the next one follows
					last = time.Now()
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Status is what gardend sync status shows.
type Status struct {
	// Live: a running sync answered; false when no sync runs here (no server, or
	// one without --sync-uplink or --sync-hub) and the figures are the database's.
	Live           bool       `json:"live"`
	Role           string     `json:"role"`
	Site           uint32     `json:"site"`
	Name           string     `json:"name"`
	Connected      bool       `json:"connected"`
	LastContact    *time.Time `json:"last_contact"`
	BacklogRecords int64      `json:"backlog_records"`
	BacklogBytes   int64      `json:"backlog_bytes"`
	OldestUnsent   *time.Time `json:"oldest_unsent"`
	OverLimit      bool       `json:"over_limit"`
	MaxBytes       int64      `json:"max_bytes,omitempty"`
	Sites          []SiteInfo `json:"sites"`
}

// SiteInfo is a site as another sees it: the replicas it holds of it.
type SiteInfo struct {
	Number         uint32     `json:"number"`
	Name           string     `json:"name"`
	Applied        uint64     `json:"applied"`
	LastContact    *time.Time `json:"last_contact"`
	BacklogRecords int64      `json:"backlog_records"`
	BacklogBytes   int64      `json:"backlog_bytes"`
	OldestUnsent   *time.Time `json:"oldest_unsent"`
	Removed        bool       `json:"removed,omitempty"`
}

// Status describes the box's sync now.
func (b *Box) Status(ctx context.Context) (Status, error) {
	fs, err := b.cfg.Store.ChangeStats()
	if err != nil {
		return Status{}, err
	}
	used, err := b.pendingBytes(ctx)
	if err != nil {
		return Status{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st := Status{Live: true, Role: "box", Site: b.site.Number, Name: b.site.Name, Connected: b.srv.NumLeafNodes() > 0,
		BacklogRecords: int64(fs.Records), BacklogBytes: used, OverLimit: b.overLimit, MaxBytes: b.cfg.MaxBytes,
		Sites: []SiteInfo{{Number: store.OfficeSite, Name: store.OfficeName, Applied: b.officeCursor}}}
	if !b.lastContact.IsZero() {
		t := b.lastContact.UTC()
		st.LastContact = &t
		st.Sites[0].LastContact = &t
	}
	if fs.Records > 0 {
		t := fs.Oldest
		st.OldestUnsent = &t
	}
	return st, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Counters are the office's changes applied and refused here since the start.
func (b *Box) Counters() (applied, refused map[uint32]uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return map[uint32]uint64{store.OfficeSite: b.appliedOffice}, map[uint32]uint64{store.OfficeSite: b.refusedOffice}
}

// PublishedSeq is the last change of the feed the box has put into its stream.
func (b *Box) PublishedSeq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.publishedSeq
}

// Published is how many messages this process put into the box's stream (a
// message may send several changes of one record).
func (b *Box) Published() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.published
}

// isStorageFull reports JetStream refusing a message for want of room.
func isStorageFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, jetstream.ErrMaxBytesExceeded) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "maximum bytes") || strings.Contains(msg, "insufficient resources") ||
		strings.Contains(msg, "insufficient storage")
}
