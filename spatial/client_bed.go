package spatial

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	seerep "github.com/gardend/gardend/proto"
)

// Geometry types of spatial-protocol.md; other types are ignored.
const (
	typeMeasurement = "measurement"
	typePointCloud  = "pointcloud"
)

// The calls a bed is read with (spatial-protocol.md). Details take no id.
var (
	callDetails = cachedCall[*seerep.ProjectDetails]{
		kind: "details", method: seerep.MetaOperations_GetProjectDetails_FullMethodName,
		target: func(project, _ string) string { return "of project " + project },
		request: func(project, _ string) proto.Message {
			return &seerep.ProjectQuery{Projectuuid: project}
		},
		newResp: newMsg[seerep.ProjectDetails],
	}
	callMeasurement = cachedCall[*seerep.Measurement]{
		kind: "measurement", method: seerep.MeasurementService_GetMeasurementByUUID_FullMethodName,
		target: func(project, id string) string { return "measurement " + id + " of project " + project },
		request: func(project, id string) proto.Message {
			return &seerep.GeometryQuery{Projectuuid: project, Geometryuuid: id}
		},
		newResp: newMsg[seerep.Measurement],
	}
	callInstance = cachedCall[*seerep.InstanceInfos]{
		kind: "instance", method: seerep.LabelService_GetInstance_FullMethodName,
		target: func(project, id string) string { return "instance " + id + " of project " + project },
		request: func(project, id string) proto.Message {
			return &seerep.InstanceQuery{Projectuuid: project, Instanceuuid: id}
		},
		newResp: newMsg[seerep.InstanceInfos],
	}
	callClass = cachedCall[*seerep.ClassInfos]{
		kind: "class", method: seerep.LabelService_GetClass_FullMethodName,
		target: func(project, id string) string { return "class " + id + " of project " + project },
		request: func(project, id string) proto.Message {
			return &seerep.ClassQuery{Projectuuid: project, Classuuid: id}
		},
		newResp: newMsg[seerep.ClassInfos],
	}
	callTransform = cachedCall[*seerep.TransformStamped]{
		kind: "transform", method: seerep.TfService_GetTransformStamped_FullMethodName,
		target: func(project, frame string) string { return "from frame " + frame + " to map of project " + project },
		request: func(project, frame string) proto.Message {
			return &seerep.TransformStampedQuery{
				Header:       &seerep.Header{FrameId: MapFrame, UuidProject: project},
				ChildFrameId: frame,
			}
		},
		newResp: newMsg[seerep.TransformStamped],
	}
)

// Bed reads one bed (spatial-server project) with all its plants. It costs about two
// round trips when nothing is cached: the project's details, then every measurement,
// instance, class and transform at once (classes and transforms once per bed, as
// plants share them). A measurement, instance, class or transform the server does not
// know leaves the plant's values missing; any other failed call fails the bed.
func (c *Client) Bed(ctx context.Context, projectUUID string) (Bed, error) {
	start := time.Now()
	details, err := callDetails.fetch(c, ctx, projectUUID, "")
	if err != nil {
		return Bed{}, err
	}
	bed := Bed{
		ProjectUUID: projectUUID,
		Name:        details.GetInfo().GetName(),
		Origin:      LatLon{Lat: details.GetGeolocation().GetLatitude(), Lon: details.GetGeolocation().GetLongitude()},
	}
	if details.GetGeolocation() == nil {
		c.log.Warn().Str("project", projectUUID).Msg("project has no geolocation; bed origin is 0,0")
	}
	plants, labels := plantsOf(details)
	// Worked out before any goroutine writes into plants.
	classUUIDs, frames := distinct(labels, 1), framesOf(plants)

	// The first real failure cancels the rest.
	g, ctx := errgroup.WithContext(ctx)
	f := bedFetch{c: c, project: projectUUID}
	for i := range plants {
		p := &plants[i]
		g.Go(func() error { return f.measurement(ctx, p) })
		if u := label(labels[i], 0); u != "" {
			g.Go(func() error { return f.instance(ctx, p, u) })
		}
	}
	// Distinct classes and frames only: many plants share them.
	classes := fetchEach(g, ctx, classUUIDs, f.class)
	transforms := fetchEach(g, ctx, frames, f.transform)
	if err := g.Wait(); err != nil {
		return Bed{}, err
	}
	for i := range plants {
		p := &plants[i]
		if cl := classes[label(labels[i], 1)]; cl != nil {
			applyClass(p, cl)
		}
		if p.Cloud != nil {
			p.Cloud.Transform = transforms[p.Cloud.FrameID]
		}
	}
	bed.Plants = plants
	c.log.Debug().Str("project", projectUUID).Int("plants", len(plants)).
		Dur("took", time.Since(start)).Msg("bed read")
	return bed, nil
}

func newMsg[T any]() *T { return new(T) }

