// Package pointcloud keeps the point clouds of plants and the positions computed from
// them. A cloud's job flows one way through it:
//
//	queue (Pool.Enqueue: the requests' and the sync's missing clouds, in the store)
//	→ claim (Pool.Run: due jobs claimed for this node, the lease renewed meanwhile)
//	→ download (spatial; skipped when the PLY file is kept already)
//	→ write PLY (Files: pointclouds/<project>/<cloud>.ply, atomically, within the
//	  disk budget)
//	→ compute the position (spatial.PlantPosition)
//	→ store it (store.CompleteCloudJob, which removes the job in the same transaction)
//
// The HTTP handlers stay in server: they ask Pool.Coords what is known and what to
// queue, and read the kept files through Files. The package imports store, spatial,
// spatial/cloud and server/atomicfile, never server or cli.
package pointcloud
