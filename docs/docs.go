// Package docs embeds the API description so the server can serve it and tests can
// check it against the routes.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml, an OpenAPI 3.1 document of every endpoint.
//
//go:embed openapi.yaml
var OpenAPI []byte
