package sitesync

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/gardend/gardend/store"
)

// Keys are the office's NATS identities: the operator that signs the accounts, the
// system account (the hub's resolver is updated through it) and the account every
// site and the office use. Each is made from a 32-byte secret kept in the office's
// database, so every office node, and every run of sync hub-config, has the same.
type Keys struct {
	Operator nkeys.KeyPair
	System   nkeys.KeyPair
	Account  nkeys.KeyPair
	// Office and SystemUser are the identities office nodes connect with.
	Office     nkeys.KeyPair
	SystemUser nkeys.KeyPair
}

// Secret names in the office's database (store.Shared.Secret).
var keySecrets = []struct {
	name   string
	prefix nkeys.PrefixByte
}{
	{"sync-operator", nkeys.PrefixByteOperator},
	{"sync-system-account", nkeys.PrefixByteAccount},
	{"sync-account", nkeys.PrefixByteAccount},
	{"sync-office-user", nkeys.PrefixByteUser},
	{"sync-system-user", nkeys.PrefixByteUser},
}

// LoadKeys makes the keys from the secrets secret returns (32 random bytes each,
// the same every time for a name).
func LoadKeys(secret func(name string, size int) ([]byte, error)) (*Keys, error) {
	var kps []nkeys.KeyPair
	for _, s := range keySecrets {
		raw, err := secret(s.name, 32)
		if err != nil {
			return nil, fmt.Errorf("sync key %s: %w", s.name, err)
		}
		kp, err := nkeys.FromRawSeed(s.prefix, raw)
		if err != nil {
			return nil, fmt.Errorf("sync key %s: %w", s.name, err)
		}
		kps = append(kps, kp)
	}
	return &Keys{Operator: kps[0], System: kps[1], Account: kps[2], Office: kps[3], SystemUser: kps[4]}, nil
}

func publicKey(kp nkeys.KeyPair) string {
	pub, err := kp.PublicKey()
	if err != nil {
		panic(err) // a key pair made from a seed always has a public key
	}
	return pub
}

// AccountName is the NATS account of gardend's traffic.
const AccountName = "GARDEND"

// HubDomain is the hub's JetStream domain; a box's is SiteDomain.
const HubDomain = "hub"

// SiteDomain is the JetStream domain of site n's box.
func SiteDomain(n uint32) string { return "site" + strconv.FormatUint(uint64(n), 10) }

// OperatorJWT is the operator's self-signed JWT.
func (k *Keys) OperatorJWT() (string, error) {
	oc := jwt.NewOperatorClaims(publicKey(k.Operator))
	oc.Name = "gardend"
	oc.SystemAccount = publicKey(k.System)
	return oc.Encode(k.Operator)
}

// SystemAccountJWT is the system account's JWT.
func (k *Keys) SystemAccountJWT() (string, error) {
	ac := jwt.NewAccountClaims(publicKey(k.System))
	ac.Name = "SYS"
	return ac.Encode(k.Operator)
}

// AccountJWT is the JWT of gardend's account, with JetStream and the users of
// removed sites revoked: every JWT of the user key issued before the time given.
func (k *Keys) AccountJWT(revoked map[string]time.Time) (string, error) {
	ac := jwt.NewAccountClaims(publicKey(k.Account))
	ac.Name = AccountName
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	for pub, at := range revoked {
		ac.RevokeAt(pub, at)
	}
	return ac.Encode(k.Operator)
}

// OfficeCreds are the JWT and seed an office node connects to the hub with: all of
// gardend's account.
func (k *Keys) OfficeCreds() (userJWT string, seed []byte, err error) {
	uc := jwt.NewUserClaims(publicKey(k.Office))
	uc.Name = "office"
	uc.IssuerAccount = ""
	userJWT, err = uc.Encode(k.Account)
	if err != nil {
		return "", nil, err
	}
	seed, err = k.Office.Seed()
	return userJWT, seed, err
}

// SystemCreds are the JWT and seed of the system account's user, which pushes
// account updates (revocations) to the hub's resolver.
func (k *Keys) SystemCreds() (userJWT string, seed []byte, err error) {
	uc := jwt.NewUserClaims(publicKey(k.SystemUser))
	uc.Name = "office-system"
	userJWT, err = uc.Encode(k.System)
	if err != nil {
		return "", nil, err
	}
	seed, err = k.SystemUser.Seed()
	return userJWT, seed, err
}

// Subjects of site n. The box publishes its changes into its own stream on
// OutSubject; the hub sources them with deliveries on DeliverPrefix; the office
// acknowledges on AckSubject and the box reports on StatusSubject.
func OutSubject(n uint32) string    { return "gardend." + SiteDomain(n) + ".out" }
func DeliverPrefix(n uint32) string { return "gardend." + SiteDomain(n) + ".deliver" }
func AckSubject(n uint32) string    { return "gardend." + SiteDomain(n) + ".ack" }
func StatusSubject(n uint32) string { return "gardend." + SiteDomain(n) + ".status" }
func InboxPrefix(n uint32) string   { return "_INBOX_" + SiteDomain(n) }

