package spatial_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gardend/gardend/spatial"
)

// Whatever the status, the message users see is fixed text: the server's own words
// (which may hold hosts, credentials, paths) stay in Upstream, for the log.
func TestCallErrorMessageIsFixedPerStatus(t *testing.T) {
	const upstream = "secret at 10.1.2.3:5432 password=hunter2 /etc/seerep\r\n"
	want := map[codes.Code]string{
		codes.Unavailable:       "spatial server unavailable",
		codes.DeadlineExceeded:  "spatial server unavailable: no answer within 0s",
		codes.NotFound:          "not found on the spatial server",
		codes.Canceled:          "the spatial server cancelled the call",
		codes.InvalidArgument:   "the spatial server rejected the request (InvalidArgument)",
		codes.PermissionDenied:  "the spatial server refused gardend's request (PermissionDenied): check its credentials",
		codes.Unauthenticated:   "the spatial server refused gardend's request (Unauthenticated): check its credentials",
		codes.ResourceExhausted: "the spatial server is out of resources (ResourceExhausted)",
		codes.Unimplemented:     "the spatial server does not implement this call (Unimplemented)",
		codes.Internal:          "spatial server error (Internal)",
		codes.Unknown:           "spatial server error (Unknown)",
		codes.DataLoss:          "spatial server error (DataLoss)",
	}
	for code, text := range want {
		e := &spatial.CallError{Method: "/seerep.LabelService/GetClass", Project: "p-1", Target: "class c-9 of project p-1",
			Code: code, Err: status.Error(code, upstream)}
		if got, w := e.Error(), "spatial: GetClass of project p-1: "+text; got != w {
			t.Errorf("%v: %q, want %q", code, got, w)
		}
		if e.Upstream() != upstream || strings.Contains(e.Error(), "hunter2") {
			t.Errorf("%v: upstream %q, message %q", code, e.Upstream(), e.Error())
		}
	}
}
