package sitesync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/gardend/gardend/store"
)

// OfficeBackend is what an office node runs on: PostgreSQL, shared by every node.
type OfficeBackend interface {
	store.Backend
	store.Shared
	store.SharedPhotos
	store.SiteStore
}

// OfficeConfig configures an office node's sync.
type OfficeConfig struct {
	Store OfficeBackend
	// HubURL is the hub's client address, nats://HOST:4222.
	HubURL string
	// Node names this node in leases (stable across restarts).
	Node   string
	Logger zerolog.Logger
	Now    func() time.Time
	// Lease is how long a node applies a site's changes without renewing (0: 15s):
	// after a node dies, another takes over within it. Poll is how often sites and
	// leases are looked at (0: 2s). Batch is the most changes per transaction (0: 256).
	Lease time.Duration
	Poll  time.Duration
	Batch int
	// WaitWarn is how long a change may wait for its picture before the office
	// warns, the site's later changes waiting behind it (0: a minute).
	WaitWarn time.Duration
	// SiteMaxBytes bounds what the hub holds of each site, its stream of changes and
	// its picture bucket each (0: DefaultSiteMaxBytes): a site past it stalls only
	// itself, whatever it sends.
	SiteMaxBytes int64
}

// DefaultSiteMaxBytes is --sync-site-max-bytes: twice a box's default backlog.
const DefaultSiteMaxBytes = 2 * DefaultMaxBytes

// Office is an office node's sync.
type Office struct {
	cfg  OfficeConfig
	log  zerolog.Logger
	keys *Keys
	nc   *nats.Conn
	js   jetstream.JetStream

	mu          sync.Mutex
	lastContact time.Time
	running     map[uint32]context.CancelFunc
	names       map[uint32]string
	removed     map[uint32]bool
	// dropped: removed sites whose copies at the hub are deleted.
	dropped map[uint32]bool
	watches map[uint32]*siteWatch
	revoked string
	// Counters, for metrics.
	applied, refused map[uint32]uint64
}

// StartOffice loads the keys from the database, turns the change feed on and
// connects to the hub (retrying in the background while it is down).
func StartOffice(cfg OfficeConfig) (*Office, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 15 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 256
	}
	if cfg.WaitWarn <= 0 {
		cfg.WaitWarn = time.Minute
	}
	if cfg.SiteMaxBytes <= 0 {
		cfg.SiteMaxBytes = DefaultSiteMaxBytes
	}
	keys, err := LoadKeys(cfg.Store.Secret)
	if err != nil {
		return nil, err
	}
	o := &Office{cfg: cfg, log: cfg.Logger.With().Str("component", "sync").Logger(), keys: keys,
		running: map[uint32]context.CancelFunc{}, names: map[uint32]string{}, removed: map[uint32]bool{},
		watches: map[uint32]*siteWatch{}, dropped: map[uint32]bool{},
		applied: map[uint32]uint64{}, refused: map[uint32]uint64{}}
	if _, err := cfg.Store.StartChangeFeed(); err != nil {
		return nil, fmt.Errorf("start the change feed: %w", err)
	}
	userJWT, seed, err := keys.OfficeCreds()
	if err != nil {
		return nil, err
	}
	o.nc, err = nats.Connect(cfg.HubURL, nats.UserJWTAndSeed(userJWT, string(seed)), nats.Name("gardend-office "+cfg.Node),
		nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true), nats.ReconnectWait(time.Second))
	if err != nil {
		return nil, fmt.Errorf("--sync-hub %s: %w", cfg.HubURL, err)
	}
	o.js, err = jetstream.New(o.nc)
	if err != nil {
		o.nc.Close()
		return nil, err
	}
	if err := o.loadNames(); err != nil {
		o.nc.Close()
		return nil, err
	}
	return o, nil
}

// Close disconnects; call it after Run returned.
func (o *Office) Close() { o.nc.Close() }

func (o *Office) loadNames() error {
	sites, err := o.cfg.Store.Sites()
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range sites {
		o.names[s.Number] = s.Name
		o.removed[s.Number] = s.Removed != nil
	}
	return nil
}

