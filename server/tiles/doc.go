// Package tiles keeps the tile pyramids of garden pictures (imagestore/pyramid) as
// pack files in the data directory's tiles/ and builds them in the background.
//
// A picture's pack is named after its image path ("images/<hex>.png" gives
// tiles/<hex>.pyr). Paths name immutable content, so a pack never goes stale: it is
// deleted with its picture (Forget, and the sweeps) and never needs rebuilding while
// the picture stays.
//
// The build queue is derived, not stored: what needs building is every picture the
// store refers to that has no pack (and no record of a permanent failure), so the queue
// survives any restart as the store and the directory do. With a store of its own
// (bbolt) a node queues every such picture as it starts (QueueMissing) (after an import or a restore, which leave no packs, everything is rebuilt);
// with a shared one (PostgreSQL) tiles/ is a per-node cache, and a picture is built
// when a request first needs it. Either way an upload's picture is built at once, and
// a new upload cancels the build of the picture it replaces.
//
// A build that cannot succeed (damaged pixel data, a picture over the limits) leaves
// <hex>.failed with the reason, so that it is not tried again; one that fails for a
// passing reason (a full disk, the database away) is retried with backoff. Packs
// count against a disk budget (Config.MaxBytes): beyond it the least recently served
// are deleted and marked <hex>.evicted, so that a start does not rebuild them; a
// request rebuilds one.
//
// The package imports store, imagestore/pyramid, server/atomicfile and zerolog, never
// server or cli.
package tiles
