package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Configuration flags are what an installation sets once: serve's flags, --data, and
// the spatial server flags (shared by serve and pointclouds sync). Only they are read
// from the environment (GARDEND_<FLAG>) and from the config file. Everything else,
// one-shot switches above all (restore --force, inspect --json, spatial-demo --addr),
// comes from the command line alone: an exported variable meant for serve must never
// change what another command does.
//
// A value is taken from the first of: the command line, the environment, the config
// file, the flag's default.
const configAnnotation = "gardend/config"

// ConfigEnv names the config file when --config is not given.
const ConfigEnv = "GARDEND_CONFIG"

// markConfig marks the named flags of f as configuration; without names, every flag
// defined in f so far.
func markConfig(f *pflag.FlagSet, names ...string) {
	if len(names) == 0 {
		f.VisitAll(func(fl *pflag.Flag) { names = append(names, fl.Name) })
	}
	for _, n := range names {
		if err := f.SetAnnotation(n, configAnnotation, []string{"true"}); err != nil {
			panic(err) // a misspelt flag name: a programming error
		}
	}
}

func isConfig(f *pflag.Flag) bool { return len(f.Annotations[configAnnotation]) > 0 }

// EnvName is the environment variable of a flag: --token-ttl → GARDEND_TOKEN_TTL.
func EnvName(flag string) string {
	return "GARDEND_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// ConfigFlags lists the configuration flags of the whole command tree, sorted.
func ConfigFlags(root *cobra.Command) []string {
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		visit := func(f *pflag.Flag) {
			if isConfig(f) {
				seen[f.Name] = true
			}
		}
		c.LocalFlags().VisitAll(visit)
		c.PersistentFlags().VisitAll(visit)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// applyConfig fills the configuration flags of cmd that the command line left unset:
// from the environment, else from the config file (--config, or GARDEND_CONFIG).
func applyConfig(cmd *cobra.Command, g *globalOptions) error {
	g.configFile, _ = cmd.Flags().GetString("config")
	if !cmd.Flags().Changed("config") {
		g.configFile = os.Getenv(ConfigEnv)
	}
	var file map[string]any
	if g.configFile != "" {
		var err error
		if file, err = loadConfigFile(g.configFile, ConfigFlags(cmd.Root())); err != nil {
			return err
		}
	}
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || !isConfig(f) {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if err := cmd.Flags().Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err))
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			if err := setFromFile(cmd.Flags(), f, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", g.configFile, f.Name, err))
			}
		}
	})
	return errors.Join(errs...)
}

// loadConfigFile reads a TOML file of flag = value lines. A name that is no
// configuration flag of any command is an error (a typo must not be ignored); one
// that belongs to another command is skipped by applyConfig.
func loadConfigFile(path string, known []string) (map[string]any, error) {
	m := map[string]any{}
	if _, err := toml.DecodeFile(path, &m); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("config file %s: line %d: %s", path, pe.Position.Line, pe.Message)
		}
		return nil, fmt.Errorf("config file: %w", err)
	}
	for k, v := range m {
		if !slices.Contains(known, k) {
			return nil, fmt.Errorf("config file %s: unknown setting %q; settings are the names of the configuration flags: %s", path, k, strings.Join(known, ", "))
		}
		if _, ok := v.(map[string]any); ok {
			return nil, fmt.Errorf("config file %s: %s is a table; write %s = value", path, k, k)
		}
	}
	return m, nil
}

// setFromFile sets f from a TOML value: a string, number or boolean as on the command
// line, an array as the list flags' items.
func setFromFile(fs *pflag.FlagSet, f *pflag.Flag, v any) error {
	if list, ok := v.([]any); ok {
		sv, ok := f.Value.(pflag.SliceValue)
		if !ok {
			return errors.New("takes one value, not a list")
		}
		items := make([]string, len(list))
		for i, x := range list {
			s, err := scalar(x)
			if err != nil {
				return err
			}
			items[i] = s
		}
		if err := sv.Replace(items); err != nil {
			return err
		}
		f.Changed = true
		return nil
	}
	s, err := scalar(v)
	if err != nil {
		return err
	}
	return fs.Set(f.Name, s)
}

func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("unsupported value %v (%T): use a string, number, boolean or list", v, v)
}
