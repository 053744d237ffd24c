package spatial

import (
	"context"
	"sort"

	"google.golang.org/protobuf/types/known/emptypb"

	seerep "github.com/gardend/gardend/proto"
)

// Project is one project of the spatial server (one bed, once registered).
type Project struct {
	UUID string `json:"uuid"`
	Name string `json:"name"`
}

// Projects lists the spatial server's projects (GetProjects), sorted by name, then
// uuid. It is not cached: it serves administrators choosing a bed to register, who
// expect a project created a moment ago to be there.
func (c *Client) Projects(ctx context.Context) ([]Project, error) {
	var infos seerep.ProjectInfos
	if err := c.invoke(ctx, seerep.MetaOperations_GetProjects_FullMethodName, "",
		"the project list", c.cfg.CallTimeout, &emptypb.Empty{}, &infos); err != nil {
		return nil, err
	}
	out := make([]Project, 0, len(infos.GetProjects()))
	for _, p := range infos.GetProjects() {
		out = append(out, Project{UUID: p.GetUuid(), Name: p.GetName()})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].UUID < out[j].UUID
	})
	return out, nil
}