// PictureBucket is the object store bucket of site n's pictures, alike in the
// box's domain and the hub's.
func PictureBucket(n uint32) string { return SiteDomain(n) + "-pictures" }

// Streams.
const (
	// OutStream is a box's stream of changes; SiteStream(n) is its copy at the hub.
	OutStream = "GARDEND_OUT"
	// OfficeStream is the hub's stream of the office's users, one message (the
	// latest) per user.
	OfficeStream  = "GARDEND_OFFICE"
	officeSubject = "gardend.office"
)

func SiteStream(n uint32) string { return "GARDEND_" + strings.ToUpper(SiteDomain(n)) }

// siteTag is the tag of a site's user JWT that carries its number.
const siteTag = "gardend-site:"

// SiteCreds makes the NATS credentials of site n named name: a new user key pair of
// gardend's account, allowed to connect only as a leaf node and only on its own
// subjects (docs/sync.md lists them). It returns the creds file and the user's
// public key.
func (k *Keys) SiteCreds(n uint32, name string) (creds []byte, userPub string, err error) {
	user, err := nkeys.CreateUser()
	if err != nil {
		return nil, "", err
	}
	creds, err = k.siteCreds(n, name, user)
	return creds, publicKey(user), err
}

func (k *Keys) siteCreds(n uint32, name string, user nkeys.KeyPair) (creds []byte, err error) {
	userPub := publicKey(user)
	uc := jwt.NewUserClaims(userPub)
	uc.Name = name
	uc.Tags.Add(siteTag + strconv.FormatUint(uint64(n), 10))
	uc.AllowedConnectionTypes.Add(jwt.ConnectionTypeLeafnode)
	d := SiteDomain(n)
	// For a leaf node, pub is what the box may send into the hub, sub what the hub
	// may send into the box.
	uc.Pub.Allow.Add(
		// Its changes, sourced by the hub: answers to the hub's consumer requests and
		// the deliveries.
		"$JSC.R.>", DeliverPrefix(n)+".>",
		// Its reports.
		StatusSubject(n),
		// Reading the office's users from the hub's stream.
		"$JS."+HubDomain+".API.CONSUMER.CREATE."+OfficeStream+".>",
		"$JS."+HubDomain+".API.CONSUMER.INFO."+OfficeStream+".>",
		"$JS."+HubDomain+".API.CONSUMER.DELETE."+OfficeStream+".>",
		"$JS."+HubDomain+".API.CONSUMER.MSG.NEXT."+OfficeStream+".>",
		"$JS."+HubDomain+".API.STREAM.INFO."+OfficeStream,
		"$JS.FC.>",
	)
	uc.Sub.Allow.Add(
		"$JS."+d+".API.>", "$JS.FC."+d+".>",
		// The hub's answers to the flow control of its sourcing from the box's
		// stream and bucket: the subjects name the box's stream (JetStream's v1
		// format, the default). Without them the sourcing stalls as soon as a few
		// MiB are in flight (a picture) until it is set up afresh.
		"$JS.FC."+OutStream+".>", "$JS.FC.OBJ_"+PictureBucket(n)+".>",
		AckSubject(n), InboxPrefix(n)+".>",
	)
	jwtStr, err := uc.Encode(k.Account)
	if err != nil {
		return nil, err
	}
	seed, err := user.Seed()
	if err != nil {
		return nil, err
	}
	body, err := jwt.FormatUserConfig(jwtStr, seed)
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# gardend site %s, number %d: the NATS credentials of its field box.\n"+
		"# Keep this file secret: gardend serve --sync-creds FILE (docs/sync.md).\n", name, n)
	return append([]byte(head), body...), nil
}

// AddSite registers a site at the office and returns it with its credentials file
// (gardend site add).
func AddSite(st interface {
	store.SiteStore
	Secret(name string, size int) ([]byte, error)
}, name string) (store.Site, []byte, error) {
	keys, err := LoadKeys(st.Secret)
	if err != nil {
		return store.Site{}, nil, err
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		return store.Site{}, nil, err
	}
	site, err := st.CreateSite(name, publicKey(user))
	if err != nil {
		return store.Site{}, nil, err
	}
	creds, err := keys.siteCreds(site.Number, site.Name, user)
	return site, creds, err
}

// SiteIdentity is what a box learns of itself from its credentials file.
type SiteIdentity struct {
	Number uint32
	Name   string
}

// ParseSiteCreds reads a site's credentials file: its number and name are in the
// user JWT's claims.
func ParseSiteCreds(creds []byte) (SiteIdentity, error) {
	token, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return SiteIdentity{}, fmt.Errorf("not a NATS credentials file: %w", err)
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return SiteIdentity{}, fmt.Errorf("its user JWT: %w", err)
	}
	if _, err := nkeys.ParseDecoratedNKey(creds); err != nil {
		return SiteIdentity{}, fmt.Errorf("its seed: %w", err)
	}
	for _, tag := range uc.Tags {
		if v, ok := strings.CutPrefix(tag, siteTag); ok {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || n < 2 || n > 8191 {
				break
			}
			return SiteIdentity{Number: uint32(n), Name: uc.Name}, nil
		}
	}
	return SiteIdentity{}, errors.New("it names no gardend site: make it with gardend site add")
}
