package spatial_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	seerep "github.com/gardend/gardend/proto"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// faultTimeout is the CallTimeout (and CloudTimeout) of the fault tests: short, so a
// case that waits for it stays quick, long enough that a loaded machine under the race
// detector still connects to a healthy loopback server within it.
const faultTimeout = 500 * time.Millisecond

// faultSlack is what a failing call may take beyond its attempts' deadlines: the retry
// pause, connection set-up, a loaded two-core machine under -race.
const faultSlack = 1500 * time.Millisecond

// faultSeerep is a seerep server that misbehaves as its hooks say. A nil hook answers
// Unimplemented, as a server without that service would.
type faultSeerep struct {
	details     func(context.Context, *seerep.ProjectQuery) (*seerep.ProjectDetails, error)
	measurement func(context.Context, *seerep.GeometryQuery) (*seerep.Measurement, error)
	cloud       func(context.Context, *seerep.GeometryQuery) (*seerep.PointCloud2, error)
	// label answers GetInstance and GetClass, transform GetTransformStamped, with an
	// error only: the fault cases never need a value from them.
	label, transform error

	mu    sync.Mutex
	calls map[string]int
}

func (f *faultSeerep) count(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[method]++
}

func (f *faultSeerep) callsTo(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// One type per service: the generated Unimplemented types share method names.
type (
	faultMeta struct {
		seerep.UnimplementedMetaOperationsServer
		f *faultSeerep
	}
	faultMeasurements struct {
		seerep.UnimplementedMeasurementServiceServer
		f *faultSeerep
	}
	faultClouds struct {
		seerep.UnimplementedPointCloudServiceServer
		f *faultSeerep
	}
	faultLabels struct {
		seerep.UnimplementedLabelServiceServer
		f *faultSeerep
	}
	faultTf struct {
		seerep.UnimplementedTfServiceServer
		f *faultSeerep
	}
)

func (s faultMeta) GetProjectDetails(ctx context.Context, q *seerep.ProjectQuery) (*seerep.ProjectDetails, error) {
	s.f.count(mDetails)
	if s.f.details == nil {
		return s.UnimplementedMetaOperationsServer.GetProjectDetails(ctx, q)
	}
	return s.f.details(ctx, q)
}

func (s faultMeasurements) GetMeasurementByUUID(ctx context.Context, q *seerep.GeometryQuery) (*seerep.Measurement, error) {
	s.f.count(mMeasurement)
	if s.f.measurement == nil {
		return s.UnimplementedMeasurementServiceServer.GetMeasurementByUUID(ctx, q)
	}
	return s.f.measurement(ctx, q)
}

func (s faultClouds) GetPointCloud2ByUUID(ctx context.Context, q *seerep.GeometryQuery) (*seerep.PointCloud2, error) {
	s.f.count(mCloud)
	if s.f.cloud == nil {
		return s.UnimplementedPointCloudServiceServer.GetPointCloud2ByUUID(ctx, q)
	}
	return s.f.cloud(ctx, q)
}

func (s faultLabels) GetInstance(context.Context, *seerep.InstanceQuery) (*seerep.InstanceInfos, error) {
	s.f.count(mInstance)
	return nil, s.f.label
}

func (s faultLabels) GetClass(context.Context, *seerep.ClassQuery) (*seerep.ClassInfos, error) {
	s.f.count(mClass)
	return nil, s.f.label
}

func (s faultTf) GetTransformStamped(context.Context, *seerep.TransformStampedQuery) (*seerep.TransformStamped, error) {
	s.f.count(mTransform)
	return nil, s.f.transform
}

// start serves f on a free loopback port until the test ends.
func (f *faultSeerep) start(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := grpc.NewServer()
	seerep.RegisterMetaOperationsServer(srv, faultMeta{f: f})
	seerep.RegisterMeasurementServiceServer(srv, faultMeasurements{f: f})
	seerep.RegisterPointCloudServiceServer(srv, faultClouds{f: f})
	seerep.RegisterLabelServiceServer(srv, faultLabels{f: f})
	seerep.RegisterTfServiceServer(srv, faultTf{f: f})
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(l) //nolint:errcheck // returns after Stop
	}()
	tb.Cleanup(func() { srv.Stop(); <-done })
	return l.Addr().String()
}

