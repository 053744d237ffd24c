// Package sitesync joins field boxes to a head office over NATS JetStream
// (docs/sync.md): every record has one home, the site where its company (or the user)
// was made; its home sends it to the other side and nobody else writes it.
//
// A field box embeds nats-server (JetStream on, files in the data directory, no TCP
// port of its own) with a leaf-node connection to the office's hub. Its sync loop
// reads the store's change feed, sends each changed record as it is into a stream of
// the box's own JetStream domain (pictures into an object store bucket), and trims
// the feed when the office acknowledges what it applied. The hub sources both from
// the box across the leaf node, with flow control, whenever the link is up. Office
// nodes apply each site's stream into PostgreSQL, refusing anything a site sends
// about records homed elsewhere, and send the office's user accounts the other way.
//
// Record kinds are registered in kinds.go: one adapter per kind says how to read a
// record at its home, which of its fields are ids (mapped between sites), which ids
// must be homed at the sender, and how to write it as a replica. The transport never
// looks inside a record.
package sitesync