// SiteName names a registered site, or the office.
func (o *Office) SiteName(n uint32) (string, bool) {
	if n == store.OfficeSite {
		return store.OfficeName, true
	}
	o.mu.Lock()
	name, ok := o.names[n]
	o.mu.Unlock()
	if !ok {
		// Registered since the last look (site add on another host).
		if err := o.loadNames(); err == nil {
			o.mu.Lock()
			name, ok = o.names[n]
			o.mu.Unlock()
		}
	}
	return name, ok
}

// Run syncs until ctx ends.
func (o *Office) Run(ctx context.Context) error {
	sub, err := o.nc.Subscribe("gardend.*.status", o.onReport)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	var wg sync.WaitGroup
	wg.Go(func() { o.publishLoop(ctx) })
	wg.Go(func() { o.sitesLoop(ctx) })
	wg.Wait()
	o.mu.Lock()
	for _, cancel := range o.running {
		cancel()
	}
	o.mu.Unlock()
	return nil
}

func (o *Office) contact() {
	o.mu.Lock()
	o.lastContact = o.cfg.Now()
	o.mu.Unlock()
}

// onReport records what a box said of itself; its time is the office's.
func (o *Office) onReport(m *nats.Msg) {
	parts := strings.Split(m.Subject, ".")
	if len(parts) != 3 || !strings.HasPrefix(parts[1], "site") {
		return
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(parts[1], "site"), 10, 32)
	if err != nil || n < 2 || n > store.MaxSite {
		return
	}
	var r reportMessage
	if controlMessage(m, &r) != nil || r.Session == "" {
		return
	}
	// A box whose leaf node connected anew (or that restarted): while its link was
	// down the hub's sourcing from it may have begun a back-off of up to two
	// minutes, or be waiting for an answer lost in the cut. Set the sources up
	// afresh, from where they were, so that its backlog comes at once. The same when
	// its backlog has not moved for a while although it is connected: whatever
	// stalled the sourcing, that restarts it.
	if reason := o.watch(uint32(n), r); reason != "" {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := o.resetSources(ctx, uint32(n)); err != nil {
				o.log.Debug().Err(err).Uint64("site", n).Msg("sync: set the hub's sourcing up afresh")
			} else {
				o.log.Debug().Uint64("site", n).Str("because", reason).Msg("sync: set the hub's sourcing up afresh")
			}
		}()
	}
	if err := o.cfg.Store.ReportSite(uint32(n), store.SiteReport{At: o.cfg.Now(), BacklogRecords: r.BacklogRecords,
		BacklogBytes: r.BacklogBytes, OldestUnsent: r.OldestUnsent}); err != nil {
		o.log.Warn().Err(err).Uint64("site", n).Msg("sync: record a site's report")
	}
}

// publishLoop sends the office's users to the hub's stream (one node at a time: the
// lease of site 1) and trims the feed as the hub acknowledges them.
func (o *Office) publishLoop(ctx context.Context) {
	var streamReady bool
	t := time.NewTicker(o.cfg.Poll / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		held, err := o.cfg.Store.LeaseSite(store.OfficeSite, o.cfg.Node, o.cfg.Lease)
		if err != nil || !held {
			continue
		}
		if !streamReady {
			if err := o.ensureOfficeStream(ctx); err != nil {
				o.log.Debug().Err(err).Msg("sync: the office's stream at the hub")
				continue
			}
			if err := o.pushAccount(ctx); err != nil {
				o.log.Warn().Err(err).Msg("sync: update the account at the hub")
			}
			streamReady = true
		}
		for ctx.Err() == nil {
			n, err := o.publishBatch(ctx)
			if err != nil {
				o.log.Debug().Err(err).Msg("sync: send the office's users")
				break
			}
			if n < o.cfg.Batch {
				break
			}
		}
	}
}

func (o *Office) ensureOfficeStream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := o.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: OfficeStream, Subjects: []string{officeSubject + ".>"},
		Storage: jetstream.FileStorage, MaxMsgsPerSubject: 1, MaxMsgSize: DefaultMaxPayload})
	if err == nil {
		o.contact()
	}
	return err
}