// plantsOf pairs the details' geometries into plants, sorted by name, and returns each
// plant's measurement labels beside it. Of several measurement geometries of one
// name, the oldest by stamp gives the plant's id and the newest its values (and
// labels); of several point clouds, the newest is the plant's. Among equal stamps
// the first listed wins.
func plantsOf(d *seerep.ProjectDetails) ([]Plant, [][]string) {
	type pair struct{ first, m, pc *seerep.GeometryInfo }
	byName := map[string]*pair{}
	var names []string
	stamp := func(g *seerep.GeometryInfo) time.Time {
		if g.GetStamp() == nil {
			return time.Time{}
		}
		return g.GetStamp().AsTime()
	}
	for _, g := range d.GetGeometries() {
		p := byName[g.GetName()]
		if p == nil {
			p = &pair{}
			byName[g.GetName()] = p
			names = append(names, g.GetName())
		}
		switch g.GetType() {
		case typeMeasurement:
			if p.first == nil || stamp(g).Before(stamp(p.first)) {
				p.first = g
			}
			if p.m == nil || stamp(g).After(stamp(p.m)) {
				p.m = g
			}
		case typePointCloud:
			if p.pc == nil || stamp(g).After(stamp(p.pc)) {
				p.pc = g
			}
		}
	}
	// Byte-wise order, as "plant name order" is defined.
	sort.Strings(names)
	plants := make([]Plant, 0, len(names))
	labels := make([][]string, 0, len(names))
	for _, n := range names {
		p := byName[n]
		if p.m == nil {
			continue // a cloud without a measurement is not a plant
		}
		pl := Plant{Name: n, ID: p.first.GetUuid(), Measurement: p.m.GetUuid(), MeasuredAt: stamp(p.m)}
		if p.pc != nil {
			pl.Cloud = &CloudRef{UUID: p.pc.GetUuid(), FrameID: p.pc.GetFrameId()}
		}
		plants = append(plants, pl)
		labels = append(labels, p.m.GetLabels())
	}
	return plants, labels
}

// label returns labels[i], or "" when there is none.
func label(labels []string, i int) string {
	if i < len(labels) {
		return labels[i]
	}
	return ""
}

// distinct returns the distinct non-empty labels[i] over all plants, in first-seen order.
func distinct(labels [][]string, i int) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range labels {
		if u := label(l, i); u != "" && !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// framesOf returns the distinct cloud frames that need a transform: "map" is the
// target itself and an empty frame names nothing.
func framesOf(plants []Plant) []string {
	seen := map[string]bool{}
	var out []string
	for i := range plants {
		p := &plants[i]
		if p.Cloud == nil || p.Cloud.FrameID == "" || p.Cloud.FrameID == MapFrame || seen[p.Cloud.FrameID] {
			continue
		}
		seen[p.Cloud.FrameID] = true
		out = append(out, p.Cloud.FrameID)
	}
	return out
}

// bedFetch makes one bed's second round of calls (Bed runs them concurrently).
type bedFetch struct {
	c       *Client
	project string
}

// fetchEach runs get for every key in g, collecting the answers by key; the map is
// complete once g.Wait returns.
func fetchEach[T any](g *errgroup.Group, ctx context.Context, keys []string, get func(context.Context, string) (T, error)) map[string]T {
	out := make(map[string]T, len(keys))
	var mu sync.Mutex
	for _, k := range keys {
		g.Go(func() error {
			v, err := get(ctx, k)
			mu.Lock()
			out[k] = v
			mu.Unlock()
			return err
		})
	}
	return out
}

// tolerate drops err when it only means the server does not know the uuid, which
// leaves values missing instead of failing the bed.
func (f *bedFetch) tolerate(err error) error {
	if errors.Is(err, ErrNotFound) {
		f.c.log.Debug().Err(err).Msg("spatial object missing; its values stay empty")
		return nil
	}
	return err
}

// measurement fetches a plant's measurement into p.
func (f *bedFetch) measurement(ctx context.Context, p *Plant) error {
	// A robot may update a measurement in place (the same uuid, a newer stamp): the
	// stamp is part of the cache key, so the new values are read at once.
	version := ""
	if !p.MeasuredAt.IsZero() {
		version = strconv.FormatInt(p.MeasuredAt.UnixNano(), 10)
	}
	m, err := callMeasurement.fetchVersion(f.c, ctx, f.project, p.Measurement, version)
	if err == nil {
		applyMeasurement(p, m)
	}
	return f.tolerate(err)
}

// instance fetches a plant's instance into p. It runs beside measurement, which
// writes other fields of p.
func (f *bedFetch) instance(ctx context.Context, p *Plant, uuid string) error {
	in, err := callInstance.fetch(f.c, ctx, f.project, uuid)
	if err == nil {
		applyInstance(p, in)
	}
	return f.tolerate(err)
}

func (f *bedFetch) class(ctx context.Context, uuid string) (*seerep.ClassInfos, error) {
	cl, err := callClass.fetch(f.c, ctx, f.project, uuid)
	return cl, f.tolerate(err)
}

func (f *bedFetch) transform(ctx context.Context, frame string) (*Transform, error) {
	ts, err := callTransform.fetch(f.c, ctx, f.project, frame)
	if err != nil {
		return nil, f.tolerate(err)
	}
	return convertTransform(ts), nil
}

// IsUnknownProject reports whether err says the spatial server does not know a bed's
// project: its details answered NotFound. (Bed tolerates NotFound for the objects
// inside a project; only the details' NotFound fails a bed.)
func IsUnknownProject(err error) bool {
	var ce *CallError
	return errors.As(err, &ce) && ce.Code == codes.NotFound &&
		ce.Method == seerep.MetaOperations_GetProjectDetails_FullMethodName
}
