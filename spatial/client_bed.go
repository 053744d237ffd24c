package spatial

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	seerep "github.com/gardend/gardend/proto"
)

// Geometry types of spatial-protocol.md; other types are ignored.
const (
	typeMeasurement = "measurement"
	typePointCloud  = "pointcloud"
	frameMap        = "map"
)

// Bed reads one bed (spatial-server project) with all its plants. It costs about two
// round trips when nothing is cached: the project's details, then every measurement,
// instance, class and transform at once (classes and transforms once per bed, as
// plants share them). A measurement, instance, class or transform the server does not
// know leaves the plant's values missing; any other failed call fails the bed.
func (c *Client) Bed(ctx context.Context, projectUUID string) (Bed, error) {
	start := time.Now()
	details, err := fetch(c, ctx, "details\x00"+projectUUID, seerep.MetaOperations_GetProjectDetails_FullMethodName,
		"of project "+projectUUID, &seerep.ProjectQuery{Projectuuid: projectUUID}, newMsg[seerep.ProjectDetails])
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

	f := bedFetch{c: c, project: projectUUID}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.cancel = cancel
	classes := map[string]*seerep.ClassInfos{}
	transforms := map[string]*Transform{}
	for i := range plants {
		f.spawn(ctx, func(ctx context.Context) error {
			return f.measurement(ctx, &plants[i], labels[i])
		})
	}
	// Distinct classes and frames only: many plants share them.
	for _, uuid := range classUUIDs {
		f.spawn(ctx, func(ctx context.Context) error {
			cl, err := f.class(ctx, uuid)
			f.mu.Lock()
			classes[uuid] = cl
			f.mu.Unlock()
			return err
		})
	}
	for _, frame := range frames {
		f.spawn(ctx, func(ctx context.Context) error {
			tf, err := f.transform(ctx, frame)
			f.mu.Lock()
			transforms[frame] = tf
			f.mu.Unlock()
			return err
		})
	}
	f.wg.Wait()
	if f.err != nil {
		return Bed{}, f.err
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
// plant's measurement labels beside it.
func plantsOf(d *seerep.ProjectDetails) ([]Plant, [][]string) {
	type pair struct{ m, pc *seerep.GeometryInfo }
	byName := map[string]*pair{}
	var names []string
	for _, g := range d.GetGeometries() {
		var slot **seerep.GeometryInfo
		p := byName[g.GetName()]
		if p == nil {
			p = &pair{}
			byName[g.GetName()] = p
			names = append(names, g.GetName())
		}
		switch g.GetType() {
		case typeMeasurement:
			slot = &p.m
		case typePointCloud:
			slot = &p.pc
		default:
			continue
		}
		// The first geometry of a type wins; a server should not send two.
		if *slot == nil {
			*slot = g
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
		pl := Plant{Name: n, ID: p.m.GetUuid()}
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
		if p.Cloud == nil || p.Cloud.FrameID == "" || p.Cloud.FrameID == frameMap || seen[p.Cloud.FrameID] {
			continue
		}
		seen[p.Cloud.FrameID] = true
		out = append(out, p.Cloud.FrameID)
	}
	return out
}

// bedFetch runs one bed's second round of calls concurrently; the first real failure
// cancels the rest.
type bedFetch struct {
	c       *Client
	project string
	wg      sync.WaitGroup
	mu      sync.Mutex
	err     error
	cancel  context.CancelFunc
}

func (f *bedFetch) spawn(ctx context.Context, fn func(context.Context) error) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		if err := fn(ctx); err != nil {
			f.mu.Lock()
			if f.err == nil {
				f.err = err
				f.cancel()
			}
			f.mu.Unlock()
		}
	}()
}

// missing reports whether err only means the server does not know the uuid, which
// leaves values missing instead of failing the bed.
func (f *bedFetch) missing(err error) bool {
	if errors.Is(err, ErrNotFound) {
		f.c.log.Debug().Err(err).Msg("spatial object missing; its values stay empty")
		return true
	}
	return false
}

// measurement fetches a plant's measurement and instance (in parallel) into p.
func (f *bedFetch) measurement(ctx context.Context, p *Plant, labels []string) error {
	var wg sync.WaitGroup
	var instErr error
	var inst *seerep.InstanceInfos
	if u := label(labels, 0); u != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, instErr = fetch(f.c, ctx, "instance\x00"+f.project+"\x00"+u,
				seerep.LabelService_GetInstance_FullMethodName, "instance "+u+" of project "+f.project,
				&seerep.InstanceQuery{Projectuuid: f.project, Instanceuuid: u}, newMsg[seerep.InstanceInfos])
		}()
	}
	m, err := fetch(f.c, ctx, "measurement\x00"+f.project+"\x00"+p.ID,
		seerep.MeasurementService_GetMeasurementByUUID_FullMethodName, "measurement "+p.ID+" of project "+f.project,
		&seerep.GeometryQuery{Projectuuid: f.project, Geometryuuid: p.ID}, newMsg[seerep.Measurement])
	wg.Wait()
	switch {
	case err == nil:
		applyMeasurement(p, m)
	case !f.missing(err):
		return err
	}
	switch {
	case inst != nil && instErr == nil:
		applyInstance(p, inst)
	case instErr != nil && !f.missing(instErr):
		return instErr
	}
	return nil
}

func (f *bedFetch) class(ctx context.Context, uuid string) (*seerep.ClassInfos, error) {
	cl, err := fetch(f.c, ctx, "class\x00"+f.project+"\x00"+uuid,
		seerep.LabelService_GetClass_FullMethodName, "class "+uuid+" of project "+f.project,
		&seerep.ClassQuery{Projectuuid: f.project, Classuuid: uuid}, newMsg[seerep.ClassInfos])
	if err != nil && f.missing(err) {
		return nil, nil
	}
	return cl, err
}

func (f *bedFetch) transform(ctx context.Context, frame string) (*Transform, error) {
	ts, err := fetch(f.c, ctx, "transform\x00"+f.project+"\x00"+frame,
		seerep.TfService_GetTransformStamped_FullMethodName, "from frame "+frame+" to map of project "+f.project,
		&seerep.TransformStampedQuery{
			Header:       &seerep.Header{FrameId: frameMap, UuidProject: f.project},
			ChildFrameId: frame,
		}, newMsg[seerep.TransformStamped])
	if err != nil {
		if f.missing(err) {
			return nil, nil
		}
		return nil, err
	}
	return convertTransform(ts), nil
}
