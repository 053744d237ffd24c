package server

import "github.com/gardend/gardend/spatial/demo"

// DemoSpatialServer is the in-process demo spatial server of Config.Demo (nil
// without it), for tests that slow down or fail some of its projects.
func (s *Server) DemoSpatialServer() *demo.Server {
	if s.demo == nil {
		return nil
	}
	return s.demo.srv
}
