package seerep_test

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	seerep "github.com/gardend/gardend/proto"
)

// These tests pin the wire contract of spatial-protocol.md through the compiled
// descriptors, so a renumbered field or a renamed RPC fails here before it fails
// against a deployed server.

func TestPackage(t *testing.T) {
	fd := seerep.File_seerep_proto
	if got := fd.Package(); got != "seerep" {
		t.Fatalf("package = %q, want seerep", got)
	}
	if got := fd.Syntax(); got != protoreflect.Proto3 {
		t.Fatalf("syntax = %v, want proto3", got)
	}
	if got := fd.Services().Len(); got != 5 {
		t.Fatalf("services = %d, want 5", got)
	}
	if got := fd.Messages().Len(); got != 28 {
		t.Errorf("top-level messages = %d, want 28", got)
	}
}

func TestMethods(t *testing.T) {
	tests := []struct {
		full                   string
		in, out                string
		clientStream, svStream bool
	}{
		{"/seerep.MetaOperations/GetProjects", "google.protobuf.Empty", "seerep.ProjectInfos", false, false},
		{"/seerep.MetaOperations/GetProjectDetails", "seerep.ProjectQuery", "seerep.ProjectDetails", false, false},
		{"/seerep.TfService/GetFrames", "seerep.FrameQuery", "seerep.FrameInfos", false, false},
		{"/seerep.TfService/GetTransformStamped", "seerep.TransformStampedQuery", "seerep.TransformStamped", false, false},
		{"/seerep.MeasurementService/GetMeasurement", "seerep.Query", "seerep.Measurement", false, true},
		{"/seerep.MeasurementService/GetMeasurementByUUID", "seerep.GeometryQuery", "seerep.Measurement", false, false},
		{"/seerep.LabelService/GetInstance", "seerep.InstanceQuery", "seerep.InstanceInfos", false, false},
		{"/seerep.LabelService/GetClass", "seerep.ClassQuery", "seerep.ClassInfos", false, false},
		{"/seerep.PointCloudService/GetPointCloud2", "seerep.Query", "seerep.PointCloud2", false, true},
		{"/seerep.PointCloudService/GetPointCloud2ByUUID", "seerep.GeometryQuery", "seerep.PointCloud2", false, false},
	}
	found := map[string]protoreflect.MethodDescriptor{}
	svcs := seerep.File_seerep_proto.Services()
	for i := 0; i < svcs.Len(); i++ {
		ms := svcs.Get(i).Methods()
		for j := 0; j < ms.Len(); j++ {
			m := ms.Get(j)
			found["/"+string(svcs.Get(i).FullName())+"/"+string(m.Name())] = m
		}
	}
	if len(found) != len(tests) {
		t.Errorf("got %d methods, want %d", len(found), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.full, func(t *testing.T) {
			m, ok := found[tt.full]
			if !ok {
				t.Fatalf("method missing")
			}
			if got := string(m.Input().FullName()); got != tt.in {
				t.Errorf("input = %s, want %s", got, tt.in)
			}
			if got := string(m.Output().FullName()); got != tt.out {
				t.Errorf("output = %s, want %s", got, tt.out)
			}
			if m.IsStreamingClient() != tt.clientStream || m.IsStreamingServer() != tt.svStream {
				t.Errorf("streaming client=%v server=%v, want %v %v",
					m.IsStreamingClient(), m.IsStreamingServer(), tt.clientStream, tt.svStream)
			}
		})
	}
}