// hang blocks until the call's deadline, as a server that never answers does.
func hang[Q, T any](ctx context.Context, _ Q) (T, error) {
	var zero T
	<-ctx.Done()
	return zero, status.FromContextError(ctx.Err()).Err()
}

// refusedAddr is a loopback address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// rawServer accepts TCP connections and hands each to serve, which should end by
// closing it; it stops at cleanup.
func rawServer(tb testing.TB, serve func(net.Conn)) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serve(conn) })
		}
	})
	tb.Cleanup(func() { l.Close(); wg.Wait() })
	return l.Addr().String()
}

// garbageServer answers every connection with random bytes and hangs up.
func garbageServer(t *testing.T) string {
	rng := rand.New(rand.NewPCG(5, 9))
	var mu sync.Mutex
	return rawServer(t, func(conn net.Conn) {
		defer conn.Close()
		junk := make([]byte, 4096)
		mu.Lock()
		for i := range junk {
			junk[i] = byte(rng.UintN(256))
		}
		mu.Unlock()
		conn.SetDeadline(time.Now().Add(2 * time.Second))
		conn.Write(junk)
	})
}

// hangUpServer closes every connection as soon as it is accepted.
func hangUpServer(t *testing.T) string {
	return rawServer(t, func(conn net.Conn) { conn.Close() })
}

// silentServer accepts connections, reads what comes and never answers.
func silentServer(t *testing.T) string {
	return rawServer(t, func(conn net.Conn) {
		defer conn.Close()
		// Bounded, so a test that fails before closing its client still ends.
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 4096)
		for {
			if _, err := conn.Read(buf); err != nil {
				return
			}
		}
	})
}

// http1Server is a plain HTTP/1.1 server, the classic wrong port.
func http1Server(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "this is not a gRPC server", http.StatusNotFound)
	}))
	srv.EnableHTTP2 = false
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// faultMaxRecv is the fault tests' MaxRecvBytes; the huge answers are bigBytes.
const (
	faultMaxRecv = 1 << 20
	bigBytes     = 2 << 20
)

// plantDetails is a project of two plants whose measurement, instance, class and
// transform the server may or may not know.
func plantDetails(_ context.Context, q *seerep.ProjectQuery) (*seerep.ProjectDetails, error) {
	return &seerep.ProjectDetails{
		Info:        &seerep.ProjectInfo{Name: "bed of " + q.GetProjectuuid(), Uuid: q.GetProjectuuid()},
		Geolocation: &seerep.GeodeticPosition{Latitude: 52.28, Longitude: 8.02},
		Geometries: []*seerep.GeometryInfo{
			{Name: "plant-a", Uuid: "m-a", Type: "measurement"},
			{Name: "plant-b", Uuid: "m-b", Type: "measurement", Labels: []string{"inst-b", "class-b"}},
			{Name: "plant-b", Uuid: "pc-b", Type: "pointcloud", FrameId: "camera"},
		},
	}, nil
}

