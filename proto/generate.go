// Package seerep holds the generated Go code for the spatial data server's gRPC wire
// contract (seerep.proto). Only package spatial imports it.
//
// Regenerate with `go generate ./proto/` after editing seerep.proto; never edit the
// .pb.go files by hand. Needs protoc, protoc-gen-go v1.36.12 and protoc-gen-go-grpc
// v1.6.2 on PATH (the versions recorded in the generated headers).
package seerep

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative seerep.proto
