package spatial

import (
	"context"
	"math"

	seerep "github.com/gardend/gardend/proto"
	"github.com/gardend/gardend/spatial/cloud"
)

// PointCloud downloads one point cloud. Clouds are large and read once (the position
// computed from one is kept by the caller), so they are neither cached nor shared
// between callers. Call it from background work, not on a request's path. Its
// deadline is CloudTimeout, not CallTimeout.
func (c *Client) PointCloud(ctx context.Context, projectUUID, cloudUUID string) (cloud.PointCloud, error) {
	var pc seerep.PointCloud2
	err := c.invoke(ctx, seerep.PointCloudService_GetPointCloud2ByUUID_FullMethodName, projectUUID,
		"point cloud "+cloudUUID+" of project "+projectUUID, c.cfg.CloudTimeout,
		&seerep.GeometryQuery{Projectuuid: projectUUID, Geometryuuid: cloudUUID}, &pc)
	if err != nil {
		return cloud.PointCloud{}, err
	}
	return convertCloud(&pc), nil
}

func convertCloud(pc *seerep.PointCloud2) cloud.PointCloud {
	fields := make([]cloud.Field, len(pc.GetFields()))
	for i, f := range pc.GetFields() {
		dt := f.GetDatatype()
		if dt < 0 || dt > math.MaxUint8 {
			dt = 0 // out of range for cloud.Datatype: unknown, like UNSET
		}
		fields[i] = cloud.Field{Name: f.GetName(), Offset: f.GetOffset(), Datatype: cloud.Datatype(dt), Count: f.GetCount()}
	}
	return cloud.PointCloud{
		Width:     pc.GetWidth(),
		Height:    pc.GetHeight(),
		PointStep: pc.GetPointStep(),
		RowStep:   pc.GetRowStep(),
		Fields:    fields,
		BigEndian: pc.GetIsBigendian(),
		Data:      pc.GetData(),
	}
}
