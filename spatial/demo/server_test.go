package demo_test

import (
	"bytes"
	"context"
	"image/png"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	seerep "github.com/gardend/gardend/proto"
	"github.com/gardend/gardend/spatial/demo"
)

type clients struct {
	meta  seerep.MetaOperationsClient
	tf    seerep.TfServiceClient
	meas  seerep.MeasurementServiceClient
	label seerep.LabelServiceClient
	pc    seerep.PointCloudServiceClient
}

func serve(t *testing.T, ds *demo.Dataset, so demo.ServerOptions) (*demo.Server, clients) {
	t.Helper()
	srv := demo.NewServer(ds, so)
	addr, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	if srv.Addr() != addr {
		t.Errorf("Addr %q, Start said %q", srv.Addr(), addr)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return srv, clients{
		seerep.NewMetaOperationsClient(conn), seerep.NewTfServiceClient(conn), seerep.NewMeasurementServiceClient(conn),
		seerep.NewLabelServiceClient(conn), seerep.NewPointCloudServiceClient(conn),
	}
}

func TestServerAnswers(t *testing.T) {
	ds := demo.Generate(demo.Options{Seed: 1, Beds: 2})
	srv, c := serve(t, ds, demo.ServerOptions{})
	ctx := context.Background()
	b := &ds.Beds[0]
	p := b.Plants[0]
	var frame string
	for f := range b.Transforms {
		frame = f
	}

	t.Run("GetProjects", func(t *testing.T) {
		r, err := c.meta.GetProjects(ctx, &emptypb.Empty{})
		if err != nil || len(r.GetProjects()) != 2 || r.GetProjects()[1].GetUuid() != ds.Beds[1].ProjectUUID {
			t.Errorf("%v %v", r, err)
		}
	})
	t.Run("GetProjectDetails", func(t *testing.T) {
		r, err := c.meta.GetProjectDetails(ctx, &seerep.ProjectQuery{Projectuuid: b.ProjectUUID})
		if err != nil {
			t.Fatal(err)
		}
		if r.GetInfo().GetName() != b.Name || r.GetGeolocation().GetLatitude() != b.Geolocation.Lat ||
			len(r.GetGeometries()) != len(b.Geometries) || r.GetGeometries()[0].GetUuid() != b.Geometries[0].UUID {
			t.Errorf("details %v", r.GetInfo())
		}
	})
	t.Run("GetFrames", func(t *testing.T) {
		r, err := c.tf.GetFrames(ctx, &seerep.FrameQuery{Projectuuid: b.ProjectUUID})
		if err != nil || len(r.GetFrames()) != len(b.Frames) || r.GetFrames()[0] != "map" {
			t.Errorf("%v %v", r, err)
		}
	})
	t.Run("GetTransformStamped", func(t *testing.T) {
		q := &seerep.TransformStampedQuery{Header: &seerep.Header{FrameId: "map", UuidProject: b.ProjectUUID}, ChildFrameId: frame}
		r, err := c.tf.GetTransformStamped(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want := b.Transforms[frame]
		got := r.GetTransform()
		if got.GetTranslation().GetX() != want.Translation[0] || got.GetRotation().GetW() != want.Rotation[3] || r.GetChildFrameId() != frame {
			t.Errorf("transform %v, want %v", got, want)
		}
		q.ChildFrameId = "map"
		if r, err := c.tf.GetTransformStamped(ctx, q); err != nil || r.GetTransform().GetRotation().GetW() != 1 {
			t.Errorf("map to map: %v %v", r, err)
		}
	})
	t.Run("GetMeasurementByUUID", func(t *testing.T) {
		r, err := c.meas.GetMeasurementByUUID(ctx, &seerep.GeometryQuery{Projectuuid: b.ProjectUUID, Geometryuuid: p.MeasurementUUID})
		if err != nil {
			t.Fatal(err)
		}
		raw := b.Measurements[p.MeasurementUUID]
		if len(r.GetData()) != len(raw) {
			t.Errorf("%d values, want %d", len(r.GetData()), len(raw))
		}
		if s, ok := raw["status"].(string); ok && r.GetData()["status"].GetStringData() != s {
			t.Errorf("status %v", r.GetData()["status"])
		}
	})
	t.Run("GetInstance and GetClass", func(t *testing.T) {
		in, err := c.label.GetInstance(ctx, &seerep.InstanceQuery{Projectuuid: b.ProjectUUID, Instanceuuid: p.InstanceUUID})
		if err != nil || in.GetName() != b.Instances[p.InstanceUUID].Name || in.GetClassuuid() != p.ClassUUID {
			t.Errorf("%v %v", in, err)
		}
		cl, err := c.label.GetClass(ctx, &seerep.ClassQuery{Projectuuid: b.ProjectUUID, Classuuid: p.ClassUUID})
		if err != nil || cl.GetAttributes()["variety"].GetStringData() != b.Classes[p.ClassUUID].Attributes["variety"] {
			t.Errorf("%v %v", cl, err)
		}
	})
	t.Run("streams", func(t *testing.T) {
		ms, err := c.meas.GetMeasurement(ctx, &seerep.Query{Projectuuid: b.ProjectUUID})
		if err != nil {
			t.Fatal(err)
		}
		if n := count(t, ms.Recv); n != len(b.Measurements) {
			t.Errorf("%d measurements, want %d", n, len(b.Measurements))
		}
		pcs, err := c.pc.GetPointCloud2(ctx, &seerep.Query{Projectuuid: b.ProjectUUID})
		if err != nil {
			t.Fatal(err)
		}
		if n := count(t, pcs.Recv); n != len(b.Clouds) {
			t.Errorf("%d clouds, want %d", n, len(b.Clouds))
		}
	})
	t.Run("GetPointCloud2ByUUID", func(t *testing.T) {
		for _, p := range b.Plants {
			if p.CloudUUID == "" {
				continue
			}
			r, err := c.pc.GetPointCloud2ByUUID(ctx, &seerep.GeometryQuery{Projectuuid: b.ProjectUUID, Geometryuuid: p.CloudUUID})
			if err != nil {
				t.Fatal(err)
			}
			want := b.Clouds[p.CloudUUID]
			if !bytes.Equal(r.GetData(), want.Data) || r.GetPointStep() != want.PointStep || r.GetIsBigendian() != want.BigEndian ||
				len(r.GetFields()) != len(want.Fields) || r.GetHeader().GetFrameId() != want.FrameID {
				t.Errorf("%s: cloud differs", p.Name)
			}
			break
		}
	})
	st := srv.Stats()
	if st.Calls["/seerep.MetaOperations/GetProjects"] != 1 || st.Calls["/seerep.MeasurementService/GetMeasurement"] != 1 || st.InFlight != 0 {
		t.Errorf("stats %+v", st)
	}
}

func count[T any](t *testing.T, recv func() (T, error)) int {
	n := 0
	for {
		_, err := recv()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
}

func TestServerNotFound(t *testing.T) {
	ds := demo.Generate(demo.Options{Seed: 1, Beds: 1})
	_, c := serve(t, ds, demo.ServerOptions{})
	ctx := context.Background()
	b := ds.Beds[0].ProjectUUID
	tests := []struct {
		name string
		call func() error
	}{
		{"project", func() error {
			_, err := c.meta.GetProjectDetails(ctx, &seerep.ProjectQuery{Projectuuid: "x"})
			return err
		}},
		{"frames", func() error { _, err := c.tf.GetFrames(ctx, &seerep.FrameQuery{Projectuuid: "x"}); return err }},
		{"transform", func() error {
			_, err := c.tf.GetTransformStamped(ctx, &seerep.TransformStampedQuery{Header: &seerep.Header{FrameId: "map", UuidProject: b}, ChildFrameId: "x"})
			return err
		}},
		{"transform into another frame", func() error {
			_, err := c.tf.GetTransformStamped(ctx, &seerep.TransformStampedQuery{Header: &seerep.Header{FrameId: "odom", UuidProject: b}, ChildFrameId: "map"})
			return err
		}},
		{"measurement", func() error {
			_, err := c.meas.GetMeasurementByUUID(ctx, &seerep.GeometryQuery{Projectuuid: b, Geometryuuid: "x"})
			return err
		}},
		{"instance", func() error {
			_, err := c.label.GetInstance(ctx, &seerep.InstanceQuery{Projectuuid: b, Instanceuuid: "x"})
			return err
		}},
		{"class", func() error {
			_, err := c.label.GetClass(ctx, &seerep.ClassQuery{Projectuuid: b, Classuuid: "x"})
			return err
		}},
		{"cloud", func() error {
			_, err := c.pc.GetPointCloud2ByUUID(ctx, &seerep.GeometryQuery{Projectuuid: b, Geometryuuid: "x"})
			return err
		}},
		{"stream of unknown project", func() error {
			s, err := c.meas.GetMeasurement(ctx, &seerep.Query{Projectuuid: "x"})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); status.Code(err) != codes.NotFound {
				t.Errorf("err %v, want NotFound", err)
			}
		})
	}
}

func TestServerInjection(t *testing.T) {
	ds := demo.Generate(demo.Options{Seed: 1, Beds: 1})
	srv, c := serve(t, ds, demo.ServerOptions{Latency: 50 * time.Millisecond, FailRate: 1})
	q := &seerep.ProjectQuery{Projectuuid: ds.Beds[0].ProjectUUID}

	start := time.Now()
	_, err := c.meta.GetProjectDetails(context.Background(), q)
	if status.Code(err) != codes.Unavailable || time.Since(start) < 50*time.Millisecond {
		t.Errorf("err %v after %v, want Unavailable after the latency", err, time.Since(start))
	}

	srv.SetFailRate(0)
	srv.SetLatency(5 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.meta.GetProjectDetails(ctx, q); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("err %v, want DeadlineExceeded", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for srv.Stats().Cancelled != 1 || srv.Stats().InFlight != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want one cancelled call", srv.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}

	srv.SetLatency(0)
	srv.FailProject(q.Projectuuid, codes.Internal)
	if _, err := c.meta.GetProjectDetails(context.Background(), q); status.Code(err) != codes.Internal {
		t.Errorf("err %v, want Internal", err)
	}
	srv.FailProject(q.Projectuuid, codes.OK)
	srv.SetProjectLatency(q.Projectuuid, 60*time.Millisecond)
	start = time.Now()
	if _, err := c.meta.GetProjectDetails(context.Background(), q); err != nil || time.Since(start) < 60*time.Millisecond {
		t.Errorf("err %v after %v", err, time.Since(start))
	}
	st := srv.Stats()
	if st.Injected != 2 || st.MaxInFlight != 1 || st.Calls["/seerep.MetaOperations/GetProjectDetails"] != 4 {
		t.Errorf("stats %+v", st)
	}
	srv.ResetStats()
	if st := srv.Stats(); len(st.Calls) != 0 || st.Injected != 0 {
		t.Errorf("after reset %+v", st)
	}
}

func TestGardenPNG(t *testing.T) {
	ds := demo.Generate(demo.Options{Seed: 1, Beds: 3})
	data, corners := demo.GardenPNG(ds, 600, 300)
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 600 || b.Dy() != 300 {
		t.Errorf("size %v", b)
	}
	tl, tr, bl, br := corners["top_left"], corners["top_right"], corners["bottom_left"], corners["bottom_right"]
	if len(corners) != 4 || tl.Lat != tr.Lat || bl.Lat != br.Lat || tl.Lon != bl.Lon || tr.Lon != br.Lon ||
		tl.Lat <= bl.Lat || tr.Lon <= tl.Lon {
		t.Fatalf("corners %v", corners)
	}
	for _, b := range ds.Beds {
		g := b.Geolocation
		if g.Lat < bl.Lat || g.Lat > tl.Lat || g.Lon < tl.Lon || g.Lon > tr.Lon {
			t.Errorf("bed %s at %v outside the picture", b.Name, g)
		}
		// Just inside the bed's south-west corner: soil.
		x := int((g.Lon - tl.Lon) / (tr.Lon - tl.Lon) * 600)
		y := int((tl.Lat - g.Lat) / (tl.Lat - bl.Lat) * 300)
		r, gr, _, _ := img.At(x+1, y-1).RGBA()
		if r>>8 != 110 || gr>>8 != 78 {
			t.Errorf("bed %s: pixel (%d,%d) is %d,%d, want soil", b.Name, x+1, y-1, r>>8, gr>>8)
		}
	}
	if r, g, _, _ := img.At(0, 0).RGBA(); r>>8 != 86 || g>>8 != 140 {
		t.Errorf("corner pixel %d,%d, want grass", r>>8, g>>8)
	}
}
