package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/cli"
	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
)

// demoGarden serves a small demo garden and registers its projects as beds of garden
// 1 in a seeded data directory; it returns the directory, the spatial address and how
// many clouds can give a position.
func demoGarden(t *testing.T) (dir, addr string, clouds int) {
	t.Helper()
	ds := demo.Generate(demo.Options{Seed: 2, Beds: 2, Plants: 6})
	srv := demo.NewServer(ds, demo.ServerOptions{})
	addr, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	dir = seed(t)
	for _, b := range ds.Beds {
		gardend(t, "--data", dir, "beds", "add", "--garden", "1", "--uuid", b.ProjectUUID)
		for _, p := range b.Plants {
			if p.HasPosition {
				clouds++
			}
		}
	}
	return dir, addr, clouds
}

func inspectBeds(t *testing.T, dir string) []store.BedStatus {
	t.Helper()
	var beds []store.BedStatus
	if err := json.Unmarshal([]byte(gardend(t, "--data", dir, "inspect", "beds", "--json")), &beds); err != nil {
		t.Fatal(err)
	}
	return beds
}

func TestPointCloudsSync(t *testing.T) {
	for _, running := range []bool{false, true} {
		name := map[bool]string{false: "in process", true: "through the running server"}[running]
		t.Run(name, func(t *testing.T) {
			dir, addr, clouds := demoGarden(t)
			args := []string{"--data", dir, "pointclouds", "sync", "--garden", "1"}
			if running {
				serveConfig(t, server.Config{
					DataDir: dir,
					Spatial: spatial.ClientConfig{Addr: addr},
					Logger:  zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
				})
			} else {
				args = append(args, "--spatial", addr)
			}
			out := gardend(t, args...)
			if !strings.Contains(out, "] "+strconv.Itoa(clouds)+"/"+strconv.Itoa(clouds)+" clouds") ||
				!strings.Contains(out, strconv.Itoa(clouds)+" of "+strconv.Itoa(clouds)+" point clouds fetched, 0 failed") {
				t.Fatalf("sync output:\n%s", out)
			}
			positions := 0
			for _, b := range inspectBeds(t, dir) {
				positions += b.Positions
				if b.Queued+b.Failed != 0 {
					t.Errorf("bed %d: %d queued, %d failed", b.ID, b.Queued, b.Failed)
				}
			}
			if positions != clouds {
				t.Errorf("%d positions stored, want %d", positions, clouds)
			}
			matches, _ := filepath.Glob(filepath.Join(dir, pointcloud.DirName, "*", "*.ply"))
			if len(matches) != clouds {
				t.Errorf("%d PLY files, want %d", len(matches), clouds)
			}
			// Nothing left to do the second time.
			if out := gardend(t, args...); !strings.Contains(out, "no point cloud is missing") {
				t.Errorf("second sync:\n%s", out)
			}
			if out := gardend(t, "--data", dir, "inspect", "queue"); !strings.HasPrefix(out, "PROJECT") {
				t.Errorf("inspect queue:\n%s", out)
			}
		})
	}
}

func TestPointCloudsSyncNeedsASpatialServer(t *testing.T) {
	dir := seed(t)
	_, err := run(t, "", "--data", dir, "pointclouds", "sync")
	if err == nil || !strings.Contains(err.Error(), "--spatial") {
		t.Fatalf("sync without a spatial server: %v", err)
	}
}

