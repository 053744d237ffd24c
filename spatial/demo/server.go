package demo

import (
	"context"
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	seerep "github.com/gardend/gardend/proto"
)

// ServerOptions shape the demo server's behaviour.
type ServerOptions struct {
	// Latency is added to every call (the call gives up early when cancelled).
	Latency time.Duration
	// FailRate is the fraction of calls answered codes.Unavailable, after the latency.
	FailRate float64
	// Seed drives the failure draws.
	Seed int64
	// TLS, when set, makes the server speak TLS.
	TLS *tls.Config
}

// Server serves a Dataset over the five seerep services.
type Server struct {
	ds   *Dataset
	beds map[string]*Bed
	grpc *grpc.Server

	mu          sync.Mutex
	latency     time.Duration
	failRate    float64
	rng         *rand.Rand
	projLatency map[string]time.Duration
	projFail    map[string]codes.Code
	hook        func(method, project string) (time.Duration, error)
	addr        net.Addr
	stats       ServerStats
}

// ServerStats counts what the server saw.
type ServerStats struct {
	// Calls per full method name, e.g. "/seerep.LabelService/GetClass".
	Calls map[string]int64
	// InFlight is the number of calls being handled now; MaxInFlight the most at once.
	InFlight, MaxInFlight int
	// Cancelled counts calls the client cancelled, or whose deadline passed, while
	// they were being handled.
	Cancelled int64
	// Injected counts failures injected by FailRate or FailProject.
	Injected int64
}

// NewServer makes a server for ds; it does not listen until Serve or Start.
func NewServer(ds *Dataset, so ServerOptions) *Server {
	s := &Server{
		ds:          ds,
		beds:        map[string]*Bed{},
		latency:     so.Latency,
		failRate:    so.FailRate,
		rng:         rand.New(rand.NewPCG(uint64(so.Seed), 0xfa11)),
		projLatency: map[string]time.Duration{},
		projFail:    map[string]codes.Code{},
		stats:       ServerStats{Calls: map[string]int64{}},
	}
	for i := range ds.Beds {
		s.beds[ds.Beds[i].ProjectUUID] = &ds.Beds[i]
	}
	opts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(s.unaryStats),
		grpc.ChainStreamInterceptor(s.streamStats),
	}
	if so.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(so.TLS)))
	}
	s.grpc = grpc.NewServer(opts...)
	seerep.RegisterMetaOperationsServer(s.grpc, metaService{s: s})
	seerep.RegisterTfServiceServer(s.grpc, tfService{s: s})
	seerep.RegisterMeasurementServiceServer(s.grpc, measurementService{s: s})
	seerep.RegisterLabelServiceServer(s.grpc, labelService{s: s})
	seerep.RegisterPointCloudServiceServer(s.grpc, pointCloudService{s: s})
	return s
}

// Serve serves on l until Stop; it returns nil after Stop.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	s.addr = l.Addr()
	s.mu.Unlock()
	if err := s.grpc.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// Start listens on addr ("127.0.0.1:0" for any free port) and serves in the
// background; it returns the address it listens on.
func (s *Server) Start(addr string) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.addr = l.Addr()
	s.mu.Unlock()
	go s.Serve(l) //nolint:errcheck // Serve only fails when the listener does, after Stop
	return l.Addr().String(), nil
}

// Addr is the address being served, or "" before Serve or Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addr == nil {
		return ""
	}
	return s.addr.String()
}

// Stop closes the listener and every connection at once, cancelling calls in flight.
func (s *Server) Stop() { s.grpc.Stop() }

// SetLatency changes the latency of every later call.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	s.latency = d
	s.mu.Unlock()
}

// SetFailRate changes the fraction of later calls that fail with codes.Unavailable.
func (s *Server) SetFailRate(r float64) {
	s.mu.Lock()
	s.failRate = r
	s.mu.Unlock()
}