func (o *Office) publishBatch(ctx context.Context) (int, error) {
	cs, err := o.cfg.Store.ChangesAfter(0, o.cfg.Batch)
	if err != nil || len(cs) == 0 {
		return 0, err
	}
	seen := map[string]bool{}
	for _, c := range cs {
		kd, ok := kinds[c.Kind]
		if !ok || !kd.toBoxes() {
			continue // the office's other records stay at the office
		}
		key := fmt.Sprintf("%s.%d.%d", c.Kind, c.ID, c.Ref)
		if seen[key] {
			continue
		}
		seen[key] = true
		rec, err := kd.encode(ctx, o.cfg.Store, store.OfficeSite, c, nil)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", c, err)
		}
		m := Message{Site: store.OfficeSite, Seq: c.Seq, Kind: c.Kind, ID: globalID(store.OfficeSite, c.ID),
			Ref: globalID(store.OfficeSite, c.Ref), Deleted: rec == nil, At: c.At, Rec: rec}
		data, err := json.Marshal(m)
		if err != nil {
			return 0, err
		}
		msg := nats.NewMsg(fmt.Sprintf("%s.%s.%d", officeSubject, c.Kind, m.ID))
		msg.Data = data
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = o.js.PublishMsg(pctx, msg, jetstream.WithMsgID(m.MsgID()))
		cancel()
		if err != nil {
			return 0, err
		}
	}
	o.contact()
	if _, err := o.cfg.Store.TrimChanges(cs[len(cs)-1].Seq); err != nil {
		return 0, err
	}
	return len(cs), nil
}

// pushAccount sends the account's JWT, with the revocations of removed sites, to the
// hub's resolver through the system account.
func (o *Office) pushAccount(ctx context.Context) error {
	revoked, err := o.revocations()
	if err != nil {
		return err
	}
	acc, err := o.keys.AccountJWT(revoked)
	if err != nil {
		return err
	}
	userJWT, seed, err := o.keys.SystemCreds()
	if err != nil {
		return err
	}
	sys, err := nats.Connect(o.cfg.HubURL, nats.UserJWTAndSeed(userJWT, string(seed)), nats.Name("gardend-office-system"))
	if err != nil {
		return err
	}
	defer sys.Close()
	resp, err := sys.RequestWithContext(ctx, "$SYS.REQ.CLAIMS.UPDATE", []byte(acc))
	if err != nil {
		return err
	}
	var answer struct {
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &answer); err != nil {
		return err
	}
	if answer.Error != nil {
		return errors.New(answer.Error.Description)
	}
	return nil
}

// revocations are the user keys of removed sites.
func (o *Office) revocations() (Revoked, error) {
	sites, err := o.cfg.Store.Sites()
	if err != nil {
		return nil, err
	}
	return RevocationsOf(sites), nil
}

// RevocationsOf are the user keys of removed sites, revoked as of their removal.
func RevocationsOf(sites []store.Site) Revoked {
	out := Revoked{}
	for _, s := range sites {
		if s.Removed != nil && s.UserKey != "" {
			out[s.UserKey] = s.Removed.Add(time.Second)
		}
	}
	return out
}

