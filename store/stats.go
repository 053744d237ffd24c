package store

// Stats summarises the database for `gardend inspect stats`.
type Stats struct {
	SchemaVersion uint64        `json:"schema_version"`
	FileBytes     int64         `json:"file_bytes"`
	Buckets       []BucketStats `json:"buckets"`
}

// BucketStats counts the keys of one bucket.
type BucketStats struct {
	Name string `json:"name"`
	Keys int    `json:"keys"`
}