// SetProjectLatency adds d to every later call about the project (on top of Latency);
// 0 removes it.
func (s *Server) SetProjectLatency(projectUUID string, d time.Duration) {
	s.mu.Lock()
	if d == 0 {
		delete(s.projLatency, projectUUID)
	} else {
		s.projLatency[projectUUID] = d
	}
	s.mu.Unlock()
}

// FailProject makes every later call about the project fail with code; codes.OK
// clears it.
func (s *Server) FailProject(projectUUID string, code codes.Code) {
	s.mu.Lock()
	if code == codes.OK {
		delete(s.projFail, projectUUID)
	} else {
		s.projFail[projectUUID] = code
	}
	s.mu.Unlock()
}

// SetHook installs f (nil removes it), called at the start of every later call with
// the call's full method name and project: a non-nil error fails the call at once,
// a positive delay adds to its latency. Tests use it to single out one method.
func (s *Server) SetHook(f func(method, project string) (time.Duration, error)) {
	s.mu.Lock()
	s.hook = f
	s.mu.Unlock()
}

// SetBed replaces the bed of b's project (or adds it) for every later call, as a robot
// uploading a new scan would: calls already running keep the bed they started with.
// b must not be changed afterwards. GetProjects keeps listing the dataset's beds.
func (s *Server) SetBed(b Bed) {
	s.mu.Lock()
	s.beds[b.ProjectUUID] = &b
	s.mu.Unlock()
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() ServerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Calls = make(map[string]int64, len(s.stats.Calls))
	for k, v := range s.stats.Calls {
		st.Calls[k] = v
	}
	return st
}

// ResetStats zeroes the counters (InFlight keeps counting the calls still running).
func (s *Server) ResetStats() {
	s.mu.Lock()
	s.stats = ServerStats{Calls: map[string]int64{}, InFlight: s.stats.InFlight, MaxInFlight: s.stats.InFlight}
	s.mu.Unlock()
}

func (s *Server) enter(method string) {
	s.mu.Lock()
	s.stats.Calls[method]++
	s.stats.InFlight++
	s.stats.MaxInFlight = max(s.stats.MaxInFlight, s.stats.InFlight)
	s.mu.Unlock()
}

func (s *Server) leave(ctx context.Context, err error) {
	s.mu.Lock()
	s.stats.InFlight--
	if err != nil && ctx.Err() != nil {
		s.stats.Cancelled++
	}
	s.mu.Unlock()
}

func (s *Server) unaryStats(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	s.enter(info.FullMethod)
	resp, err := h(ctx, req)
	s.leave(ctx, err)
	return resp, err
}

func (s *Server) streamStats(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	s.enter(info.FullMethod)
	err := h(srv, ss)
	s.leave(ss.Context(), err)
	return err
}

// inject delays a call about project and may fail it, as configured. The delay ends
// early when the client cancels.
func (s *Server) inject(ctx context.Context, project string) error {
	s.mu.Lock()
	d := s.latency + s.projLatency[project]
	fail := s.projFail[project]
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		method, _ := grpc.Method(ctx)
		extra, err := hook(method, project)
		if err != nil {
			return err
		}
		d += extra
	}
	s.mu.Lock()
	if fail == codes.OK && s.failRate > 0 && s.rng.Float64() < s.failRate {
		fail = codes.Unavailable
	}
	s.mu.Unlock()
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	if fail != codes.OK {
		s.mu.Lock()
		s.stats.Injected++
		s.mu.Unlock()
		return status.Errorf(fail, "injected failure for project %s", project)
	}
	return nil
}

// project starts a call about a project: it delays and may fail it as configured
// (inject), then finds the project's bed or answers NotFound.
func (s *Server) project(ctx context.Context, project string) (*Bed, error) {
	if err := s.inject(ctx, project); err != nil {
		return nil, err
	}
	s.mu.Lock()
	b := s.beds[project]
	s.mu.Unlock()
	if b == nil {
		return nil, status.Errorf(codes.NotFound, "project %q not found", project)
	}
	return b, nil
}
