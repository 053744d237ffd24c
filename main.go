// Command gardend is the garden management service; see README.md.
package main

import (
	"os"

	"github.com/gardend/gardend/cli"
)

func main() {
	if err := cli.NewRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