// sitesLoop follows the register: a new site gets its streams at the hub, a removed
// one its credentials revoked, and this node applies the changes of every site whose
// lease it holds.
func (o *Office) sitesLoop(ctx context.Context) {
	t := time.NewTicker(o.cfg.Poll)
	defer t.Stop()
	for {
		o.syncSites(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (o *Office) syncSites(ctx context.Context) {
	sites, err := o.cfg.Store.Sites()
	if err != nil {
		o.log.Warn().Err(err).Msg("sync: read the sites")
		return
	}
	revoked := RevocationsOf(sites)
	key := fmt.Sprint(len(revoked), revoked)
	o.mu.Lock()
	for _, s := range sites {
		o.names[s.Number] = s.Name
		o.removed[s.Number] = s.Removed != nil
	}
	changed := key != o.revoked
	o.mu.Unlock()
	if changed && o.nc.IsConnected() {
		if err := o.pushAccount(ctx); err != nil {
			o.log.Warn().Err(err).Msg("sync: revoke the credentials of removed sites at the hub")
		} else {
			o.mu.Lock()
			o.revoked = key
			o.mu.Unlock()
		}
	}
	o.mu.Lock()
	revokedAtHub := o.revoked == key
	o.mu.Unlock()
	for _, s := range sites {
		o.mu.Lock()
		_, running := o.running[s.Number]
		o.mu.Unlock()
		if s.Removed != nil && !running && revokedAtHub {
			o.dropSiteStreams(ctx, s)
		}
		if running || s.Removed != nil {
			continue
		}
		held, err := o.cfg.Store.LeaseSite(s.Number, o.cfg.Node, o.cfg.Lease)
		if err != nil || !held {
			continue
		}
		sctx, cancel := context.WithCancel(ctx)
		o.mu.Lock()
		o.running[s.Number] = cancel
		o.mu.Unlock()
		go func(s store.Site) {
			defer func() {
				o.mu.Lock()
				delete(o.running, s.Number)
				o.mu.Unlock()
				cancel()
			}()
			o.runSite(sctx, s)
		}(s)
	}
}

// dropSiteStreams deletes the hub's copies of a removed site's stream and picture
// bucket, once its credentials are revoked: what it sent and was not applied goes
// with them (its replicas here stay), and nothing it sent stays at the hub.
func (o *Office) dropSiteStreams(ctx context.Context, s store.Site) {
	o.mu.Lock()
	done := o.dropped[s.Number]
	o.mu.Unlock()
	if done || !o.nc.IsConnected() {
		return
	}
	err := o.js.DeleteStream(ctx, SiteStream(s.Number))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		err = nil
	}
	if err == nil {
		if err = o.js.DeleteObjectStore(ctx, PictureBucket(s.Number)); errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			err = nil
		}
	}
	if err != nil {
		o.log.Warn().Err(err).Uint32("site", s.Number).Str("site_name", s.Name).Msg("sync: delete a removed site's copies at the hub")
		return
	}
	o.mu.Lock()
	o.dropped[s.Number] = true
	o.mu.Unlock()
}

// ensureSiteStreams makes the hub's copies of a site's stream and picture bucket,
// sourced from the box's domain across its leaf node.
func (o *Office) ensureSiteStreams(ctx context.Context, n uint32) (jetstream.ObjectStore, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ext := func(deliver string) *jetstream.ExternalStream {
		return &jetstream.ExternalStream{APIPrefix: "$JS." + SiteDomain(n) + ".API", DeliverPrefix: deliver}
	}
	if _, err := o.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: SiteStream(n), Storage: jetstream.FileStorage,
		Duplicates: 10 * time.Minute, MaxMsgSize: DefaultMaxPayload, MaxBytes: o.cfg.SiteMaxBytes, Discard: jetstream.DiscardNew,
		Sources: []*jetstream.StreamSource{{Name: OutStream, External: ext(DeliverPrefix(n))}}}); err != nil {
		return nil, err
	}
	obs, err := o.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: PictureBucket(n), Storage: jetstream.FileStorage,
		MaxBytes: o.cfg.SiteMaxBytes})
	if err != nil {
		return nil, err
	}
	s, err := o.js.Stream(ctx, "OBJ_"+PictureBucket(n))
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	cfg := info.Config
	if len(cfg.Sources) == 0 {
		cfg.Sources = []*jetstream.StreamSource{{Name: "OBJ_" + PictureBucket(n), External: ext(DeliverPrefix(n) + ".pictures")}}
		if _, err := o.js.UpdateStream(ctx, cfg); err != nil {
			return nil, err
		}
	}
	o.contact()
	return obs, nil
}

