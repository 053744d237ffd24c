package demo

import (
	"context"
	"sort"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seerep "github.com/gardend/gardend/proto"
	"github.com/gardend/gardend/spatial"
)

// One small type per service: the generated Unimplemented… types cannot all be
// embedded in one struct.

type metaService struct {
	seerep.UnimplementedMetaOperationsServer
	s *Server
}

func (m metaService) GetProjects(ctx context.Context, _ *emptypb.Empty) (*seerep.ProjectInfos, error) {
	if err := m.s.inject(ctx, ""); err != nil {
		return nil, err
	}
	out := &seerep.ProjectInfos{}
	for _, b := range m.s.ds.Beds {
		out.Projects = append(out.Projects, &seerep.ProjectInfo{Name: b.Name, Uuid: b.ProjectUUID})
	}
	return out, nil
}

func (m metaService) GetProjectDetails(ctx context.Context, q *seerep.ProjectQuery) (*seerep.ProjectDetails, error) {
	b, err := m.s.project(ctx, q.GetProjectuuid())
	if err != nil {
		return nil, err
	}
	out := &seerep.ProjectDetails{
		Info: &seerep.ProjectInfo{Name: b.Name, Uuid: b.ProjectUUID},
		Geolocation: &seerep.GeodeticPosition{
			CoordinateSystem: "EPSG::4326", Ellipsoid: "EPSG::7030",
			Latitude: b.Geolocation.Lat, Longitude: b.Geolocation.Lon, Altitude: b.Altitude,
		},
	}
	for _, g := range b.Geometries {
		out.Geometries = append(out.Geometries, &seerep.GeometryInfo{
			Name: g.Name, Uuid: g.UUID, Type: g.Type, FrameId: g.FrameID,
			Stamp: timestamppb.New(g.Stamp), Labels: g.Labels,
		})
	}
	return out, nil
}

type tfService struct {
	seerep.UnimplementedTfServiceServer
	s *Server
}

func (t tfService) GetFrames(ctx context.Context, q *seerep.FrameQuery) (*seerep.FrameInfos, error) {
	b, err := t.s.project(ctx, q.GetProjectuuid())
	if err != nil {
		return nil, err
	}
	return &seerep.FrameInfos{Frames: b.Frames}, nil
}

func (t tfService) GetTransformStamped(ctx context.Context, q *seerep.TransformStampedQuery) (*seerep.TransformStamped, error) {
	project := q.GetHeader().GetUuidProject()
	b, err := t.s.project(ctx, project)
	if err != nil {
		return nil, err
	}
	target, child := q.GetHeader().GetFrameId(), q.GetChildFrameId()
	var tf spatial.Transform
	switch {
	case target != FrameMap:
		return nil, status.Errorf(codes.NotFound, "no transforms into frame %q, only into %q", target, FrameMap)
	case child == FrameMap:
		tf = spatial.Transform{Rotation: [4]float64{0, 0, 0, 1}}
	default:
		var ok bool
		if tf, ok = b.Transforms[child]; !ok {
			return nil, status.Errorf(codes.NotFound, "no transform from %q to %q", child, target)
		}
	}
	return &seerep.TransformStamped{
		Header:       &seerep.Header{FrameId: target, UuidProject: project, Stamp: timestamppb.New(t.s.ds.Now)},
		ChildFrameId: child,
		Transform: &seerep.Transform{
			Translation: &seerep.Vector3{X: tf.Translation[0], Y: tf.Translation[1], Z: tf.Translation[2]},
			Rotation:    &seerep.Quaternion{X: tf.Rotation[0], Y: tf.Rotation[1], Z: tf.Rotation[2], W: tf.Rotation[3]},
		},
	}, nil
}

type measurementService struct {
	seerep.UnimplementedMeasurementServiceServer
	s *Server
}

// GetMeasurement streams every measurement of the query's project (in geometry uuid
// order); the other query filters are not implemented.
func (m measurementService) GetMeasurement(q *seerep.Query, stream grpc.ServerStreamingServer[seerep.Measurement]) error {
	ctx := stream.Context()
	b, err := m.s.project(ctx, q.GetProjectuuid())
	if err != nil {
		return err
	}
	for _, uuid := range sortedKeys(b.Measurements) {
		if err := stream.Send(measurement(b, uuid)); err != nil {
			return err
		}
	}
	return nil
}

func (m measurementService) GetMeasurementByUUID(ctx context.Context, q *seerep.GeometryQuery) (*seerep.Measurement, error) {
	b, err := m.s.project(ctx, q.GetProjectuuid())
	if err != nil {
		return nil, err
	}
	if _, ok := b.Measurements[q.GetGeometryuuid()]; !ok {
		return nil, status.Errorf(codes.NotFound, "measurement %q not found in project %q", q.GetGeometryuuid(), b.ProjectUUID)
	}
	return measurement(b, q.GetGeometryuuid()), nil
}