// TestSpatialDemoCommand: the standalone demo server prints the project uuids of the
// dataset its flags describe, serves them, and stops on cancellation.
func TestSpatialDemoCommand(t *testing.T) {
	pr, pw := io.Pipe()
	cmd := cli.NewRootCommand()
	cmd.SetOut(pw)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"spatial-demo", "--addr", "127.0.0.1:0", "--seed", "4", "--beds", "2", "--plants", "5", "--latency", "1ms"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- cmd.ExecuteContext(ctx)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var addr string
	var uuids []string
	for len(uuids) < 2 && sc.Scan() {
		line := sc.Text()
		if a, ok := strings.CutPrefix(line, "demo spatial server on "); ok {
			addr, _, _ = strings.Cut(a, " ")
		}
		if u, _, ok := strings.Cut(line, "\t"); ok {
			uuids = append(uuids, u)
		}
	}
	want := demo.Generate(demo.Options{Seed: 4, Beds: 2, Plants: 5}).ProjectUUIDs()
	if addr == "" || strings.Join(uuids, ",") != strings.Join(want, ",") {
		t.Fatalf("address %q, uuids %v, want %v", addr, uuids, want)
	}
	c, err := spatial.Dial(spatial.ClientConfig{Addr: addr}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bed, err := c.Bed(context.Background(), uuids[1])
	if err != nil || len(bed.Plants) != 5 {
		t.Fatalf("bed from the demo server: %d plants, %v", len(bed.Plants), err)
	}
	cancel()
	go io.Copy(io.Discard, pr)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("spatial-demo did not stop")
	}
}

func TestServeRejectsBadSpatialFlags(t *testing.T) {
	for args, want := range map[string]string{
		"--spatial-concurrency 0": "--spatial-concurrency",
		"--spatial-timeout 0s":    "--spatial-timeout",
		"--spatial-cache-ttl -1s": "--spatial-cache-ttl",
		"--pointcloud-workers 0":  "--pointcloud-workers",
	} {
		_, err := run(t, "", append([]string{"serve", "--data", t.TempDir()}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", args, err)
		}
	}
	t.Setenv("GARDEND_SPATIAL_CONCURRENCY", "0")
	if _, err := run(t, "", "serve", "--data", t.TempDir()); err == nil || !strings.Contains(err.Error(), "--spatial-concurrency") {
		t.Errorf("GARDEND_SPATIAL_CONCURRENCY=0: %v", err)
	}
}

// runBoth executes the CLI and returns standard output, standard error and the error.
func runBoth(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := cli.NewRootCommand()
	var out, errOut strings.Builder
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// closedAddr is a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestPointCloudsSyncReportsUnreadableBeds: a sync that could not read a bed says so
// and fails, in process and through the running server, instead of a full 0/0 bar,
// "no point cloud is missing" and exit status 0 (issue 11, bug 1).
func TestPointCloudsSyncReportsUnreadableBeds(t *testing.T) {
	for _, running := range []bool{false, true} {
		name := map[bool]string{false: "in process", true: "through the running server"}[running]
		t.Run(name, func(t *testing.T) {
			dir, _, _ := demoGarden(t)
			down := closedAddr(t)
			args := []string{"--data", dir, "pointclouds", "sync"}
			if running {
				serveConfig(t, server.Config{
					DataDir: dir,
					Spatial: spatial.ClientConfig{Addr: down},
					Logger:  zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel),
				})
			} else {
				args = append(args, "--spatial", down)
			}
			stdout, stderr, err := runBoth(t, args...)
			if err == nil || !strings.Contains(err.Error(), "2 of 2 beds could not be read") {
				t.Fatalf("sync against a server that is down: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
			}
			if strings.Count(stderr, "warning: project ") != 2 || strings.Contains(stderr, "0/0 clouds") ||
				strings.Contains(stdout, "no point cloud is missing") {
				t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
		})
	}
}

// TestPointCloudsSyncPartlyUnreadable: the beds that could be read are synced and
// reported; the one that could not still fails the command.
func TestPointCloudsSyncPartlyUnreadable(t *testing.T) {
	dir, addr, clouds := demoGarden(t)
	gardend(t, "--data", dir, "beds", "add", "--garden", "1", "--uuid", "3fa85f64-5717-4562-b3fc-2c963f66afa6", "--name", "unknown to the server")
	stdout, stderr, err := runBoth(t, "--data", dir, "pointclouds", "sync", "--spatial", addr)
	if err == nil || !strings.Contains(err.Error(), "1 of 3 beds could not be read") ||
		!strings.Contains(stdout, strconv.Itoa(clouds)+" of "+strconv.Itoa(clouds)+" point clouds fetched") ||
		!strings.Contains(stderr, "warning: project 3fa85f64-5717-4562-b3fc-2c963f66afa6") {
		t.Fatalf("error %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
}