// runSite applies site s's changes while this node holds its lease.
func (o *Office) runSite(ctx context.Context, s store.Site) {
	log := o.log.With().Uint32("site", s.Number).Str("site_name", s.Name).Logger()
	lease := time.NewTicker(o.cfg.Lease / 3)
	defer lease.Stop()
	renew := func() bool {
		select {
		case <-lease.C:
			held, err := o.cfg.Store.LeaseSite(s.Number, o.cfg.Node, o.cfg.Lease)
			return err == nil && held
		default:
			return true
		}
	}
	var obs jetstream.ObjectStore
	for obs == nil {
		var err error
		if obs, err = o.ensureSiteStreams(ctx, s.Number); err != nil {
			log.Debug().Err(err).Msg("sync: the site's streams at the hub")
			sleep(ctx, o.cfg.Poll)
			if ctx.Err() != nil || !renew() {
				return
			}
		}
	}
	a := &siteApplier{o: o, site: s, log: log, obs: obs}
	lastAck := time.Time{}
	for ctx.Err() == nil {
		cons, err := o.js.OrderedConsumer(ctx, SiteStream(s.Number), jetstream.OrderedConsumerConfig{})
		if err != nil {
			sleep(ctx, o.cfg.Poll)
			if !renew() {
				return
			}
			continue
		}
		it, err := cons.Messages(jetstream.PullMaxMessages(o.cfg.Batch))
		if err != nil {
			sleep(ctx, o.cfg.Poll)
			continue
		}
		var pending []jetstream.Msg
		for ctx.Err() == nil {
			if !renew() {
				it.Stop()
				log.Info().Msg("sync: another office node applies this site's changes now")
				return
			}
			if time.Since(lastAck) > o.cfg.Poll {
				a.ack(ctx)
				lastAck = time.Now()
			}
			if len(pending) < o.cfg.Batch {
				// A moment for the first, then what is there now.
				var err error
				if pending, err = gather(it, pending, o.cfg.Batch); err != nil {
					pending = nil // the consumer starts again from what is not applied
					break
				}
			}
			if len(pending) == 0 {
				a.sweepPictures(ctx) // markers arrive after what they let go was applied
				continue
			}
			done, err := a.apply(ctx, pending)
			if err != nil {
				log.Warn().Err(err).Msg("sync: apply the site's changes; trying again")
			}
			pending = pending[done:]
			if done > 0 {
				a.ack(ctx)
				lastAck = time.Now()
			} else {
				sleep(ctx, 500*time.Millisecond)
			}
		}
		it.Stop()
	}
}

// siteApplier applies one site's messages.
type siteApplier struct {
	o    *Office
	site store.Site
	log  zerolog.Logger
	obs  jetstream.ObjectStore
	// lastSweep and swept: sweepPictures' last run and the chunks it purged.
	lastSweep time.Time
	swept     map[string]bool
	// waitSeq has waited for its picture since waitSince (waiting).
	waitSeq    uint64
	waitSince  time.Time
	waitWarned bool
}

// item is one message on its way in.
type item struct {
	msg       jetstream.Msg
	m         Message
	d         decoded
	refused   error
	streamSeq uint64
	// dup: applied before (a redelivery); skipped.
	dup bool
}