func measurement(b *Bed, uuid string) *seerep.Measurement {
	return &seerep.Measurement{
		Header: &seerep.Header{FrameId: FrameMap, UuidProject: b.ProjectUUID, UuidMsgs: uuid},
		Data:   dataMap(b.Measurements[uuid]),
	}
}

type labelService struct {
	seerep.UnimplementedLabelServiceServer
	s *Server
}

func (l labelService) GetInstance(ctx context.Context, q *seerep.InstanceQuery) (*seerep.InstanceInfos, error) {
	b, err := l.s.project(ctx, q.GetProjectuuid())
	if err != nil {
		return nil, err
	}
	in, ok := b.Instances[q.GetInstanceuuid()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "instance %q not found in project %q", q.GetInstanceuuid(), b.ProjectUUID)
	}
	return &seerep.InstanceInfos{Name: in.Name, Uuid: in.UUID, Classuuid: in.ClassUUID, Attributes: dataMap(in.Attributes)}, nil
}

func (l labelService) GetClass(ctx context.Context, q *seerep.ClassQuery) (*seerep.ClassInfos, error) {
	b, err := l.s.project(ctx, q.GetProjectuuid())
	if err != nil {
		return nil, err
	}
	c, ok := b.Classes[q.GetClassuuid()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "class %q not found in project %q", q.GetClassuuid(), b.ProjectUUID)
	}
	return &seerep.ClassInfos{Name: c.Name, Uuid: c.UUID, Attributes: dataMap(c.Attributes)}, nil
}

type pointCloudService struct {
	seerep.UnimplementedPointCloudServiceServer
	s *Server
}

// GetPointCloud2 streams every cloud of the query's project (in uuid order); the other
// query filters are not implemented.
func (p pointCloudService) GetPointCloud2(q *seerep.Query, stream grpc.ServerStreamingServer[seerep.PointCloud2]) error {
	ctx := stream.Context()
	b, err := p.s.project(ctx, q.GetProjectuuid())
	if err != nil {
		return err
	}
	for _, uuid := range sortedKeys(b.Clouds) {
		if err := stream.Send(pointCloud(b, uuid)); err != nil {
			return err
		}
	}
	return nil
}

func (p pointCloudService) GetPointCloud2ByUUID(ctx context.Context, q *seerep.GeometryQuery) (*seerep.PointCloud2, error) {
	b, err := p.s.project(ctx, q.GetProjectuuid())
	if err != nil {
		return nil, err
	}
	if _, ok := b.Clouds[q.GetGeometryuuid()]; !ok {
		return nil, status.Errorf(codes.NotFound, "point cloud %q not found in project %q", q.GetGeometryuuid(), b.ProjectUUID)
	}
	return pointCloud(b, q.GetGeometryuuid()), nil
}

func pointCloud(b *Bed, uuid string) *seerep.PointCloud2 {
	c := b.Clouds[uuid]
	out := &seerep.PointCloud2{
		Header:      &seerep.Header{FrameId: c.FrameID, UuidProject: b.ProjectUUID, UuidMsgs: uuid, Stamp: timestamppb.New(c.Stamp)},
		Height:      c.Height,
		Width:       c.Width,
		IsBigendian: c.BigEndian,
		PointStep:   c.PointStep,
		RowStep:     c.RowStep,
		Data:        c.Data,
		IsDense:     c.Points == int(c.Width*c.Height),
	}
	for _, f := range c.Fields {
		out.Fields = append(out.Fields, &seerep.PointField{
			Name: f.Name, Offset: f.Offset, Datatype: seerep.PointField_Datatype(f.Datatype), Count: f.Count,
		})
	}
	return out
}

// dataMap encodes raw values as MeasurementData; values of other Go types (nil
// included) become a MeasurementData with no member set.
func dataMap(m map[string]any) map[string]*seerep.MeasurementData {
	out := make(map[string]*seerep.MeasurementData, len(m))
	for k, v := range m {
		d := &seerep.MeasurementData{}
		switch x := v.(type) {
		case float64:
			d.Data = &seerep.MeasurementData_DoubleData{DoubleData: x}
		case int64:
			d.Data = &seerep.MeasurementData_Int64Data{Int64Data: x}
		case uint64:
			d.Data = &seerep.MeasurementData_Uint64Data{Uint64Data: x}
		case bool:
			d.Data = &seerep.MeasurementData_BoolData{BoolData: x}
		case string:
			d.Data = &seerep.MeasurementData_StringData{StringData: x}
		}
		out[k] = d
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
