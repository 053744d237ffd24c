// Package backup writes and reads gardend's backup archives and switches a data
// directory over to a restored copy.
//
// An archive is a plain (uncompressed) tar stream:
//
//	manifest.json         first entry: format, versions, time, every entry's size and SHA-256
//	data/<path>           one regular file per manifest entry, in manifest order
//
// where <path> is relative to the data directory ("gardend.db", "images/….png",
// "pointclouds/<project>/<geometry>.ply"). Nothing else may appear: no directories,
// links or devices, so unpacking an archive by hand with tar is safe too.
//
// The manifest comes first so a reader knows every entry's size before reading it and
// can verify the whole stream in one pass with bounded memory. Because the manifest
// needs every checksum up front, Write makes two passes: it first pins each file (a
// hard link into a private spool directory, so a file deleted meanwhile is still
// copied) and hashes it, then writes the tar, re-hashing as it copies.
//
// The package knows nothing of bbolt or HTTP: the caller passes a snapshot function
// when writing and a database check when restoring. It imports only the standard
// library.
package backup