// apply applies a prefix of msgs in one transaction and returns how many it used up:
// all of them, unless a picture has not arrived yet.
func (a *siteApplier) apply(ctx context.Context, msgs []jetstream.Msg) (int, error) {
	n := a.site.Number
	cur, err := a.o.cfg.Store.ReplicaCursor(n)
	if err != nil {
		return 0, err
	}
	f := &officeFetcher{images: a.o.cfg.Store, photos: a.o.cfg.Store, obs: a.obs}
	var items []item
	for _, msg := range msgs {
		it := item{msg: msg}
		if md, err := msg.Metadata(); err == nil {
			it.streamSeq = md.Sequence.Stream
		}
		if err := json.Unmarshal(msg.Data(), &it.m); err != nil {
			it.refused = fmt.Errorf("%w: malformed: %v", errRefused, err)
		} else if it.m.Seq <= cur {
			it.dup = true
			items = append(items, it) // applied before: used up
			continue
		} else if it.m.Site != n {
			it.refused = fmt.Errorf("%w: the message says it is from site %d", errRefused, it.m.Site)
		} else if kd, ok := kinds[it.m.Kind]; !ok {
			it.refused = fmt.Errorf("%w: unknown kind %q", errRefused, it.m.Kind)
		} else if it.d, err = kd.decode(&it.m, n, store.OfficeSite); err != nil {
			it.refused = err
		}
		if it.refused == nil {
			if err := it.d.fetch(ctx, f); errors.Is(err, ErrNotYet) {
				a.waiting(it)
				break
			} else if errors.Is(err, store.ErrNotFound) && applies(items) {
				// The content's record (a photo's garden) comes with the changes before
				// it: they are applied first, and it is fetched again at the head of
				// the next batch (refused there if still missing).
				break
			} else if err != nil {
				if !refusable(err) {
					return 0, err
				}
				it.refused = err
			}
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return 0, nil
	}
	removed, err := a.applyItems(items, cur)
	if err != nil && refusable(err) {
		// One of them breaks a rule: apply them one by one, refusing that one.
		removed = store.Removed{}
		for i := range items {
			r, err := a.applyItems(items[i:i+1], 0)
			if err != nil && refusable(err) {
				items[i].refused = err
				r, err = a.applyItems(items[i:i+1], 0)
			}
			if err != nil {
				return i, err
			}
			removed.ImagePaths = append(removed.ImagePaths, r.ImagePaths...)
			removed.PhotoPaths = append(removed.PhotoPaths, r.PhotoPaths...)
		}
	} else if err != nil {
		return 0, err
	}
	a.after(ctx, items, removed)
	return len(items), nil
}

// waiting notes that the change of it waits for its picture, and warns once when it
// has waited WaitWarn.
func (a *siteApplier) waiting(it item) {
	now := time.Now()
	if a.waitSeq != it.m.Seq {
		a.waitSeq, a.waitSince, a.waitWarned = it.m.Seq, now, false
	}
	ev := a.log.Debug()
	if !a.waitWarned && now.Sub(a.waitSince) >= a.o.cfg.WaitWarn {
		a.waitWarned = true
		ev = a.log.Warn().Dur("waited", now.Sub(a.waitSince).Round(time.Second))
	}
	ev.Uint64("seq", it.m.Seq).Str("kind", it.m.Kind).Uint64("id", it.m.ID).
		Msg("sync: waiting for the change's picture; the site's later changes wait behind it")
}

// applies reports whether any of items is a change to apply (not one applied
// before, not refused).
func applies(items []item) bool {
	for _, it := range items {
		if !it.dup && it.refused == nil {
			return true
		}
	}
	return false
}

// applyItems applies items in one transaction (those above the cursor and not
// refused) and moves the cursor past them all.
func (a *siteApplier) applyItems(items []item, _ uint64) (store.Removed, error) {
	return a.o.cfg.Store.ApplyReplica(a.site.Number, a.site.Name, func(w store.ReplicaWriter, cur uint64) (uint64, error) {
		next := cur
		for _, it := range items {
			if it.m.Seq <= cur {
				continue
			}
			next = max(next, it.m.Seq)
			if it.refused != nil {
				continue
			}
			if err := it.d.apply(w); err != nil {
				return 0, fmt.Errorf("change %d (%s %d): %w", it.m.Seq, it.m.Kind, it.m.ID, err)
			}
		}
		return next, nil
	})
}

// after settles a committed batch: refusals logged, replaced pictures removed, the
// hub's copies of what was applied and let go purged.
func (a *siteApplier) after(ctx context.Context, items []item, removed store.Removed) {
	var applied, refused uint64
	var purgeBelow uint64
	for _, it := range items {
		purgeBelow = max(purgeBelow, it.streamSeq+1)
		if it.dup {
			continue
		}
		if it.refused != nil {
			refused++
			a.log.Warn().Err(it.refused).Uint64("seq", it.m.Seq).Str("kind", it.m.Kind).Uint64("id", it.m.ID).
				Msg("sync: refused a change from a site")
			continue
		}
		applied++
	}
	a.o.mu.Lock()
	a.o.applied[a.site.Number] += applied
	a.o.refused[a.site.Number] += refused
	a.o.mu.Unlock()
	for _, p := range removed.ImagePaths {
		if err := a.o.cfg.Store.RemoveImage(ctx, p); err != nil {
			a.log.Warn().Err(err).Str("path", p).Msg("sync: remove a replaced picture")
		}
	}
	for _, p := range removed.PhotoPaths {
		if err := a.o.cfg.Store.RemovePhoto(ctx, p); err != nil {
			a.log.Warn().Err(err).Str("path", p).Msg("sync: remove a replaced photo")
		}
	}
	a.sweepPictures(ctx)
	// The last applied message stays: the hub resumes sourcing after the message
	// it holds (by sequence); with none it would resume by time, where clocks
	// matter.
	if s, err := a.o.js.Stream(ctx, SiteStream(a.site.Number)); err == nil && purgeBelow > 2 {
		if err := s.Purge(ctx, jetstream.WithPurgeSequence(purgeBelow-1)); err != nil {
			a.log.Debug().Err(err).Msg("sync: purge applied changes at the hub")
		}
	}
	a.o.contact()
}

// sweepEvery is how many Polls apart sweepPictures runs: it reads the description
// of every picture the hub holds of the site, so not every Poll.
const sweepEvery = 30

// sweepPictures purges at the hub the chunks of the pictures the box has let go, at
// most once per sweepEvery Polls (a minute by default). The box deletes a picture
// once every change naming it is applied here, and its deletion marker comes through
// the bucket's sourcing: no change still to apply needs those chunks. Nothing else is deleted at the hub: a
// picture applied here may be named again by a later change while the box still
// holds it, and the newest messages sourced from the box (the markers among them)
// must stay, since the hub resumes sourcing after them when it is set up afresh;
// without them it would start over and store chunks twice (a corrupt picture).
func (a *siteApplier) sweepPictures(ctx context.Context) {
	if time.Since(a.lastSweep) < sweepEvery*a.o.cfg.Poll {
		return
	}
	a.lastSweep = time.Now()
	infos, err := a.obs.List(ctx, jetstream.ListObjectsShowDeleted())
	if err != nil {
		if !errors.Is(err, jetstream.ErrNoObjectsFound) {
			a.log.Debug().Err(err).Msg("sync: list the pictures at the hub")
		}
		return
	}
	var s jetstream.Stream
	for _, info := range infos {
		if !info.Deleted || info.NUID == "" || a.swept[info.NUID] {
			continue
		}
		if s == nil {
			if s, err = a.o.js.Stream(ctx, "OBJ_"+PictureBucket(a.site.Number)); err != nil {
				a.log.Debug().Err(err).Msg("sync: the pictures' stream at the hub")
				return
			}
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(chunkSubject(info.Bucket, info.NUID))); err != nil {
			a.log.Debug().Err(err).Str("object", info.Name).Msg("sync: purge a picture the box let go at the hub")
			return
		}
		if a.swept == nil {
			a.swept = map[string]bool{}
		}
		a.swept[info.NUID] = true
	}
}

// ack tells the box what is applied.
func (a *siteApplier) ack(ctx context.Context) {
	cur, err := a.o.cfg.Store.ReplicaCursor(a.site.Number)
	if err != nil || cur == 0 {
		return
	}
	data, _ := json.Marshal(ackMessage{Seq: cur, At: a.o.cfg.Now()}) // cannot fail
	_ = a.o.nc.Publish(AckSubject(a.site.Number), data)              // best effort: repeated every Poll
	_ = ctx
}

// officeFetcher copies pictures and photos from the hub's bucket into the database.
type officeFetcher struct {
	images store.ImageContent
	photos store.PhotoContent
	obs    jetstream.ObjectStore
}

func (f *officeFetcher) FetchObject(ctx context.Context, name string, size int64, digest string) (string, error) {
	return f.fetch(ctx, name, size, digest, func(r io.Reader) (string, error) {
		path, _, err := f.images.PutImage(ctx, 0, r)
		return path, err
	})
}

func (f *officeFetcher) FetchPhotoObject(ctx context.Context, name string, size int64, digest string, gardenID uint64, ext string) (string, error) {
	return f.fetch(ctx, name, size, digest, func(r io.Reader) (string, error) {
		path, _, err := f.photos.PutPhoto(ctx, gardenID, ext, r)
		return path, err
	})
}

// fetch copies the object name, once it is whole and what the change says, into
// the content through put.
func (f *officeFetcher) fetch(ctx context.Context, name string, size int64, digest string, put func(io.Reader) (string, error)) (string, error) {
	info, err := f.obs.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return "", ErrNotYet
	}
	if err != nil {
		return "", err
	}
	if int64(info.Size) != size || info.Digest != digest {
		// Its name is a content path, which never changes: every copy is the same.
		return "", fmt.Errorf("%w: object %q holds %d bytes of digest %s; the change says %d bytes of %s",
			errRefused, name, info.Size, info.Digest, size, digest)
	}
	r, err := f.obs.Get(ctx, name)
	if err != nil {
		return "", err
	}
	defer func() { _ = r.Close() }()
	path, err := put(r)
	if errors.Is(err, jetstream.ErrDigestMismatch) {
		return "", fmt.Errorf("%w: object %q: %v", errRefused, name, err)
	}
	if err != nil {
		return "", err
	}
	return path, nil
}