// TestServiceDescs checks the generated grpc descriptors agree with the proto ones:
// they are what the client and server really register and invoke.
func TestServiceDescs(t *testing.T) {
	descs := []struct {
		d       *grpc.ServiceDesc
		name    string
		unary   []string
		streams []string
	}{
		{&seerep.MetaOperations_ServiceDesc, "seerep.MetaOperations", []string{"GetProjects", "GetProjectDetails"}, nil},
		{&seerep.TfService_ServiceDesc, "seerep.TfService", []string{"GetFrames", "GetTransformStamped"}, nil},
		{&seerep.MeasurementService_ServiceDesc, "seerep.MeasurementService", []string{"GetMeasurementByUUID"}, []string{"GetMeasurement"}},
		{&seerep.LabelService_ServiceDesc, "seerep.LabelService", []string{"GetInstance", "GetClass"}, nil},
		{&seerep.PointCloudService_ServiceDesc, "seerep.PointCloudService", []string{"GetPointCloud2ByUUID"}, []string{"GetPointCloud2"}},
	}
	for _, tt := range descs {
		if tt.d.ServiceName != tt.name {
			t.Errorf("ServiceName = %s, want %s", tt.d.ServiceName, tt.name)
		}
		var unary, streams []string
		for _, m := range tt.d.Methods {
			unary = append(unary, m.MethodName)
		}
		for _, s := range tt.d.Streams {
			streams = append(streams, s.StreamName)
			if !s.ServerStreams || s.ClientStreams {
				t.Errorf("%s/%s: want server-streaming only", tt.name, s.StreamName)
			}
		}
		if !sameSet(unary, tt.unary) || !sameSet(streams, tt.streams) {
			t.Errorf("%s: unary %v streams %v, want %v %v", tt.name, unary, streams, tt.unary, tt.streams)
		}
	}
	if seerep.MetaOperations_GetProjectDetails_FullMethodName != "/seerep.MetaOperations/GetProjectDetails" ||
		seerep.TfService_GetTransformStamped_FullMethodName != "/seerep.TfService/GetTransformStamped" ||
		seerep.MeasurementService_GetMeasurementByUUID_FullMethodName != "/seerep.MeasurementService/GetMeasurementByUUID" ||
		seerep.LabelService_GetInstance_FullMethodName != "/seerep.LabelService/GetInstance" ||
		seerep.PointCloudService_GetPointCloud2ByUUID_FullMethodName != "/seerep.PointCloudService/GetPointCloud2ByUUID" {
		t.Error("generated full method name constants differ from the contract")
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

type field struct {
	name  string
	num   protoreflect.FieldNumber
	kind  protoreflect.Kind
	msg   string // full name of the message or enum type, when kind needs one
	list  bool
	isMap bool
	oneof string
}

// TestMessages lists every message field by field; each row is one line of the spec.
func TestMessages(t *testing.T) {
	const (
		str  = protoreflect.StringKind
		dbl  = protoreflect.DoubleKind
		u32  = protoreflect.Uint32Kind
		i64  = protoreflect.Int64Kind
		u64  = protoreflect.Uint64Kind
		bol  = protoreflect.BoolKind
		byt  = protoreflect.BytesKind
		msg  = protoreflect.MessageKind
		enm  = protoreflect.EnumKind
		ts   = "google.protobuf.Timestamp"
		hdr  = "seerep.Header"
		data = "seerep.MeasurementData"
	)
	xyz := []field{{name: "x", num: 1, kind: dbl}, {name: "y", num: 2, kind: dbl}, {name: "z", num: 3, kind: dbl}}
	tests := map[string][]field{
		"ProjectQuery": {{name: "projectuuid", num: 1, kind: str}},
		"ProjectInfo":  {{name: "name", num: 1, kind: str}, {name: "uuid", num: 2, kind: str}},
		"ProjectInfos": {{name: "projects", num: 1, kind: msg, msg: "seerep.ProjectInfo", list: true}},
		"GeodeticPosition": {
			{name: "coordinate_system", num: 1, kind: str}, {name: "ellipsoid", num: 2, kind: str},
			{name: "latitude", num: 3, kind: dbl}, {name: "longitude", num: 4, kind: dbl}, {name: "altitude", num: 5, kind: dbl},
		},
		"GeometryInfo": {
			{name: "name", num: 1, kind: str}, {name: "uuid", num: 2, kind: str}, {name: "type", num: 3, kind: str},
			{name: "frame_id", num: 4, kind: str}, {name: "stamp", num: 5, kind: msg, msg: ts},
			{name: "labels", num: 6, kind: str, list: true},
		},
		"ProjectDetails": {
			{name: "info", num: 1, kind: msg, msg: "seerep.ProjectInfo"},
			{name: "geolocation", num: 2, kind: msg, msg: "seerep.GeodeticPosition"},
			{name: "geometries", num: 3, kind: msg, msg: "seerep.GeometryInfo", list: true},
		},
		"Header": {
			{name: "seq", num: 1, kind: u32}, {name: "stamp", num: 2, kind: msg, msg: ts},
			{name: "frame_id", num: 3, kind: str}, {name: "uuid_project", num: 4, kind: str}, {name: "uuid_msgs", num: 5, kind: str},
		},
		"FrameQuery": {{name: "projectuuid", num: 1, kind: str}},
		"FrameInfos": {{name: "frames", num: 1, kind: str, list: true}},
		"Vector3":    xyz,
		"Quaternion": append(append([]field{}, xyz...), field{name: "w", num: 4, kind: dbl}),
		"Transform": {
			{name: "translation", num: 1, kind: msg, msg: "seerep.Vector3"},
			{name: "rotation", num: 2, kind: msg, msg: "seerep.Quaternion"},
		},
		"TransformStampedQuery": {{name: "header", num: 1, kind: msg, msg: hdr}, {name: "child_frame_id", num: 2, kind: str}},
		"TransformStamped": {
			{name: "header", num: 1, kind: msg, msg: hdr}, {name: "child_frame_id", num: 2, kind: str},
			{name: "transform", num: 3, kind: msg, msg: "seerep.Transform"},
		},
		"GeometryQuery": {{name: "projectuuid", num: 1, kind: str}, {name: "geometryuuid", num: 2, kind: str}},
		"MeasurementData": {
			{name: "double_data", num: 1, kind: dbl, oneof: "data"}, {name: "int64_data", num: 2, kind: i64, oneof: "data"},
			{name: "uint64_data", num: 3, kind: u64, oneof: "data"}, {name: "bool_data", num: 4, kind: bol, oneof: "data"},
			{name: "string_data", num: 5, kind: str, oneof: "data"},
		},
		"Measurement": {
			{name: "header", num: 1, kind: msg, msg: hdr},
			{name: "data", num: 2, kind: msg, isMap: true, msg: data},
			{name: "labels_general", num: 3, kind: str, list: true},
		},
		"InstanceQuery": {{name: "projectuuid", num: 1, kind: str}, {name: "instanceuuid", num: 2, kind: str}},
		"InstanceInfos": {
			{name: "name", num: 1, kind: str}, {name: "uuid", num: 2, kind: str}, {name: "classuuid", num: 3, kind: str},
			{name: "attributes", num: 4, kind: msg, isMap: true, msg: data},
		},
		"ClassQuery": {{name: "projectuuid", num: 1, kind: str}, {name: "classuuid", num: 2, kind: str}},
		"ClassInfos": {
			{name: "name", num: 1, kind: str}, {name: "uuid", num: 2, kind: str},
			{name: "attributes", num: 4, kind: msg, isMap: true, msg: data},
		},
		"Point": xyz,
		"Boundingbox": {
			{name: "header", num: 1, kind: msg, msg: hdr},
			{name: "point_min", num: 2, kind: msg, msg: "seerep.Point"}, {name: "point_max", num: 3, kind: msg, msg: "seerep.Point"},
		},
		"BoundingBoxLabeled": {{name: "label", num: 1, kind: str}, {name: "boundingBox", num: 2, kind: msg, msg: "seerep.Boundingbox"}},
		"TimeInterval": {
			{name: "header", num: 1, kind: msg, msg: hdr}, {name: "time_min", num: 2, kind: i64}, {name: "time_max", num: 3, kind: i64},
		},
		"Query": {
			{name: "boundingbox", num: 1, kind: msg, msg: "seerep.Boundingbox"},
			{name: "timeinterval", num: 2, kind: msg, msg: "seerep.TimeInterval"},
			{name: "label", num: 3, kind: str, list: true}, {name: "projectuuid", num: 4, kind: str},
		},
		"PointField": {
			{name: "name", num: 1, kind: str}, {name: "offset", num: 2, kind: u32},
			{name: "datatype", num: 3, kind: enm, msg: "seerep.PointField.Datatype"}, {name: "count", num: 4, kind: u32},
		},
		"PointCloud2": {
			{name: "header", num: 1, kind: msg, msg: hdr}, {name: "height", num: 2, kind: u32}, {name: "width", num: 3, kind: u32},
			{name: "fields", num: 4, kind: msg, msg: "seerep.PointField", list: true}, {name: "is_bigendian", num: 5, kind: bol},
			{name: "point_step", num: 6, kind: u32}, {name: "row_step", num: 7, kind: u32}, {name: "data", num: 8, kind: byt},
			{name: "is_dense", num: 9, kind: bol}, {name: "labels_general", num: 10, kind: str, list: true},
			{name: "labels_bb", num: 11, kind: msg, msg: "seerep.BoundingBoxLabeled", list: true},
		},
	}
	// Map entry types are nested, so they are not counted among the top-level messages.
	fd := seerep.File_seerep_proto
	if n := fd.Messages().Len(); n != len(tests) {
		t.Errorf("spec lists %d messages, proto has %d", len(tests), n)
	}
	for name, fields := range tests {
		t.Run(name, func(t *testing.T) {
			md := fd.Messages().ByName(protoreflect.Name(name))
			if md == nil {
				t.Fatalf("message %s missing", name)
			}
			if got := md.Fields().Len(); got != len(fields) {
				t.Errorf("%d fields, want %d", got, len(fields))
			}
			for _, f := range fields {
				checkField(t, md, f)
			}
		})
	}
}

func checkField(t *testing.T, md protoreflect.MessageDescriptor, f field) {
	t.Helper()
	fd := md.Fields().ByNumber(f.num)
	if fd == nil {
		t.Errorf("field %d (%s) missing", f.num, f.name)
		return
	}
	if string(fd.Name()) != f.name {
		t.Errorf("field %d named %s, want %s", f.num, fd.Name(), f.name)
	}
	if fd.IsMap() != f.isMap {
		t.Errorf("%s: map=%v, want %v", f.name, fd.IsMap(), f.isMap)
	}
	if f.isMap {
		k, v := fd.MapKey(), fd.MapValue()
		if k.Kind() != protoreflect.StringKind || v.Kind() != protoreflect.MessageKind || string(v.Message().FullName()) != f.msg {
			t.Errorf("%s: map<%v,%v>, want map<string,%s>", f.name, k.Kind(), v.Kind(), f.msg)
		}
		return
	}
	if fd.Kind() != f.kind {
		t.Errorf("%s: kind %v, want %v", f.name, fd.Kind(), f.kind)
	}
	if fd.IsList() != f.list {
		t.Errorf("%s: repeated=%v, want %v", f.name, fd.IsList(), f.list)
	}
	switch f.kind {
	case protoreflect.MessageKind:
		if got := string(fd.Message().FullName()); got != f.msg {
			t.Errorf("%s: type %s, want %s", f.name, got, f.msg)
		}
	case protoreflect.EnumKind:
		if got := string(fd.Enum().FullName()); got != f.msg {
			t.Errorf("%s: enum %s, want %s", f.name, got, f.msg)
		}
	}
	oneof := ""
	if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
		oneof = string(o.Name())
	}
	if oneof != f.oneof {
		t.Errorf("%s: oneof %q, want %q", f.name, oneof, f.oneof)
	}
}

func TestClassInfosHasNoField3(t *testing.T) {
	md := (&seerep.ClassInfos{}).ProtoReflect().Descriptor()
	if md.Fields().ByNumber(3) != nil {
		t.Fatal("ClassInfos must not have a field 3")
	}
}

func TestDatatypeEnum(t *testing.T) {
	want := map[string]protoreflect.EnumNumber{
		"UNSET": 0, "INT8": 1, "UINT8": 2, "INT16": 3, "UINT16": 4,
		"INT32": 5, "UINT32": 6, "FLOAT32": 7, "FLOAT64": 8,
	}
	ed := seerep.PointField_FLOAT32.Descriptor()
	if string(ed.FullName()) != "seerep.PointField.Datatype" {
		t.Fatalf("enum full name %s", ed.FullName())
	}
	if ed.Values().Len() != len(want) {
		t.Errorf("%d values, want %d", ed.Values().Len(), len(want))
	}
	for name, num := range want {
		v := ed.Values().ByName(protoreflect.Name(name))
		if v == nil || v.Number() != num {
			t.Errorf("%s: got %v, want %d", name, v, num)
		}
	}
	if seerep.PointField_FLOAT64 != 8 || seerep.PointField_INT8 != 1 {
		t.Error("generated Go constants differ from the wire values")
	}
}

func TestGoPackage(t *testing.T) {
	opts, ok := seerep.File_seerep_proto.Options().(*descriptorpb.FileOptions)
	if !ok {
		t.Fatal("no file options")
	}
	if got, want := opts.GetGoPackage(), "github.com/gardend/gardend/proto;seerep"; got != want {
		t.Errorf("go_package = %q, want %q", got, want)
	}
	deps := seerep.File_seerep_proto.Imports()
	var paths []string
	for i := 0; i < deps.Len(); i++ {
		paths = append(paths, deps.Get(i).Path())
	}
	if !sameSet(paths, []string{"google/protobuf/empty.proto", "google/protobuf/timestamp.proto"}) {
		t.Errorf("imports = %v", paths)
	}
}
