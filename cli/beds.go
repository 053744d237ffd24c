package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gardend/gardend/server"
)

func newBedsCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "beds",
		Short: "Register and remove beds of gardens (works while serve is running)",
	}
	cmd.AddCommand(newBedsAddCommand(g), newBedsRemoveCommand(g))
	return cmd
}

type bedsAddOptions struct {
	global *globalOptions
	garden uint64
	uuid   string
	name   string
}

func newBedsAddCommand(g *globalOptions) *cobra.Command {
	o := &bedsAddOptions{global: g}
	cmd := &cobra.Command{
		Use:     "add",
		Short:   "Register a spatial-server project as a bed of a garden",
		Example: `  gardend beds add --garden 3 --uuid 3fa85f64-5717-4562-b3fc-2c963f66afa6 --name "north bed"`,
		Args:    cobra.NoArgs,
		RunE:    o.run,
	}
	f := cmd.Flags()
	f.Uint64Var(&o.garden, "garden", 0, "garden id (see gardend inspect gardens)")
	f.StringVar(&o.uuid, "uuid", "", "project uuid on the spatial data server")
	f.StringVar(&o.name, "name", "", "bed name (optional)")
	requireFlags(cmd, "garden", "uuid")
	return cmd
}

func (o *bedsAddOptions) run(cmd *cobra.Command, _ []string) error {
	if err := requireDatabase(o.global); err != nil {
		return err
	}
	b, err := adminCall(cmd.Context(), o.global, server.BedsAdd{Garden: o.garden, UUID: o.uuid, Name: o.name})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "added bed %d (project %s) to garden %d\n", b.ID, b.UUID, o.garden)
	return err
}

type bedsRemoveOptions struct {
	global *globalOptions
	garden uint64
	bed    uint64
}

func newBedsRemoveCommand(g *globalOptions) *cobra.Command {
	o := &bedsRemoveOptions{global: g}
	cmd := &cobra.Command{
		Use:     "remove",
		Short:   "Remove a bed of a garden",
		Example: `  gardend beds remove --garden 3 --bed 12`,
		Args:    cobra.NoArgs,
		RunE:    o.run,
	}
	f := cmd.Flags()
	f.Uint64Var(&o.garden, "garden", 0, "garden id")
	f.Uint64Var(&o.bed, "bed", 0, "bed id")
	requireFlags(cmd, "garden", "bed")
	return cmd
}

func (o *bedsRemoveOptions) run(cmd *cobra.Command, _ []string) error {
	if err := requireDatabase(o.global); err != nil {
		return err
	}
	if _, err := adminCall(cmd.Context(), o.global, server.BedsRemove{Garden: o.garden, Bed: o.bed}); err != nil {
		return err
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "removed bed %d of garden %d\n", o.bed, o.garden)
	return err
}