// TestClientFaults: whatever the spatial server does wrong, a call ends within its
// deadlines with an error that names the call and what it asked for, and closing the
// client leaves no goroutine behind.
func TestClientFaults(t *testing.T) {
	const project, cloudUUID = "p-1", "c-1"
	bed := func(ctx context.Context, c *spatial.Client) error {
		_, err := c.Bed(ctx, project)
		return err
	}
	pointCloud := func(ctx context.Context, c *spatial.Client) error {
		_, err := c.PointCloud(ctx, project, cloudUUID)
		return err
	}
	slowDemo := func(t *testing.T) string {
		// The project does not exist in the dataset: the latency comes first, so the
		// deadline is all the client ever sees.
		return startDemo(t, dataset(1), demo.ServerOptions{Latency: 20 * faultTimeout}).Addr()
	}
	fault := func(f *faultSeerep) func(*testing.T) string {
		return func(t *testing.T) string { return f.start(t) }
	}
	tests := []struct {
		name   string
		server func(*testing.T) string
		call   func(context.Context, *spatial.Client) error
		code   codes.Code
		// unavailable: the error is ErrUnavailable (the server did not answer).
		unavailable bool
		// want are substrings of the message: the call, its target, the cause.
		want []string
		// attempts the call may make, each bounded by faultTimeout.
		attempts int
	}{
		{"down/bed", refusedAddr, bed, codes.Unavailable, true,
			[]string{"GetProjectDetails of project p-1", "unavailable"}, 2},
		{"down/cloud", refusedAddr, pointCloud, codes.Unavailable, true,
			[]string{"GetPointCloud2ByUUID point cloud c-1 of project p-1", "unavailable"}, 2},
		{"slow/bed", slowDemo, bed, codes.DeadlineExceeded, true,
			[]string{"GetProjectDetails of project p-1", "no answer within 500ms"}, 1},
		{"slow/cloud", slowDemo, pointCloud, codes.DeadlineExceeded, true,
			[]string{"GetPointCloud2ByUUID point cloud c-1 of project p-1", "no answer within 500ms"}, 1},
		{"hangs on a measurement", fault(&faultSeerep{details: plantDetails, measurement: hang[*seerep.GeometryQuery, *seerep.Measurement], label: status.Error(codes.NotFound, "no"), transform: status.Error(codes.NotFound, "no")}),
			bed, codes.DeadlineExceeded, true,
			[]string{"GetMeasurementByUUID measurement m-", "of project p-1", "no answer within 500ms"}, 1},
		{"silent", silentServer, bed, codes.DeadlineExceeded, true,
			[]string{"GetProjectDetails of project p-1", "no answer within 500ms"}, 1},
		{"garbage bytes", garbageServer, bed, codes.Unavailable, true,
			[]string{"GetProjectDetails of project p-1", "unavailable"}, 2},
		{"hangs up", hangUpServer, bed, codes.Unavailable, true,
			[]string{"GetProjectDetails of project p-1", "unavailable"}, 2},
		{"http/1 server", http1Server, bed, codes.Unavailable, true,
			[]string{"GetProjectDetails of project p-1", "unavailable"}, 2},
		{"huge cloud", fault(&faultSeerep{cloud: func(context.Context, *seerep.GeometryQuery) (*seerep.PointCloud2, error) {
			return &seerep.PointCloud2{Width: bigBytes / 16, Height: 1, PointStep: 16, RowStep: bigBytes, Data: make([]byte, bigBytes)}, nil
		}}), pointCloud, codes.ResourceExhausted, false,
			[]string{"GetPointCloud2ByUUID point cloud c-1 of project p-1", "ResourceExhausted", "larger than max"}, 1},
		{"huge project", fault(&faultSeerep{details: func(_ context.Context, q *seerep.ProjectQuery) (*seerep.ProjectDetails, error) {
			return &seerep.ProjectDetails{Info: &seerep.ProjectInfo{Name: strings.Repeat("x", bigBytes), Uuid: q.GetProjectuuid()}}, nil
		}}), bed, codes.ResourceExhausted, false,
			[]string{"GetProjectDetails of project p-1", "ResourceExhausted", "larger than max"}, 1},
		{"measurement service broken", fault(&faultSeerep{details: plantDetails,
			measurement: func(context.Context, *seerep.GeometryQuery) (*seerep.Measurement, error) {
				return nil, status.Error(codes.Internal, "measurement store corrupt")
			}, label: status.Error(codes.NotFound, "no"), transform: status.Error(codes.NotFound, "no")}),
			bed, codes.Internal, false,
			[]string{"GetMeasurementByUUID measurement m-", "of project p-1", "Internal: measurement store corrupt"}, 1},
		{"measurement service missing", fault(&faultSeerep{details: plantDetails, label: status.Error(codes.NotFound, "no"), transform: status.Error(codes.NotFound, "no")}),
			bed, codes.Unimplemented, false,
			[]string{"GetMeasurementByUUID measurement m-", "of project p-1", "Unimplemented"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := tt.server(t)
			base := runtime.NumGoroutine()
			c, err := spatial.Dial(spatial.ClientConfig{
				Addr: addr, CallTimeout: faultTimeout, CloudTimeout: faultTimeout,
				MaxRecvBytes: faultMaxRecv, CacheTTL: spatial.CacheDisabled,
			}, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = tt.call(context.Background(), c)
			took := time.Since(start)
			t.Logf("after %v: %v", took.Round(time.Millisecond), err)
			if err == nil {
				t.Fatal("no error")
			}
			var ce *spatial.CallError
			if !errors.As(err, &ce) {
				t.Errorf("%T is not a *spatial.CallError", err)
			}
			if got := status.Code(err); got != tt.code {
				t.Errorf("code %v, want %v", got, tt.code)
			}
			if errors.Is(err, spatial.ErrUnavailable) != tt.unavailable {
				t.Errorf("errors.Is(err, ErrUnavailable) = %v, want %v", !tt.unavailable, tt.unavailable)
			}
			// The message users see names the call and the project; the rest (what was
			// asked for, the server's own words) is for the log.
			detail := err.Error()
			if ce != nil {
				detail = ce.Method + " " + ce.Target + " | " + err.Error() + " | " + ce.Code.String() + ": " + ce.Upstream()
				if !strings.Contains(err.Error(), "of project "+project) {
					t.Errorf("message %q does not name the project", err)
				}
				if up := ce.Upstream(); up != "" && strings.Contains(err.Error(), up) {
					t.Errorf("message %q passes on the server's own words %q", err, up)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(detail, w) {
					t.Errorf("%q does not say %q", detail, w)
				}
			}
			if strings.Contains(err.Error(), addr) {
				t.Errorf("message %q shows the server's address", err)
			}
			if limit := time.Duration(tt.attempts)*faultTimeout + faultSlack; took > limit {
				t.Errorf("took %v, want at most %v", took, limit)
			}
			c.Close()
			expectNoClientGoroutines(t, base)
		})
	}
}

// clientMarkers are stack frames of a gRPC client connection's goroutines and of this
// package's own; the servers of these tests run none of them.
var clientMarkers = []string{
	"gardend/gardend/spatial.",
	"grpc.(*ClientConn)",
	"grpc.(*addrConn)",
	"grpc.(*ccBalancerWrapper)",
	"grpc.(*ccResolverWrapper)",
	"grpc.(*acBalancerWrapper)",
	"grpc.(*clientStream)",
	"grpcsync.(*CallbackSerializer)",
	"transport.NewHTTP2Client",
	"transport.(*http2Client)",
}

// clientGoroutines returns the stacks of the goroutines that belong to a gRPC client
// or to package spatial.
func clientGoroutines() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, m := range clientMarkers {
			if strings.Contains(g, m) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// expectNoClientGoroutines waits, a bounded time, for every client goroutine to end
// and for the goroutine count to be back within two of base (what it was before the
// client was made).
func expectNoClientGoroutines(tb testing.TB, base int) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		left := clientGoroutines()
		n := runtime.NumGoroutine()
		if len(left) == 0 && n <= base+2 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d goroutines (baseline %d), %d of a client left:\n%s", n, base, len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBedMissingMeasurements: a project whose geometries name measurements, instances,
// classes and transforms the server does not have is still a bed, promptly: its plants
// are there with their values missing (the documented behaviour, not an error).
func TestBedMissingMeasurements(t *testing.T) {
	notFound := status.Error(codes.NotFound, "no such thing")
	f := &faultSeerep{details: plantDetails, label: notFound, transform: notFound,
		measurement: func(_ context.Context, q *seerep.GeometryQuery) (*seerep.Measurement, error) {
			return nil, status.Errorf(codes.NotFound, "measurement %q not found", q.GetGeometryuuid())
		}}
	addr := f.start(t)
	base := runtime.NumGoroutine()
	c, err := spatial.Dial(spatial.ClientConfig{Addr: addr, CallTimeout: faultTimeout, CacheTTL: spatial.CacheDisabled}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	bed, err := c.Bed(context.Background(), "p-1")
	took := time.Since(start)
	t.Logf("after %v: %d plants, err %v", took.Round(time.Millisecond), len(bed.Plants), err)
	if err != nil {
		t.Fatal(err)
	}
	if took > faultTimeout+faultSlack {
		t.Errorf("took %v", took)
	}
	want := []spatial.Plant{
		{Name: "plant-a", ID: "m-a", Measurement: "m-a"},
		{Name: "plant-b", ID: "m-b", Measurement: "m-b", Cloud: &spatial.CloudRef{UUID: "pc-b", FrameID: "camera"}},
	}
	if d := diffBed(bed, spatial.Bed{ProjectUUID: "p-1", Name: "bed of p-1", Origin: spatial.LatLon{Lat: 52.28, Lon: 8.02}, Plants: want}); d != "" {
		t.Error(d)
	}
	for method, n := range map[string]int{mDetails: 1, mMeasurement: 2, mInstance: 1, mClass: 1, mTransform: 1} {
		if got := f.callsTo(method); got != n {
			t.Errorf("%s called %d times, want %d", method, got, n)
		}
	}
	c.Close()
	expectNoClientGoroutines(t, base)
}

// TestBedsOneHanging: one bed's server calls hang; Beds delivers the others, complete,
// and the hanging one as ErrUnavailable naming the call, then closes the channel once
// that call's deadline has passed, leaving nothing running on either side.
func TestBedsOneHanging(t *testing.T) {
	ds := demo.Generate(demo.Options{Seed: 7, Beds: 3, Plants: 6})
	uuids := ds.ProjectUUIDs()
	srv := startDemo(t, ds, demo.ServerOptions{})
	srv.SetProjectLatency(uuids[1], time.Hour)
	base := runtime.NumGoroutine()
	c, err := spatial.Dial(spatial.ClientConfig{Addr: srv.Addr(), CallTimeout: faultTimeout, MaxInFlight: 256}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := map[int]spatial.BedResult{}
	for r := range c.Beds(context.Background(), uuids) {
		t.Logf("bed %d after %v: %d plants, err %v", r.Index, time.Since(start).Round(time.Millisecond), len(r.Bed.Plants), r.Err)
		got[r.Index] = r
	}
	took := time.Since(start)
	if took > faultTimeout+faultSlack {
		t.Errorf("channel closed after %v, CallTimeout is %v", took, faultTimeout)
	}
	if len(got) != len(uuids) {
		t.Fatalf("%d results, want %d", len(got), len(uuids))
	}
	for i, r := range got {
		if i == 1 {
			if !errors.Is(r.Err, spatial.ErrUnavailable) || status.Code(r.Err) != codes.DeadlineExceeded ||
				!strings.Contains(r.Err.Error(), "GetProjectDetails of project "+uuids[1]) {
				t.Errorf("hanging bed: %v", r.Err)
			}
			continue
		}
		if r.Err != nil {
			t.Errorf("bed %d: %v", i, r.Err)
			continue
		}
		want, _ := ds.WantBed(uuids[i])
		if d := diffBed(r.Bed, want); d != "" {
			t.Errorf("bed %d: %s", i, d)
		}
	}
	eventually(t, "the server to see the hanging call cancelled", func() bool {
		st := srv.Stats()
		return st.InFlight == 0 && st.Cancelled >= 1
	})
	c.Close()
	expectNoClientGoroutines(t, base)
}
