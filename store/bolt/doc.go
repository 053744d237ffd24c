// Package bolt keeps gardend's records in an embedded bbolt database: one file in the
// data directory that one process owns. It implements the interfaces of package store;
// every exported method is one domain operation that owns its transaction, and values
// are copied out of bbolt before the transaction ends.
package bolt
