package store

// Removed is what a committed deletion leaves to clean up outside the database.
type Removed struct {
	// ImagePaths are the image files of the removed gardens, relative to the data
	// directory.
	ImagePaths []string
	// BedUUIDs are the spatial-server projects of removed beds that no remaining bed
	// refers to. Their plant positions and queued downloads went with the deletion;
	// files kept for them (point clouds) can go too.
	BedUUIDs []string
	// PhotoPaths are the content of the removed photos and their thumbnails
	// (PhotoContent).
	PhotoPaths []string
}