// Status describes the office's sync now.
func (o *Office) Status(ctx context.Context) (Status, error) {
	fs, err := o.cfg.Store.ChangeStats()
	if err != nil {
		return Status{}, err
	}
	sites, err := o.cfg.Store.Sites()
	if err != nil {
		return Status{}, err
	}
	st := Status{Live: true, Role: "office", Site: store.OfficeSite, Name: store.OfficeName, Connected: o.nc.IsConnected(),
		BacklogRecords: int64(fs.Records), Sites: []SiteInfo{}}
	if fs.Records > 0 {
		t := fs.Oldest
		st.OldestUnsent = &t
	}
	o.mu.Lock()
	if !o.lastContact.IsZero() {
		t := o.lastContact.UTC()
		st.LastContact = &t
	}
	o.mu.Unlock()
	for _, s := range sites {
		cur, err := o.cfg.Store.ReplicaCursor(s.Number)
		if err != nil {
			return Status{}, err
		}
		st.Sites = append(st.Sites, SiteInfo{Number: s.Number, Name: s.Name, Applied: cur, LastContact: s.LastContact,
			BacklogRecords: s.BacklogRecords, BacklogBytes: s.BacklogBytes, OldestUnsent: s.OldestUnsent, Removed: s.Removed != nil})
	}
	_ = ctx
	return st, nil
}

