// Package store is gardend's domain: the records and their types, the rules they
// follow (validation, normalisation, the messages of refusals), the sentinel errors,
// the backend-neutral archive format, and the interfaces by concern that the server
// needs of a database (backend.go). It keeps no data itself: store/bolt (an embedded
// bbolt file, the default) and store/postgres (any number of nodes on one
// PostgreSQL database) implement the interfaces, and store/storetest holds the
// contract suite both pass.
package store