// Counters are the changes applied and refused per site since the start.
func (o *Office) Counters() (applied, refused map[uint32]uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	applied, refused = map[uint32]uint64{}, map[uint32]uint64{}
	for k, v := range o.applied {
		applied[k] = v
	}
	for k, v := range o.refused {
		refused[k] = v
	}
	return applied, refused
}

// SiteRemoved reports whether the office removed site n (gardend site remove).
func (o *Office) SiteRemoved(n uint32) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.removed[n]
}

// gather appends to msgs, up to n in all, what the iterator has: the first waited
// for a second at most, the rest as long as they come at once.
func gather(it jetstream.MessagesContext, msgs []jetstream.Msg, n int) ([]jetstream.Msg, error) {
	wait := time.Second
	if len(msgs) > 0 {
		wait = 5 * time.Millisecond
	}
	for len(msgs) < n {
		m, err := it.Next(jetstream.NextMaxWait(wait))
		if errors.Is(err, nats.ErrTimeout) {
			return msgs, nil
		}
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, m)
		wait = 5 * time.Millisecond
	}
	return msgs, nil
}

// resetSources sets the sourcing of site n's streams at the hub up afresh: the source
// removed and added again, which resumes it from the last message the stream holds
// of it (the office keeps that one) without the back-off of a long outage.
func (o *Office) resetSources(ctx context.Context, n uint32) error {
	for _, name := range []string{SiteStream(n), "OBJ_" + PictureBucket(n)} {
		s, err := o.js.Stream(ctx, name)
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		cfg := info.Config
		sources := cfg.Sources
		if len(sources) == 0 {
			continue
		}
		cfg.Sources = nil
		if _, err := o.js.UpdateStream(ctx, cfg); err != nil {
			return err
		}
		cfg.Sources = sources
		if _, err := o.js.UpdateStream(ctx, cfg); err != nil {
			return err
		}
	}
	return nil
}

// siteWatch is what the node applying a site last heard of it.
type siteWatch struct {
	session   string
	connects  uint64
	applied   uint64
	since     time.Time
	lastReset time.Time
}

// stalled is how long a connected box's backlog may stay where it is before the
// sourcing from it is set up afresh; at most once per stalled.
const stalled = 20 * time.Second

// watch reports why the hub's sourcing from site n should be set up afresh, or "".
func (o *Office) watch(n uint32, r reportMessage) string {
	now := time.Now()
	cur, err := o.cfg.Store.ReplicaCursor(n)
	if err != nil {
		return ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, applying := o.running[n]; !applying {
		delete(o.watches, n)
		return ""
	}
	w, seen := o.watches[n]
	if !seen {
		w = &siteWatch{}
		o.watches[n] = w
	}
	reason := ""
	switch {
	case !seen || w.session != r.Session || w.connects != r.Connects:
		reason = "its leaf node connected"
	case cur != w.applied || r.BacklogRecords == 0:
		w.since = now
	case now.Sub(w.since) > stalled && now.Sub(w.lastReset) > stalled:
		reason = "its backlog has not moved"
	}
	if reason != "" {
		w.lastReset, w.since = now, now
	}
	w.session, w.connects, w.applied = r.Session, r.Connects, cur
	return reason
}
